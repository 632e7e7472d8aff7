"""JavaScript test runs: which runner a task's `test_command` names, the command that runs the selected
test files with the grader's records on, and the runner's own report read back by test id.

Four runners (task.toml's `test_command`, options only: the grader appends the test files):
- `node --test [OPTIONS]`: node's runner with the records reporter (reporters/node.mjs) beside its
  spec output and its junit XML (the runner's report);
- `mocha [OPTIONS]`: the grader's driver (reporters/mocha.cjs) runs the project's mocha through its
  API; no report of its own;
- `jest [OPTIONS]`: jest with the records reporter (reporters/jest.cjs) and its JSON results (the
  runner's report);
- `tape [-r MODULE]`: the grader's driver (reporters/tape.cjs) runs the test files in tape's
  default harness; no report of its own.
`npx` before the runner is allowed. Test ids read `FILE::SUITE > TEST` (FILE repo-relative, the
titles of the enclosing describe blocks or parent tests, a repeated id suffixed " [2]", " [3]"...);
a file that fails to load is a collect record with the id `FILE`, and the other files still run,
so `known_ids` changes nothing here. Every run exits 0 (all passed) or 1 (something failed); a
run that cannot start its runner exits otherwise. Without CODE_GYM_REPORTERS (a run without
records) each command runs the runner alone, with its own output and report.
"""
from __future__ import annotations

import json
import posixpath
import shlex
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from code_gym.languages.base import TestRun

RUNNERS = ("node", "mocha", "jest", "tape")
ENV = "CODE_GYM_RECORDS"
FOLDER_ENV = "CODE_GYM_REPORTERS"
JUNIT = "junit.xml"  # node's report, in the results folder
JEST_JSON = "jest.json"  # jest's report, and the folder its paths are relative to
JEST_CWD = "jest-cwd"
REPORTERS = Path(__file__).resolve().parent / "reporters"  # channel.cjs and one file per runner
_FORMS = ("'node --test [OPTIONS]', 'mocha [OPTIONS]', 'jest [OPTIONS]' or 'tape [-r MODULE]', "
          "optionally after 'npx'; the grader appends the test files")


def _runner_words(test_command: str) -> tuple[str, list[str]]:
    """(the runner, the words after its program) of a test command; ValueError when it names none."""
    try:
        words = shlex.split(test_command)
    except ValueError as error:
        raise ValueError(f"test_command {test_command!r} does not parse as a shell command ({error})") from None
    if words[:1] == ["npx"]:
        words = words[1:]
    program = posixpath.basename(words[0]) if words else ""
    if program == "node" and "--test" in words[1:]:
        return "node", words[1:]
    if program in RUNNERS[1:]:
        return program, words[1:]
    raise ValueError(f"test_command {test_command!r} names no JavaScript test runner code-gym runs: use {_FORMS}")


def runner_of(test_command: str) -> str:
    """"node", "mocha", "jest" or "tape": the runner `test_command` runs."""
    return _runner_words(test_command)[0]


def _quoted(words) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _node(test_command: str, options: list[str], files: tuple[str, ...], results: str, keep_going: bool) -> TestRun:
    report = f"{results}/{JUNIT}"
    records = (f'R=(); [ -n "${{{FOLDER_ENV}:-}}" ] && R=(--test-reporter="${FOLDER_ENV}/node.mjs" '
               f"--test-reporter-destination=stderr); ")
    command = (f"{records}{test_command} --test-reporter=spec --test-reporter-destination=stdout "
               f"--test-reporter=junit --test-reporter-destination={shlex.quote(report)} "
               f'"${{R[@]}}" {_quoted(files)}')
    return TestRun(command, report)


def _driven(runner: str):
    """The command of a runner the grader drives (mocha, tape): the driver when the reporters are
    laid, the runner's own program (exit code normalised) otherwise."""
    def command(test_command: str, options: list[str], files: tuple[str, ...], results: str,
                keep_going: bool) -> TestRun:
        spec = json.dumps({"files": list(files), "args": options, "keepGoing": keep_going})
        return TestRun(f'if [ -n "${{{FOLDER_ENV}:-}}" ]; then node "${FOLDER_ENV}/{runner}.cjs" {shlex.quote(spec)}; '
                       f"else {test_command} {_quoted(files)} || exit 1; fi")
    return command


def _jest(test_command: str, options: list[str], files: tuple[str, ...], results: str, keep_going: bool) -> TestRun:
    report = f"{results}/{JEST_JSON}"
    records = f'R=(); [ -n "${{{FOLDER_ENV}:-}}" ] && R=(--reporters="${FOLDER_ENV}/jest.cjs"); '
    bail = "--bail=0 " if keep_going else ""
    command = (f"{records}pwd -P > {shlex.quote(f'{results}/{JEST_CWD}')}; {test_command} --ci --watchman=false "
               f"{bail}--json --outputFile={shlex.quote(report)} --reporters=default "
               f'"${{R[@]}}" --runTestsByPath {_quoted(files)}')
    return TestRun(command, report)


_COMMANDS = {"node": _node, "mocha": _driven("mocha"), "jest": _jest, "tape": _driven("tape")}


