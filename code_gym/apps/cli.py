"""The `code-gym` command."""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import credit
from code_gym import languages
from code_gym.sandbox import ISOLATION_KINDS
from code_gym.sandbox.images import DEFAULT_IMAGE
from code_gym.util.table import format_table
from code_gym.tasks.task import TaskError, bundled_tasks, load_task_dir


class UsageError(Exception):
    """Bad input that argparse cannot see (an estimator option that one of the chosen estimators
    refuses): printed as argparse prints its own errors, without a traceback."""


def _at_least(kind: type, low: float, strict: bool = False):
    """An argparse type: a `kind` >= `low` (> `low` when `strict`), so a bad value is refused before
    any work starts."""
    def parse(text: str):
        value = kind(text)  # a ValueError here: argparse says "invalid int value: 'x'"
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


non_negative_int = _at_least(int, 0)
positive_int = _at_least(int, 1)
group_size_int = _at_least(int, 2)  # group-relative credit needs a group
non_negative_float = _at_least(float, 0.0)
positive_float = _at_least(float, 0.0, strict=True)


def _tasks(paths: list[str] | None):
    if not paths:
        return bundled_tasks()
    from code_gym.tasks.loaders import load_dataset

    out = []
    for p in paths:
        if p == "bundled":
            out += bundled_tasks()
        else:
            out += load_dataset(p) or load_task_dir(Path(p))
    return out


def _check_row(env, responses: list[str], task) -> dict:
    """Play fixed responses then submit; returns the table row data."""
    from code_gym.env.episode import Scripted, run_episode

    started = time.monotonic()
    result = run_episode(env, Scripted(responses), task)
    info = result.info
    return {"steps": result.steps, "reward": result.last_reward, "resolved": result.resolved,
            "tests": f"{info.get('tests_passed', 0)}/{info.get('tests_total', 0)}",
            "time": time.monotonic() - started}


def cmd_check(args) -> int:
    from code_gym.env.environment import CodeRepoEnv
    from code_gym.actions.replay import hermes, patch_to_calls

    tasks = _tasks(args.tasks)
    env = CodeRepoEnv(tasks=tasks, isolation=args.isolation)
    rows, failures = [], 0
    try:
        for i, task in enumerate(tasks, 1):
            print(f"[{i}/{len(tasks)}] {task.id}", file=sys.stderr, flush=True)
            reference = [hermes(patch_to_calls(task.reference_patch, task.repo), "Applying the fix.")]
            for label, responses in (("reference", reference), ("empty", [])):
                row = _check_row(env, responses, task)
                bad = (label == "reference" and not row["resolved"]) or (label == "empty" and row["reward"] >= 1.0)
                failures += bad
                rows.append([task.id, label, row["steps"], row["reward"], row["tests"],
                             "yes" if row["resolved"] else "no", f"{row['time']:.2f}s"])
    finally:
        env.close()
    print(format_table(["task", "submission", "steps", "reward", "tests", "resolved", "time"], rows))
    print(f"\n{len(tasks)} tasks; sandbox: {env.isolation}; "
          f"{'all references resolve and empty submissions fail' if not failures else f'{failures} unexpected results'}")
    return 1 if failures else 0


def cmd_demo(args) -> int:
    import credit
    from code_gym.apps.demo import run_demo, summary, write_report
    from code_gym.apps.report import ESTIMATORS

    tasks = _tasks(args.tasks)
    demo = run_demo(tasks, group_size=args.group_size, variants=args.variants, seed=args.seed,
                    estimators=args.estimator or ESTIMATORS, isolation=args.isolation, progress=True)
    out = Path(args.out)
    report = write_report(demo, out / "report.html")
    credit.dump_jsonl([e.trajectory for e in demo.episodes], out / "rollouts.jsonl")
    header, rows = summary(demo)
    print(format_table(header, rows))
    print(f"\n{len(demo.episodes)} episodes of the built-in policy on {len(tasks)} tasks in {demo.seconds:.0f}s "
          f"({demo.grades_run} test runs, {demo.grades_cached} grades from the cache)\n"
          f"report:       {report}\ntrajectories: {out / 'rollouts.jsonl'} (credit.load_jsonl)")
    return 0


_PYTHON_LITERALS = {"None": None, "True": True, "False": False}


