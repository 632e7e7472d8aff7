"""What each Dafny record is an obligation of, for the reward from diagnostics
(`code_gym.rewards.obligations`): the language-neutral reward asks `kind(test_id)` and weighs by kind.

- "specification": a postcondition of the given specification discharged (`FILE::NAME > ensures K`);
- "member": a member verified whole, every obligation in it (`FILE::NAME`): the helper obligations
  the candidate wrote (loop invariants, assertions, lemma preconditions, termination, bounds) and
  its preconditions' well-formedness, besides its postconditions;
- "check": a wrapper of the hidden specification check (`spec/...::SpecOf_NAME`, and its postconditions).
"""
from __future__ import annotations

import re

_ENSURES = re.compile(r" > ensures \d+$")


def kind(test_id: str) -> str:
    _, _, name = test_id.partition("::")
    if name.split(" > ")[0].rpartition(".")[2].startswith("SpecOf_"):
        return "check"
    if _ENSURES.search(name):
        return "specification"
    return "member"