def test_run(test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
             canaries: bool = False) -> TestRun:
    """The command that runs the files of `selected` (files or test ids: whole files run) with
    `test_command`'s runner and the records on, writing the runner's own report under `results`.
    `canaries`: a task's bail option is turned off, so the must-fail canaries cannot end the run."""
    runner, options = _runner_words(test_command)
    files = tuple(dict.fromkeys(t.split("::", 1)[0] for t in selected))
    return _COMMANDS[runner](test_command, options, files, results, canaries)


def _outcome(case: ET.Element) -> str:
    tags = {child.tag for child in case}
    return "skipped" if "skipped" in tags else "failed" if tags & {"failure", "error"} else "passed"


def _leaves(element: ET.Element, names: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """(suite and test titles joined by " > ", outcome) of each testcase, in the report's order."""
    for child in element:
        if child.tag == "testsuite":
            yield from _leaves(child, (*names, child.get("name", "")))
        elif child.tag == "testcase":
            yield " > ".join((*names, child.get("name", ""))), _outcome(child)


def _node_outcomes(report: Path, lookup: tuple[str, ...]) -> dict[str, str]:
    """Outcomes by test id from node's junit XML, which names no file: node runs and reports the
    files in the sorted order of their paths, so each testcase goes to the id of its title in the
    first file, at or after the previous testcase's, that has one left (a repeated title takes the
    next " [n]"). A testcase named by a file's absolute path is that file failing as a whole (at
    load, or after its tests): its file is done. Testcases no id in `lookup` has (an empty describe)
    are left out."""
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return {}
    wanted = set(lookup)
    files = sorted({t.split("::", 1)[0] for t in wanted if "::" in t} | {t for t in wanted if "::" not in t})
    seen: Counter[tuple[str, str]] = Counter()
    outcomes: dict[str, str] = {}
    broken: set[str] = set()  # files that failed as a whole with none of their tests failing
    at = 0
    for name, outcome in _leaves(root, ()):
        if name.startswith("/"):
            done = next((i for i, f in enumerate(files) if name.endswith("/" + f)), None)
            if done is not None and outcome == "failed" and not any(
                    o == "failed" for t, o in outcomes.items() if t.startswith(files[done] + "::")):
                broken.add(files[done])
            at = at if done is None else done + 1
            continue
        for i in range(at, len(files)):
            n = seen[files[i], name] + 1
            test_id = f"{files[i]}::{name}" + (f" [{n}]" if n > 1 else "")
            if test_id in wanted:
                seen[files[i], name], outcomes[test_id], at = n, outcome, i
                break
    for test_id, outcome in outcomes.items():  # as the records reporter gives them (reporters/node.mjs)
        if outcome == "passed" and test_id.split("::", 1)[0] in broken:
            outcomes[test_id] = "failed"
    return _repeats_failed(outcomes, seen)


def _repeats_failed(outcomes: dict[str, str], seen: Counter) -> dict[str, str]:
    """A title reported in one file as passed and as failed is failed in every report of it, as the
    records reporter gives it (reporters/node.mjs: a test file's process can forge frames)."""
    for (file, name), count in seen.items():
        ids = [f"{file}::{name}" + (f" [{n}]" if n > 1 else "") for n in range(1, count + 1)]
        if {"passed", "failed"} <= {outcomes.get(i) for i in ids}:
            outcomes.update({i: "failed" for i in ids if outcomes.get(i) == "passed"})
    return outcomes


def _jest_outcomes(results: Path) -> dict[str, str]:
    """Outcomes by test id from jest's JSON results (paths relative to the folder the run started in)."""
    try:
        data = json.loads((results / JEST_JSON).read_text())
        cwd = (results / JEST_CWD).read_text().strip()
    except (OSError, ValueError):
        return {}
    outcomes: dict[str, str] = {}
    for suite in data.get("testResults", []):
        file = posixpath.relpath(suite.get("name", ""), cwd)
        seen: Counter[str] = Counter()
        for case in suite.get("assertionResults", []):
            name = " > ".join([*case.get("ancestorTitles", []), case.get("title", "")])
            seen[name] += 1
            test_id = f"{file}::{name}" + (f" [{seen[name]}]" if seen[name] > 1 else "")
            outcomes[test_id] = {"passed": "passed", "failed": "failed"}.get(case.get("status"), "skipped")
    return outcomes


def report_outcomes(results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
    """Outcomes by test id from the runner's own report in the host folder `results`: node's junit
    XML (matched to the ids in `lookup`), jest's JSON; None when the run left no report (mocha and
    tape have none). The runner is told by the report it left: a node run whose report is gone
    reads as one without a report."""
    if (results / JUNIT).exists():
        return _node_outcomes(results / JUNIT, lookup or ())
    if (results / JEST_JSON).exists() or (results / JEST_CWD).exists():
        return _jest_outcomes(results)
    return None


_REPORTER_FILES = {path.name: path.read_text() for path in sorted(REPORTERS.iterdir())
                   if path.suffix in (".cjs", ".mjs")}


@dataclass(frozen=True)
class JsReporter:
    """The records reporters and drivers (reporters/), laid read-only in the run's reporter folder,
    which CODE_GYM_REPORTERS names; the channel's descriptor and nonce in CODE_GYM_RECORDS."""

    def setup(self, inside: str, fd: int, nonce: str, env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        return dict(_REPORTER_FILES), env | {FOLDER_ENV: inside, ENV: f"{fd} {nonce}"}
