"""The reward from a verifier's diagnostics (`obligations`): the weighted fraction of proof
obligations discharged, so that a partial proof earns part of the reward and a policy learns before
any of its attempts verifies.

A language whose records are proof obligations says what each one is (its adapter's optional
`obligations` capability: `kind(test_id)`; Dafny's: code_gym/languages/dafny/obligations.py):

- "specification" (weight `specification`, 2 by default): a postcondition of the given
  specification, discharged with nothing else in its member failing (else it may hold vacuously,
  after a failed `assert false`);
- "member" (weight `member`, 1): a member verified whole, the helper obligations the candidate
  wrote itself included (loop invariants, assertions, lemma preconditions, termination, bounds);
- "check" (weight `member`): the hidden restatement of the given specification.

The given specification weighs more than helper obligations because it is what the task asks: a
proof whose postconditions go through while one loop invariant is still unproven is closer than one
whose invariants verify and say nothing; weighting the given specification above helper
obligations is what the verifier-graded reward this follows asks for (issue 33), and 2:1 is this
implementation's choice (an option). Obligations the candidate adds
itself never enter the denominator: the graded ids are the task's, so padding a program with
trivial assertions earns nothing.

    value = W(FAIL_TO_PASS discharged) / W(FAIL_TO_PASS) - penalty * W(PASS_TO_PASS broken) / W(PASS_TO_PASS)

like `f2p`: the untouched program scores 0, the reference 1, a program that breaks what verified
below 0. A time-out or a solver's resource limit is an obligation not discharged. A failed run
(the verifier crashed or ran past the task's limit) scores -penalty. "Resolved" (`binary`) stays
every graded obligation discharged with the specification unchanged (the audit, which outranks
this reward). A language without the capability weighs every test 1 (`f2p` with weights).
"""
from __future__ import annotations

from dataclasses import dataclass

from code_gym import languages
from code_gym.rewards.base import Score, Submission


@dataclass(frozen=True)
class ObligationScore:
    specification: float = 2.0
    member: float = 1.0
    penalty: float = 1.0

    def __post_init__(self):
        for name in ("specification", "member", "penalty"):
            if getattr(self, name) < 0:
                raise ValueError(f"obligations '{name}' must be >= 0, got {getattr(self, name)}")

    def weight(self, kind_of, test_id: str) -> float:
        kind = kind_of(test_id) if kind_of else "member"
        return self.specification if kind == "specification" else self.member

    def __call__(self, sub: Submission) -> float | Score:
        task, result = sub.task, sub.result
        if not result.run_ok:
            return -self.penalty
        capability = getattr(languages.of(task), "obligations", None)
        kind_of = capability.kind if capability is not None else None
        credited = result.credited
        wanted = task.fail_to_pass or tuple(credited)
        weights = {t: self.weight(kind_of, t) for t in wanted}
        total = sum(weights.values())
        done = sum(w for t, w in weights.items() if credited.get(t) == "passed")
        kept = {t: self.weight(kind_of, t) for t in task.pass_to_pass} if task.fail_to_pass else {}
        kept_total = sum(kept.values())
        broken = sum(w for t, w in kept.items() if result.tests.get(t) != "passed")
        value = (done / total if total else 0.0) - self.penalty * (broken / kept_total if kept_total else 0.0)
        return Score(value, {"discharged": sum(credited.get(t) == "passed" for t in wanted), "obligations": len(wanted),
                             "weighted": round(done / total, 4) if total else 0.0})