def _estimator_options(pairs: list[str], estimators: list[str]) -> dict:
    """key=value pairs; a value is None, True or False as Python spells them, else JSON when it
    parses (1, 0.5, true, null, ["file", "hunk"]), else a string. Every option is checked against
    every estimator in `estimators` here, so a typo fails before the first rollout, not after it."""
    import json

    from code_gym.apps.train import check_estimator_options

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option takes key=value (e.g. baseline=contrast), got {pair!r}")
        if value in _PYTHON_LITERALS:
            options[key] = _PYTHON_LITERALS[value]
            continue
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    try:
        for name in estimators:
            check_estimator_options(name, options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return options


def _train_tiny_lm(args) -> int:
    try:
        from code_gym.apps.tiny_lm import TinyLMConfig, TinyLMTrainer, write_outputs
    except ImportError as err:
        raise SystemExit(f"code-gym train --policy tiny-lm needs torch, transformers and tokenizers ({err}): "
                         "pip install 'code-gym[tiny-lm]' (torch==2.13.0 is the CPU build)") from None
    from code_gym.grading.grade import GradeCache

    options = _estimator_options(args.option, args.estimator)
    tasks = _tasks(args.tasks)
    cache, runs, trainers, rows = GradeCache(), {}, {}, []
    lr = args.lr if args.lr != 2.0 else TinyLMConfig.lr  # 2.0 is the branch policy's default step size
    for task in tasks:
        for name in args.estimator:
            config = TinyLMConfig(estimator=name, options=options, updates=args.updates,
                                  group_size=args.group_size or TinyLMConfig.group_size,
                                  lr=lr, variants=args.variants, seed=args.seed, regions_per_step=args.regions_per_step,
                                  **({} if args.warm_start_steps is None else {"sft_steps": args.warm_start_steps}))
            trainer = TinyLMTrainer(task, config, grade_cache=cache, isolation=args.isolation)
            label = f"{name}-{task.id}" if len(tasks) > 1 else name
            try:
                history = runs[label] = trainer.run(progress=True)
            finally:
                trainer.close()
            trainers[label] = trainer
            rows.append([label, f"{trainer.parameters / 1e6:.2f}M", f"{trainer.sft_losses[0]:.2f} -> "
                         f"{trainer.sft_losses[-1]:.2f}", f"{history[-1].success_rate:.2f}", trainer.episodes,
                         f"{history[-1].seconds:.0f}s"])
    write_outputs(runs, trainers, args.out)
    print(format_table(["run", "parameters", "warm-start loss", "last success rate", "episodes", "time"], rows))
    print(f"\ncurves: {Path(args.out) / 'curves.csv'}, {Path(args.out) / 'curves.png'}; models: {args.out}/tiny-lm-*/")
    return 0


def cmd_train(args) -> int:
    import json

    if args.policy == "tiny-lm":
        return _train_tiny_lm(args)
    if args.group_size is None:  # the branch policy's default
        args.group_size = 8

    from code_gym.apps.train import TrainConfig, Trainer, updates_to_reach, write_curves
    from code_gym.grading.grade import GradeCache

    options = _estimator_options(args.option, args.estimator)
    tasks = _tasks(args.tasks)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cache, decisions, runs, rows = GradeCache(), None, {}, []
    for name in args.estimator:
        config = TrainConfig(estimator=name, options=options, updates=args.updates, group_size=args.group_size,
                             lr=args.lr, variants=args.variants, seed=args.seed,
                             regions_per_step=args.regions_per_step)
        trainer = Trainer(tasks, config, grade_cache=cache, isolation=args.isolation, decisions=decisions,
                          progress=True)
        decisions = trainer.decisions  # built and verified once, shared by the estimators
        try:
            history = runs[name] = trainer.run(progress=True)
        finally:
            trainer.close()
        (out / f"policy-{name}.json").write_text(json.dumps(trainer.policy.state(), indent=1))
        reach = updates_to_reach(history, 0.9)
        rows.append([name, f"{history[0].success_probability:.3f}", f"{history[-1].success_probability:.3f}",
                     reach if reach is not None else f">{args.updates}", trainer.episodes,
                     f"{history[-1].seconds:.0f}s"])
        for note in trainer.dropped:
            print(f"dropped: {note}", file=sys.stderr)
    write_curves(runs, out / "curves.csv", out / "curves.png")
    print(format_table(["estimator", "P(resolve) start", "end", "updates to 0.9", "episodes", "time"], rows))
    print(f"\n{len(tasks)} tasks, G={args.group_size}; {cache.misses} test runs, {cache.hits} grades from the cache\n"
          f"curves: {out / 'curves.csv'}, {out / 'curves.png'}; policies: {out}/policy-*.json")
    return 0


def _count(n: int, noun: str, nouns: str = "") -> str:
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def _chat_client(args):
    """The model client the served-model options describe; a bad option (a tokenizer path that is
    not one, a context limit no reply fits) is a UsageError before any request."""
    from code_gym.apps.client import ChatClient, ClientConfig

    config = ClientConfig(base_url=args.base_url, model=args.model, api_key=args.api_key or os.environ.get("OPENAI_API_KEY"),
                          temperature=args.temperature, max_tokens=args.max_tokens, timeout=args.timeout,
                          retries=args.retries, tokenizer=args.tokenizer, context_limit=args.context_limit,
                          context_strategy=args.context_strategy)
    try:
        return ChatClient(config)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _context_line(outcomes) -> str:
    """What the model's context made the client do, for the closing line ("" when nothing)."""
    cut = sum(o.context_cut for o in outcomes)
    truncated = sum(any(not e.ended for e in o.context_events) for o in outcomes if o.trajectory is not None)
    parts = ([f"{cut} cut by the model's context limit (graded as if submitted)"] if cut else []) + (
        [f"{truncated} with older tool results elided to fit the model's context"] if truncated else [])
    return "".join(f"; {p}" for p in parts)


def cmd_rollout(args) -> int:
    from code_gym.apps.client import Interrupt, rollout

    tasks = _tasks(args.tasks)
    client = _chat_client(args)
    interrupt = Interrupt()  # Ctrl-C: finish the running episodes and write them; twice: abandon them
    try:
        with interrupt.on_sigint():
            outcomes = rollout(tasks, client, Path(args.out), episodes_per_task=args.episodes,
                               concurrency=args.concurrency, max_steps=args.max_steps, isolation=args.isolation,
                               progress=True, interrupt=interrupt)
    finally:
        client.close()
    rows = []
    for task in tasks:
        mine = [o for o in outcomes if o.task_id == task.id]
        done = [o for o in mine if o.trajectory is not None]
        rows.append([task.id, len(mine), sum(o.resolved for o in done),
                     f"{sum(o.trajectory.reward for o in done) / len(done):.2f}" if done else "-",
                     f"{sum(o.steps for o in done) / len(done):.1f}" if done else "-",
                     sum(o.context_cut for o in done), len(mine) - len(done)])
    print(format_table(["task", "episodes", "resolved", "mean reward", "mean steps", "context cut", "not written"],
                       rows))
    failed = [o for o in outcomes if o.error and not o.abandoned]
    for o in failed[:3]:
        print(f"failed ({o.task_id}): {o.error}", file=sys.stderr)
    written = sum(o.trajectory is not None for o in outcomes)
    print(f"\n{_count(written, 'trajectory', 'trajectories') if written else 'no trajectories'} -> {args.out}"
          + (" (credit.load_jsonl)" if written else " (not written: an existing file is left as it was)")
          + f"; {_count(client.retried, 'request')} retried; {_count(len(failed), 'episode')} failed"
          + _context_line(outcomes))
    if interrupt.stopping:
        planned, abandoned = len(tasks) * args.episodes, sum(o.abandoned for o in outcomes)
        print(f"interrupted (Ctrl-C): {len(outcomes) - abandoned} of {_count(planned, 'episode')} played"
              + (f", {abandoned} abandoned" if abandoned else "") + f", {planned - len(outcomes)} never started")
        return 130
    return 1 if failed and len(failed) == len(outcomes) else 0


def cmd_eval(args) -> int:
    from code_gym.apps.client import Interrupt, rollout
    from code_gym.apps.evaluate import TRAJECTORIES, headline, read_records, score, table, write_summary
    from code_gym.apps.records import finished, recorded_models, records_path

    ks = sorted(set(args.k or (1, args.samples)))
    if ks[-1] > args.samples:
        raise UsageError(f"-k {ks[-1]} needs at least that many --samples (got {args.samples}): pass@k draws k of "
                         "a task's samples")
    trajectories = Path(args.out) / TRAJECTORIES
    others = recorded_models(trajectories) - {args.model}
    if others:
        raise UsageError(f"{args.out} holds an evaluation of {', '.join(sorted(others))}: pass another --out for "
                         f"{args.model!r} (a run resumes the results of its own model only)")
    tasks = _tasks(args.tasks)
    done = finished(trajectories)
    skipped = sum((t.id, k) in done for t in tasks for k in range(args.samples))
    client = _chat_client(args)
    interrupt = Interrupt()  # Ctrl-C: finish the running episodes and write them; twice: abandon them
    started = time.monotonic()
    try:
        with interrupt.on_sigint():
            outcomes = rollout(tasks, client, trajectories, episodes_per_task=args.samples,
                               concurrency=args.concurrency, max_steps=args.max_steps, isolation=args.isolation,
                               progress=True, interrupt=interrupt, records=True, resume=True)
    finally:
        client.close()
    summary = score(read_records(Path(args.out)), [t.id for t in tasks], args.samples, ks, args.model)
    print(format_table(*table(summary)))
    failed = [o for o in outcomes if o.error and not o.abandoned]
    for o in failed[:3]:
        print(f"failed ({o.task_id}, sample {o.sample}): {o.error}", file=sys.stderr)
    print(f"\n{headline(summary)}\nthis run: {_count(len(outcomes), 'episode')} played in "
          f"{time.monotonic() - started:.1f}s, {skipped} found finished in {args.out}; "
          f"{_count(client.retried, 'request')} retried; {_count(len(failed), 'episode')} failed"
          + _context_line(outcomes))
    print(f"trajectories: {trajectories} (credit.load_jsonl); records: {records_path(trajectories)}; "
          f"summary: {write_summary(summary, Path(args.out))}")
    if interrupt.stopping:
        return 130
    return 1 if failed and len(failed) == len(outcomes) else 0


def _rollouts(path: str):
    """A trajectories file and its episode records; a file that cannot be read is a UsageError."""
    from code_gym.apps.records import load_rollouts

    try:
        return load_rollouts(path)
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None


def cmd_export_sft(args) -> int:
    from code_gym.apps.export import SftFilter, write_sft

    rollouts = _rollouts(args.rollouts)
    if args.pass_band and not 0.0 <= args.pass_band[0] <= args.pass_band[1] <= 1.0:
        raise UsageError(f"--pass-band takes LOW HIGH with 0 <= LOW <= HIGH <= 1, got {args.pass_band}")
    keep = SftFilter(args.resolved, args.min_reward, tuple(args.pass_band) if args.pass_band else None)
    try:
        count = write_sft(rollouts, keep, Path(args.out))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"{count} of {len(rollouts.trajectories)} episodes -> {args.out} (chat messages with tool calls and a "
          "`tools` column: tokenizer.apply_chat_template(row['messages'], tools=row['tools']), or TRL's SFTTrainer)")
    return 0 if count else 1


def cmd_export_predictions(args) -> int:
    from code_gym.apps.export import predictions, write_predictions

    rollouts = _rollouts(args.rollouts)
    models = {r.model for r in rollouts.records or ()} - {""}
    model = args.model_name or (models.pop() if len(models) == 1 else None)
    if model is None:
        raise UsageError("name the model for the harness (--model-name NAME): the rollouts' records name "
                         + (f"several ({', '.join(sorted(models))})" if models else "none"))
    try:
        found = predictions(rollouts, _tasks(args.tasks), model, args.sample)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_predictions(found, Path(args.out))
    print(f"{len(found.rows)} predictions -> {args.out} ({found.empty} with an empty patch)"
          + (f"; no episode with sample {args.sample} for {len(found.missing)} tasks: {', '.join(found.missing[:5])}"
             if found.missing else "")
          + f"\nthe SWE-bench harness: python -m swebench.harness.run_evaluation --predictions_path {args.out} ...")
    return 0 if found.rows else 1


def cmd_report(args) -> int:
    from code_gym.apps.report import ESTIMATORS, credit_report, write_rollouts_report

    estimators = args.estimator or list(ESTIMATORS)
    options = _estimator_options(args.option, estimators)
    rollouts = _rollouts(args.rollouts)
    report = credit_report(rollouts, estimators, options)
    index = write_rollouts_report(report, Path(args.out), args.per_page)
    print(f"{len(report.trajectories)} episodes of {len(report.tasks)} tasks; credit: {', '.join(estimators)}"
          + (f"; {report.display_tokens} steps without token offsets coloured over words" if report.display_tokens
             else "") + f"\nreport: {index}")
    return 0


def cmd_tasks_list(args) -> int:
    tasks = _tasks(args.paths)
    rows = [[t.id, t.kind, len(t.visible_tests), len(t.hidden_tests), t.statement.splitlines()[0][:70]] for t in tasks]
    print(format_table(["task", "kind", "visible", "hidden", "statement"], rows))
    return 0


def cmd_tasks_validate(args) -> int:
    from code_gym.grading.gates import record_test_lists, validate_task

    tasks = _tasks(args.paths)
    started = time.monotonic()
    verdicts = []
    with ThreadPoolExecutor(max(1, args.workers)) as pool:  # the gates' test runs are sandbox processes
        for i, v in enumerate(pool.map(lambda t: validate_task(t, runs=args.runs, isolation=args.isolation), tasks), 1):
            print(f"[{i}/{len(tasks)}] validated {v.task_id}", file=sys.stderr, flush=True)
            verdicts.append(v)
    if args.record:
        by_id = {t.id: t for t in tasks}
        recorded = [v.task_id for v in verdicts if record_test_lists(by_id[v.task_id], v)]
        print(f"recorded FAIL_TO_PASS / PASS_TO_PASS in {len(recorded)} manifests"
              + (f": {', '.join(recorded)}" if recorded else ""), file=sys.stderr)
        stored = [probes.record(by_id[v.task_id], args.isolation) for v in verdicts
                  if v.ok and (probes := languages.of(by_id[v.task_id]).probes) is not None]
        print(f"recorded behavioural probes (probes.json) in {len(stored)} task folders", file=sys.stderr)
    rows = [[v.task_id, v.kind, v.files, v.hunks, f"{v.untouched_failing}/{v.untouched_total}",
             f"{v.reference_passes}/{args.runs}", f"{v.probes} ({len(v.probes_dropped)} dropped)",
             _fix_probe_cell(v), "ok" if v.ok else "; ".join(v.problems)] for v in verdicts]
    print(format_table(["task", "kind", "files", "hunks", "hidden failing untouched", "reference passes", "probes",
                        "fix / regression probes", "verdict"], rows))
    for v in verdicts:
        for reason in v.probes_dropped if args.verbose else v.probes_dropped[:0 if v.probes else 3]:
            print(f"  {v.task_id}: probe dropped: {reason}")
        if args.verbose:
            for test, (fix, regression) in v.probe_census.items():
                print(f"  {v.task_id}: {test}: {fix} fix, {regression} regression probes")
        for test, why in v.without_fix_probes.items():
            print(f"  {v.task_id}: FLAG no fix probe for FAIL_TO_PASS {test} (its credit is withheld): {why}")
    bad = sum(not v.ok for v in verdicts)
    references = sum(v.reference_passes == args.runs for v in verdicts)
    untouched = sum(v.untouched_total > 0 and v.untouched_failing == 0 for v in verdicts)
    checked = [v for v in verdicts if v.probes_checked]
    flagged = sum(len(v.without_fix_probes) for v in checked)
    f2p = sum(len(v.census_fail_to_pass) for v in checked)
    print(f"\n{len(tasks) - bad}/{len(tasks)} tasks pass every gate; references pass {references}/{len(tasks)}; "
          f"untouched repos pass their hidden tests {untouched}/{len(tasks)}; {time.monotonic() - started:.1f}s")
    if checked:
        print(f"fix probes: {sum(not v.without_fix_probes for v in checked)}/{len(checked)} tasks have them for every "
              f"FAIL_TO_PASS test, {sum(v.fix_probes > 0 for v in checked)}/{len(checked)} for some; "
              f"{flagged}/{f2p} FAIL_TO_PASS tests flagged without (their credit is withheld)")
    return 1 if bad else 0


def _fix_probe_cell(verdict) -> str:
    """`fix/regression` probes over the task's graded tests, and how many FAIL_TO_PASS tests have none."""
    if not verdict.probes_checked:
        return "-"
    fix = sum(f for f, _ in verdict.probe_census.values())
    regression = sum(r for _, r in verdict.probe_census.values())
    flagged = len(verdict.without_fix_probes)
    return f"{fix}/{regression}" + (f" ({flagged} FAIL_TO_PASS without fix)" if flagged else "")


def _source_language(sources: list[str]) -> str:
    """The language whose builder claims every source by its name (a builder's optional
    `claims(source)`: Debian's golang-*-dev and librust-*-dev package names, say); python when
    none does. Sources of two languages are a usage error: one build, one language."""
    claimed = {}
    for name in languages.NAMES:
        claims = getattr(languages.get(name).builder, "claims", None)
        for source in sources if claims is not None else ():
            if claims(source):
                claimed.setdefault(source, set()).add(name)
    found = {n for names in claimed.values() for n in names}
    if len(found) > 1:
        raise UsageError(f"the sources name projects of {', '.join(sorted(found))}: build one language at a time "
                         "(or pass --language)")
    if found and len(claimed) < len(sources):
        unclaimed = next(s for s in sources if s not in claimed)
        raise UsageError(f"{unclaimed!r} is not a {next(iter(found))} source like the others: build one language at "
                         "a time, or pass --language")
    return found.pop() if found else "python"


def cmd_tasks_build(args) -> int:
    args.language = args.language or _source_language(args.source)
    builder = languages.get(args.language).builder
    given = {k: v for k, v in (("installer", args.installer), ("sdists", args.sdists or None)) if v is not None}
    unknown = sorted(set(given) - {f.name for f in dataclasses.fields(builder.EnvOptions)})
    if unknown:
        print(f"--{unknown[0]} is not an option of the {args.language} builder's environments", file=sys.stderr)
        return 2
    chosen = dict(timeout=args.timeout, reruns=args.reruns, mutations_per_function=args.mutations,
                  remove_bodies=not args.no_remove_body, max_candidates=args.max_candidates, seed=args.seed,
                  workers=args.workers, isolation=args.isolation, multi_ratio=args.multi_ratio,
                  **({} if args.give_up_after is None else {"give_up_after": args.give_up_after}),
                  environment=builder.EnvOptions(**given))
    # each builder takes the options it has (Dafny's makes no mutations nor multi-region tasks)
    fields = {f.name for f in dataclasses.fields(builder.BuildOptions)}
    options = builder.BuildOptions(**{k: v for k, v in chosen.items() if k in fields})
    sources = builder.expand_sources(args.source)
    if args.projects is not None:
        sources = sources[: args.projects]
    if sources == args.source and len(sources) == 1 and Path(sources[0]).exists() and not (args.ray or args.max_minutes):
        report = builder.build_tasks(sources[0], args.out, options)  # one local project: its tasks and manifest in --out
        print(report.summary())
        return 0 if report.tasks else 1
    batch = builder.build_many(sources, args.out, options, ray_address=args.ray, max_minutes=args.max_minutes,
                       retry_failed=args.retry_failed)
    print(batch.summary())
    for note in filter(None, map(builder.read_as_folder_of_projects, args.source)):
        print(f"note: {note}; to build it as one project, give it one of those files")
    return 0 if batch.tasks else 1


def cmd_tasks_revalidate(args) -> int:
    from code_gym.tasks.task import load_task_dir

    tasks = load_task_dir(args.out)
    done = []

    def progress(result) -> None:
        done.append(result)
        print(f"[{len(done)}/{args.sample or len(tasks)}] {result.task_id}: {result.gate or 'ok'}",
              file=sys.stderr, flush=True)

    report = languages.get(args.language).builder.revalidate(tasks, runs=args.runs, isolation=args.isolation, workers=args.workers,
                        sample=args.sample, seed=args.seed, progress=progress)
    print(report.summary())
    return 0 if report.fraction == 1.0 else 1


def cmd_env_build(args) -> int:
    environments = languages.get(args.language).environments
    found = environments.project_requirements(args.source)
    rows = [[r, ", ".join(found.sources[r])] for r in found.requirements]
    print(format_table(["requirement", "declared in"], rows) if rows else f"{args.source} declares no requirements")
    for line in found.skipped:
        print(f"skipped: {line}")
    if args.dry_run:
        return 0
    try:
        _, environment = environments.project_environment(args.source, args.python, args.installer, sdists=args.sdists)
    except environments.EnvironmentBuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if environment is None:
        print("no environment needed: the tests run with code-gym's own interpreter")
        return 0
    state = "found in the cache" if environment.cached else f"built in {environment.build_seconds:.1f}s"
    print(f"\nenvironment {environment.spec.key} ({len(environment.installed)} distributions, {state}): "
          f"{environment.prefix}\npytest plugins: {', '.join(environment.pytest_plugins) or 'none'}")
    return 0


def cmd_image_build(args) -> int:
    from code_gym.sandbox.images import build_image

    packages = tuple(p for name in languages.NAMES for p in languages.get(name).image_packages)
    build_image(args.tag, packages, suite=args.suite, mirror=args.mirror, rebuild=args.rebuild)
    return 0


def cmd_sandbox_reap(args) -> int:
    from code_gym.sandbox.reaper import reap_all

    print(reap_all())
    return 0


def cmd_openrlhf_dataset(args) -> int:
    from code_gym.apps.dataset import write_dataset

    count = write_dataset(_tasks(args.tasks), args.out)
    print(f"{count} prompts -> {args.out} (OpenRLHF: --data.prompt_dataset {args.out} --data.input_key input "
          "--data.label_key label)")
    return 0


def cmd_verl_dataset(args) -> int:
    from code_gym.apps.dataset import verl_rows, write_dataset

    count = write_dataset(_tasks(args.tasks), args.out, verl_rows)
    print(f"{count} prompts -> {args.out} (verl: data.train_files={args.out})")
    return 0


def _served_model_options(parser: argparse.ArgumentParser) -> None:
    """The options of the commands that play a served model (rollout, eval)."""
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", required=True, help="the served model name")
    parser.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY, if set)")
    parser.add_argument("--tasks", nargs="*", help="task folders or folders of tasks ('bundled' or none: the bundled "
                        "suite), 'humaneval', or a SWE-bench-style .jsonl file")
    parser.add_argument("--concurrency", type=positive_int, default=4, help="episodes at a time (>= 1; default 4)")
    parser.add_argument("--max-steps", type=positive_int, default=30, help="steps per episode (>= 1; default 30)")
    parser.add_argument("--temperature", type=non_negative_float, default=1.0)
    parser.add_argument("--max-tokens", type=positive_int, default=4096, help="per response (default 4096)")
    parser.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per request (default 300)")
    parser.add_argument("--retries", type=non_negative_int, default=3, help="retries of a failed request (default 3)")
    parser.add_argument("--tokenizer", help="the served model's tokenizer.json (or its folder): records the tokens of "
                        "replies that come without logprobs or with tool calls the client cannot place in the sampled "
                        "text (ids, no logprobs), and counts the prompt's tokens for --context-limit; without it such "
                        "steps have no tokens")
    parser.add_argument("--context-limit", type=positive_int, metavar="TOKENS",
                        help="the model's context length (prompt + reply); the client keeps each request within it "
                        "by --context-strategy and records what it did (default: none, only the server's refusal)")
    parser.add_argument("--context-strategy", choices=["truncate", "submit"], default="truncate",
                        help="when the conversation outgrows --context-limit: elide the oldest tool results "
                        "(truncate, the default; submit when that is not enough) or submit for the agent and grade")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="code-gym", description="Repository-editing RL environments and DiDPO credit.")
    parser.add_argument("--isolation", default="auto",
                        choices=list(ISOLATION_KINDS),
                        help="sandbox for agent commands and tests ('none' runs them unisolated: explicit opt-in)")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="the main job: rollouts of the built-in policy on every task, GRPO/GiGPO/DiDPO "
                          "credit on them, a summary table and an HTML report")
    demo.add_argument("--tasks", nargs="*", help="task folders (default: the bundled suite)")
    demo.add_argument("-G", "--group-size", type=group_size_int, default=8, help="episodes per task (>= 2; default 8)")
    demo.add_argument("--variants", type=non_negative_int, default=2,
                      help="wrong variants per region, besides untouched (>= 0; default 2)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--estimator", nargs="+", choices=list(credit.ESTIMATORS), default=None,
                      help="estimators whose credit the report compares (default: grpo and every step-level one: "
                      + ", ".join(credit.STEP_LEVEL) + "; DiDPO's presets are in docs/credit.md)")
    demo.add_argument("--out", default="out/demo", help="folder for report.html and rollouts.jsonl (default: out/demo)")
    demo.set_defaults(func=cmd_demo)
    check = sub.add_parser("check", help="self-test: every task's reference solution (as tool calls) and an empty "
                           "submission through the real env")
    check.add_argument("--tasks", nargs="*", help="task folders (default: the bundled suite)")
    check.set_defaults(func=cmd_check)
    train = sub.add_parser("train", help="train the built-in policy with a credit estimator on the real env and tests; "
                           "saves learning curves (CSV, PNG)")
    train.add_argument("--estimator", nargs="+", default=["didpo"], choices=list(credit.ESTIMATORS),
                       help="one or more estimators, each trained from scratch (default: didpo); DiDPO's presets "
                       "(docs/credit.md): " + ", ".join(credit.PRESETS) + "; didpo-split is the rule measured best")
    train.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                       help="estimator option, checked against every --estimator before training, e.g. --option "
                       "baseline=contrast --option max_anchors=None (values: None, True, False, numbers, JSON, "
                       "else strings)")
    train.add_argument("--tasks", nargs="*", help="task folders (default: the bundled suite)")
    train.add_argument("--updates", type=non_negative_int, default=20, help="policy updates (default 20)")
    train.add_argument("-G", "--group-size", type=group_size_int, default=None,
                       help="episodes per task per update (>= 2; default 8, tiny-lm TinyLMConfig.group_size, 32)")
    train.add_argument("--lr", type=positive_float, default=2.0, help="step size on the logits (> 0; default 2.0)")
    train.add_argument("--variants", type=non_negative_int, default=2,
                       help="wrong variants per region, besides untouched (>= 0; default 2)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--regions-per-step", type=non_negative_int, default=1, metavar="K",
                       help="decisions packed into one response, K tool calls in one step (0: every region of the "
                       "task in one step; default 1)")
    train.add_argument("--policy", choices=["branch", "tiny-lm"], default="branch",
                       help="branch: the built-in softmax over candidate edits (default); tiny-lm: a small GPT-2-style "
                       "transformer that samples every token, trained with a clipped policy gradient (one model per task; "
                       "--lr is then its optimizer's step, default TinyLMConfig.lr: SGD 0.03)")
    train.add_argument("--warm-start-steps", type=non_negative_int, default=None,
                       help="tiny-lm: supervised steps on the candidate responses before RL (default "
                       "TinyLMConfig.sft_steps, 400)")
    train.add_argument("--out", default="out/train", help="folder for curves.csv, curves.png, policy-*.json")
    train.set_defaults(func=cmd_train)
    roll = sub.add_parser("rollout", help="roll out a model served by an OpenAI-compatible server (e.g. vllm serve); "
                          "trajectories as JSONL")
    _served_model_options(roll)
    roll.add_argument("--episodes", type=positive_int, default=1, help="episodes per task (>= 1; default 1)")
    roll.add_argument("--out", default="out/rollouts.jsonl", help="JSONL trajectories, replaced when the first episode "
                      "finishes (default: out/rollouts.jsonl)")
    roll.set_defaults(func=cmd_rollout)
    evaluate = sub.add_parser("eval", help="evaluate a served model: n samples per task, pass@k (unbiased estimator), "
                              "resolve rate, rewards, tokens, time; resumable")
    _served_model_options(evaluate)
    evaluate.add_argument("-n", "--samples", type=positive_int, default=1, help="samples per task (>= 1; default 1)")
    evaluate.add_argument("-k", type=positive_int, nargs="+", help="the k of pass@k, each <= --samples (default: 1 "
                          "and --samples)")
    evaluate.add_argument("--out", default="out/eval", help="folder for rollouts.jsonl, rollouts.episodes.jsonl and "
                          "summary.json; a run there plays only the (task, sample) pairs it lacks (default: out/eval)")
    evaluate.set_defaults(func=cmd_eval)
    report = sub.add_parser("report", help="the HTML credit report for any rollouts (a model's, the built-in "
                            "policy's, a trainer's dump): index and paginated task pages")
    report.add_argument("rollouts", help="a trajectories file (code-gym rollout / eval / demo, credit.dump_jsonl)")
    report.add_argument("--estimator", nargs="+", choices=list(credit.ESTIMATORS), default=None,
                        help="estimators whose credit colours the lines (default: grpo and every step-level one: "
                        + ", ".join(credit.STEP_LEVEL) + ")")
    report.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="estimator option, checked against every --estimator (as for train)")
    report.add_argument("--per-page", type=positive_int, default=50, help="episodes on one task page (default 50)")
    report.add_argument("--out", default="out/report", help="folder for index.html and the task pages "
                        "(default: out/report)")
    report.set_defaults(func=cmd_report)
    export = sub.add_parser("export", help="rollouts out to other tools: fine-tuning data, SWE-bench predictions"
                            ).add_subparsers(dest="export_command", required=True)
    sft = export.add_parser("sft", help="trajectories -> chat-message JSON lines with tool calls and the tool schemas, "
                            "for Hugging Face chat templates and TRL's SFTTrainer (rejection-sampling fine-tuning)")
    sft.add_argument("rollouts", help="a trajectories file (code-gym rollout / eval, credit.dump_jsonl)")
    sft.add_argument("--out", required=True, help="the .jsonl file to write")
    sft.add_argument("--resolved", action="store_true", help="only episodes that resolved their task (needs the "
                     "episode records `code-gym eval` writes beside the trajectories)")
    sft.add_argument("--min-reward", type=float, help="only episodes with at least this outcome reward")
    sft.add_argument("--pass-band", type=float, nargs=2, metavar=("LOW", "HIGH"), help="only tasks whose share of "
                     "resolved episodes in the file lies in [LOW, HIGH] (needs episode records)")
    sft.set_defaults(func=cmd_export_sft)
    preds = export.add_parser("predictions", help="rollouts of SWE-bench-style tasks -> instance_id / model_patch / "
                              "model_name_or_path JSON lines for the official SWE-bench harness")
    preds.add_argument("rollouts", help="a trajectories file (code-gym rollout / eval)")
    preds.add_argument("--tasks", nargs="+", required=True, help="the SWE-bench-style .jsonl file (or the task "
                       "folders) the rollouts were made on: their repositories give each episode's final patch")
    preds.add_argument("--model-name", help="model_name_or_path (default: the model the episode records name)")
    preds.add_argument("--sample", type=non_negative_int, default=0, help="which of a task's episodes: its sample "
                       "number in the records, else its place among the task's episodes in the file (default 0)")
    preds.add_argument("--out", required=True, help="the .jsonl file to write")
    preds.set_defaults(func=cmd_export_predictions)
    tasks = sub.add_parser("tasks", help="list, validate or build tasks").add_subparsers(dest="tasks_command", required=True)
    lst = tasks.add_parser("list", help="list tasks")
    lst.add_argument("paths", nargs="*", help="task folders (default: the bundled suite)")
    lst.set_defaults(func=cmd_tasks_list)
    val = tasks.add_parser("validate", help="check the gates: reference passes 3x, untouched repo fails a hidden test")
    val.add_argument("paths", nargs="*", help="task folders or folders of tasks ('bundled' or none: the bundled suite), "
                     "'humaneval', or a SWE-bench-style .jsonl file")
    val.add_argument("--runs", type=positive_int, default=3, help="reference runs that must all pass (>= 1; default 3)")
    val.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1,
                     help="tasks validated in parallel (default: one per CPU)")
    val.add_argument("--record", action="store_true",
                     help="store each passing task's FAIL_TO_PASS / PASS_TO_PASS (from the untouched and reference "
                     "runs) in its task.toml when it declares none; the default reward's f2p part reads them; and its "
                     "behavioural probes in probes.json (else they are made on first use and cached)")
    val.add_argument("--verbose", action="store_true", help="list every probe that could not be made, and why")
    val.set_defaults(func=cmd_tasks_validate)
    env = sub.add_parser("env", help="per-project environments (docs/tasks.md, Environments)").add_subparsers(
        dest="env_command", required=True)
    env_build = env.add_parser("build", help="list the requirements a project's metadata declares (and where), and "
                               "build its environment (or find it in the cache)")
    env_build.add_argument("source", help="a project folder")
    env_build.add_argument("--language", default="python", choices=languages.NAMES,
                       help="the project's language (default: %(default)s)")
    env_build.add_argument("--python", default=None, help="interpreter to build on (default: code-gym's own)")
    env_build.add_argument("--installer", default="uv", choices=["uv", "pip"])
    env_build.add_argument("--dry-run", action="store_true", help="list the requirements only")
    env_build.add_argument("--sdists", action="store_true", help="build requirements that have no wheel, inside a "
                           "bubblewrap sandbox with the network (default: such a requirement is an error)")
    env_build.set_defaults(func=cmd_env_build)
    image = sub.add_parser("image", help="container images for the Docker backend").add_subparsers(
        dest="image_command", required=True)
    build = image.add_parser("build", help="build the default image offline (debootstrap from this machine's apt "
                             "mirror, then docker import) with every language's packages; reused when it has them")
    build.add_argument("--tag", default=DEFAULT_IMAGE, help="image name (default: %(default)s)")
    build.add_argument("--suite", default="bookworm", help="Debian suite (default: %(default)s)")
    build.add_argument("--mirror", help="Debian mirror URL (default: the one in /etc/apt sources)")
    build.add_argument("--rebuild", action="store_true", help="build even when the image exists")
    build.set_defaults(func=cmd_image_build)
    sandbox = sub.add_parser("sandbox", help="sandbox maintenance").add_subparsers(dest="sandbox_command", required=True)
    reap = sandbox.add_parser("reap", help="remove containers, mounts, cgroups and folders left by crashed code-gym processes")
    reap.set_defaults(func=cmd_sandbox_reap)
    openrlhf = sub.add_parser("openrlhf", help="training with OpenRLHF (docs/openrlhf.md)").add_subparsers(
        dest="openrlhf_command", required=True)
    dataset = openrlhf.add_parser("dataset", help="prompt data (JSON lines: input, label) for OpenRLHF's PPO trainer")
    dataset.add_argument("--tasks", nargs="*", help="task folders or folders of tasks ('bundled' or none: the bundled "
                         "suite), 'humaneval', or a SWE-bench-style .jsonl file")
    dataset.add_argument("--out", required=True, help="the .jsonl file to write")
    dataset.set_defaults(func=cmd_openrlhf_dataset)
    verl = sub.add_parser("verl", help="training with verl (docs/verl.md)").add_subparsers(
        dest="verl_command", required=True)
    verl_dataset = verl.add_parser("dataset", help="prompt data (JSON lines in the columns of verl's RLHFDataset) for "
                                   "verl's PPO trainer")
    verl_dataset.add_argument("--tasks", nargs="*", help="task folders or folders of tasks ('bundled' or none: the "
                              "bundled suite), 'humaneval', or a SWE-bench-style .jsonl file")
    verl_dataset.add_argument("--out", required=True, help="the .jsonl file to write (verl's data.train_files)")
    verl_dataset.set_defaults(func=cmd_verl_dataset)
    build = tasks.add_parser("build", help="make tasks from Python projects with a pytest suite (folders, sdists, "
                             "name==version specs, a folder of projects, or a file listing them)")
    build.add_argument("source", nargs="+", help="project folders, sdists (.tar.gz, .zip), name==version (the sdist "
                       "is fetched from the package index), folders of projects, or text files listing these")
    build.add_argument("--out", required=True, help="folder for the task folders and manifest.json (with several "
                       "sources also build-state.json: run the same command again to resume)")
    build.add_argument("--timeout", type=positive_float, default=60.0,
                       help="the tasks' test timeout in seconds (default 60)")
    build.add_argument("--installer", choices=["uv", "pip"],
                       help="what builds each Python project's environment (default: uv)")
    build.add_argument("--sdists", action="store_true", help="build a project's requirements that have no wheel, "
                       "inside a bubblewrap sandbox with the network (default: such a project is rejected, "
                       "naming the requirement)")
    build.add_argument("--reruns", type=positive_int, default=3,
                       help="runs of the original FAIL_TO_PASS must pass (>= 1; default 3)")
    build.add_argument("--mutations", type=non_negative_int, default=2,
                       help="bug-injection tasks tried per function (default 2)")
    build.add_argument("--no-remove-body", action="store_true", help="make no body-removal tasks")
    build.add_argument("--max-candidates", type=positive_int,
                       help="check at most this many one-region candidates per project (spread over functions)")
    build.add_argument("--give-up-after", type=non_negative_int,
                       help="stop a project once this many one-region candidates were checked and none passed "
                       "(default: BuildOptions.give_up_after, 12; 0: check every candidate)")
    build.add_argument("--multi-ratio", type=non_negative_float, default=0.6,
                       help="multi-region candidates per accepted one-region task (default 0.6; 0: none)")
    build.add_argument("--seed", type=int, default=0, help="which mutation sites are drawn (default 0)")
    build.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1,
                       help="sandbox runs at once, across all projects (default: one per CPU)")
    build.add_argument("--projects", type=positive_int, help="build only the first N sources")
    build.add_argument("--max-minutes", type=positive_float,
                       help="start no project after this many minutes (the rest stay pending for the next run)")
    build.add_argument("--retry-failed", action="store_true", help="on a resumed run, build again the projects "
                       "that failed (environment, error) before")
    build.add_argument("--ray", metavar="ADDRESS", help="build each project as a Ray task on this cluster ('auto': the "
                       "running one; 'local': a Ray instance on this machine)")
    build.add_argument("--language", choices=languages.NAMES,
                       help="the projects' language (default: the one whose builder claims the sources by name, "
                       "golang-*-dev -> go, librust-*-dev -> rust; else python)")
    build.set_defaults(func=cmd_tasks_build)
    reval = tasks.add_parser("revalidate", help="re-run every gate on a built set in fresh sandboxes; reports the "
                             "fraction that still passes and which tasks fail which gate")
    reval.add_argument("out", help="the folder `tasks build` wrote")
    reval.add_argument("--runs", type=positive_int, default=3,
                       help="reference runs that must all pass (>= 1; default 3)")
    reval.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1, help="tasks at a time")
    reval.add_argument("--sample", type=positive_int, help="re-validate a random sample of this many tasks")
    reval.add_argument("--seed", type=int, default=0, help="which tasks the sample holds")
    reval.add_argument("--language", default="python", choices=languages.NAMES,
                       help="the tasks' language (default: %(default)s)")
    reval.set_defaults(func=cmd_tasks_revalidate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"code-gym: error: {exc}", file=sys.stderr)
        return 2
    except TaskError as exc:
        print(f"code-gym: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
