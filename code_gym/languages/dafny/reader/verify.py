"""The grader's Dafny reader: runs the verifier inside the sandbox and streams one record per proof
obligation it grades on the results channel (`code_gym.grading.records`). Laid read-only in the
run's reporter folder beside `source.py` (the tokenizer and parser it shares with the host) and
started as `python3 -I verify.py SPEC`, SPEC a JSON object:

    {"command": ["dafny", "/compile:0", ...], "files": [...], "results": "/results"}

`command` is the task's test_command split into words; the reader appends `/compile:0 /trace
/verifyAllModules /errorLimit:50` and the files (none: every .dfy file under the working folder).
A probe file (the one `results/probes-manifest.json` names) is verified in the same verifier
process when the manifest says "merged" (its program sits in a module of its own, so no name
clashes), else in a second process at the same time; after a parse or resolution error in it, it
is verified on its own. A probe holds when it verified there and the candidate's own member
verified in the graded run. Its outcomes go to `results/probes.json` as well as the channel.

Records ("FILE::NAME", FILE the repo-relative path of the file that declares NAME):
- `FILE::NAME` for each member with a body: "passed" when every Boogie implementation of it
  verified (one Dafny has nothing to check for passes), else "failed" (an error, a time-out, out
  of resource, inconclusive);
- `FILE::NAME > ensures K` for the K-th ensures clause of a method, lemma, constructor or iterator
  with a body: "passed" when its implementation came to an answer, no error names that clause, and
  every other error of the implementation is a postcondition's (else the clause might hold only
  vacuously, after a failed assertion such as `assert false`);
- a collect record `FILE` for a file that does not parse or resolve (FILE: the first error's).
The run exits 0 when every record passed, 1 when one failed or a file did not parse, 3 when the
verifier could not be started or stopped before its summary (a crash: the run failed, no record
is graded); the end record carries the same status. The candidate program
cannot run code during verification (`/compile:0`), so nothing in the run competes for the channel;
the channel (`channel.py`, laid beside this file) makes the reader non-dumpable all the same.
"""
from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.isfile(os.path.join(HERE, "source.py")):  # in the sandbox: laid beside this file
    sys.path.insert(0, HERE)
    import source  # noqa: E402
    from channel import Channel  # noqa: E402
else:  # imported from the package (its tests)
    from code_gym.grading.channel import Channel  # noqa: E402
    from code_gym.languages.dafny import source  # noqa: E402

MESSAGE = 500
OPTIONS = ("/compile:0", "/trace", "/verifyAllModules", "/errorLimit:50")
MANIFEST = "probes-manifest.json"
PROBE_RESULTS = "probes.json"
FAILED_STATUSES = ("error", "timed out", "out of resource", "inconclusive", "out of memory")
_VERIFYING = re.compile(r"^Verifying (\S+) \.\.\.$")
_STATUS = re.compile(r"^\s+\[[0-9.]+ s, (\d+) proof obligations?\]\s+(.+?)\s*$")
_LOCATED = re.compile(r"^(.+?)\((\d+),(\d+)\): (.*)$")
_SUMMARY = re.compile(r"^Dafny program verifier finished with .*$")
_PROBLEMS = re.compile(r"^\d+ (parse|resolution/type) errors? detected in (.+)$")
_NOISE = re.compile(r"^(Prover error: .*unknown parameter|Legal parameters are:|  \w+ \(.*\)( \(default: .*\))?$|"
                    r"\[TRACE\]|Coalescing blocks|Inlining\.\.\.|Running abstract interpretation|\s+\[[0-9.]+ s\]$|"
                    r"Parsing |Dafny \d)")
POSTCONDITION = ("postcondition might not hold", "This is the postcondition that might not hold")


@dataclass
class Block:
    """One Boogie implementation the verifier reported: its name, status and errors."""
    name: str
    status: str = ""
    obligations: int = 0
    errors: list[dict] = field(default_factory=list)  # {"file", "line", "col", "text", "related": [(file, line, col)]}


@dataclass
class Outcome:
    blocks: list[Block]
    problems: list[tuple[str, str]]  # (file, message) of parse and resolution errors
    summary: str
    text: str  # the output as the agent reads it
    located: list[tuple[str, int, int, str]] = field(default_factory=list)  # every parse or resolution error


def run_verifier(command: list[str], files: list[str]) -> subprocess.Popen:
    return subprocess.Popen([*command, *OPTIONS, *files], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, errors="replace")


def read_output(raw: str) -> Outcome:
    """The verifier's implementations, errors and summary from its /trace output."""
    blocks: list[Block] = []
    problems: list[tuple[str, str]] = []
    summary = ""
    kept: list[str] = []
    located: list[tuple[str, int, int, str]] = []  # errors before any block: parse or resolution
    in_trace = False
    for line in raw.splitlines():
        if _NOISE.match(line) or not line.strip():
            continue
        if line.startswith("Execution trace:"):
            in_trace = True
            continue
        if in_trace and line.startswith("    "):
            continue
        in_trace = False
        line = _LOCATED.sub(lambda m: f"{_normal(m.group(1))}({m.group(2)},{m.group(3)}): {m.group(4)}", line)
        verifying = _VERIFYING.match(line)
        status = _STATUS.match(line)
        if verifying:
            blocks.append(Block(verifying.group(1)))
            continue
        if status and blocks and not blocks[-1].status:
            blocks[-1].obligations, blocks[-1].status = int(status.group(1)), status.group(2)
            continue
        kept.append(line)
        if _SUMMARY.match(line):
            summary = line
            continue
        problem = _PROBLEMS.match(line)
        if problem:
            first = next((f"{f}({ln},{c}): {m}" for f, ln, c, m in located), line)
            problems.append((problem.group(2), first))
            continue
        at = _LOCATED.match(line)
        if not at:
            continue
        where = (at.group(1), int(at.group(2)), int(at.group(3)))
        message = at.group(4)
        if message.startswith("Related location"):
            if blocks and blocks[-1].errors:
                blocks[-1].errors[-1]["related"].append(where)
        elif message.startswith(("Error", "Timed out on", "Out of resource on")) and blocks:
            blocks[-1].errors.append({"file": where[0], "line": where[1], "col": where[2], "text": message,
                                      "related": []})
        elif message.startswith("Error"):
            located.append((*where, message))
    return Outcome(blocks, problems, summary, "\n".join(kept), located)


# -- names

_ESCAPES = {"_": "_", "k": "'", "q": "?", "b": "\\", "h": "#"}


def _unescape(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        if name[i] == "_" and i + 1 < len(name) and name[i + 1] in _ESCAPES:
            out.append(_ESCAPES[name[i + 1]])
            i += 2
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def boogie_key(name: str) -> tuple[str, str, str]:
    """(innermost module or "", class or "", member) of a Boogie implementation name such as
    `Impl$$_0_M.C.my__meth` or `CheckWellformed$$_module.__default.Sum`."""
    parts = name.split("$$", 1)[-1].split(".")
    module = parts[0]
    module = "" if module == "_module" else _unescape(re.sub(r"^_\d+_", "", module))
    cls = parts[1] if len(parts) > 1 else ""
    cls = "" if cls == "__default" else _unescape(cls)
    member = _unescape(parts[2]) if len(parts) > 2 else ""
    return module, cls, member


@dataclass
class Declared:
    file: str  # repo-relative
    member: source.Member
    program: source.Program


def _normal(path: str) -> str:
    return posixpath.normpath(path.replace(os.sep, "/"))


def declarations(files: list[str]) -> tuple[dict[tuple[str, str, str], Declared], dict[str, source.Program]]:
    """Every member of `files` and the files they include, by (module, class, member), and each file's parse."""
    table: dict[tuple[str, str, str], Declared] = {}
    parsed: dict[str, source.Program] = {}
    pending = [_normal(f) for f in files]
    while pending:
        path = pending.pop(0)
        if path in parsed or not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                program = source.parse(handle.read())
        except source.SourceError:
            continue
        parsed[path] = program
        pending += [_normal(posixpath.join(posixpath.dirname(path), inc)) for _, inc in program.includes]
        for member in program.members:
            key = (member.module[-1] if member.module else "", member.container, member.name)
            table.setdefault(key, Declared(path, member, program))
    return table, parsed


def _owner(block: Block, table: dict[tuple[str, str, str], Declared]) -> Declared | None:
    module, cls, member = boogie_key(block.name)
    if member and (module, cls, member) in table:
        return table[module, cls, member]
    if (module, "", cls) in table:  # an iterator: its class and its Valid/reads functions
        return table[module, "", cls]
    return None


# -- records

def _inside(clause: source.Clause, program: source.Program, file: str, where: tuple[str, int, int]) -> bool:
    if _normal(where[0]) != file:
        return False
    first, last = program.tokens[clause.first], program.tokens[clause.last]
    return (first.line, first.col) <= (where[1], where[2]) <= (last.line, last.col + len(last.text))


def member_records(declared: Declared, blocks: list[Block], finished: bool) -> list[dict]:
    """The member's own record and one per ensures clause of a method-like member with a body."""
    member, program, file = declared.member, declared.program, declared.file
    failed = [b for b in blocks if b.status != "verified"]
    base = f"{file}::{member.qualified}"
    if not blocks and not finished:
        return []
    if not blocks and any(c.keyword == "ensures" for c in member.clauses):
        blocks = [Block("", "unchecked", errors=[{"text": "the verifier reported no check of it", "related": []}])]
        failed = blocks
    if failed:
        first = failed[0]
        why = first.errors[0]["text"] if first.errors else ""
        if first.status != "error":  # a time-out or a resource limit is a failure, never the grader's error
            why = f"verification {first.status}" + (f": {why}" if why else "")
        records = [{"id": base, "outcome": "failed", "message": (why or "verification error")[:MESSAGE]}]
    else:
        records = [{"id": base, "outcome": "passed"}]
    if member.spec_function or member.body is None:
        return records
    ensures = [c for c in member.clauses if c.keyword == "ensures"]
    answered = all(b.status in ("verified", "error") for b in blocks)
    errors = [e for b in blocks for e in b.errors]
    hit: set[int] = set()
    stray = False
    for error in errors:
        targets = {k for k, clause in enumerate(ensures)
                   for where in error["related"] if _inside(clause, program, file, where)}
        if targets and any(p in error["text"] for p in POSTCONDITION):
            hit |= targets
        else:
            stray = True
    unexplained = any(b.status == "error" and not b.errors for b in blocks)
    for k, clause in enumerate(ensures):
        if not answered or unexplained:
            outcome, why = "failed", "the implementation's verification came to no answer"
        elif k in hit:
            outcome, why = "failed", "this postcondition might not hold"
        elif stray:
            outcome, why = "failed", "another obligation of the implementation failed, so this one may hold vacuously"
        else:
            outcome, why = "passed", ""
        record = {"id": f"{base} > ensures {k + 1}", "outcome": outcome}
        if why:
            record["message"] = why
        records.append(record)
    return records


def outcome_records(outcome: Outcome, files: list[str]) -> tuple[list[dict], list[dict]]:
    """(report records, collect records) of one verifier run over `files`."""
    if outcome.problems:
        return [], [{"id": file, "outcome": "failed", "message": message[:MESSAGE]}
                    for file, message in broken_files(outcome).items()]
    table, _ = declarations(files)
    by_member: dict[int, list[Block]] = {}
    for block in outcome.blocks:
        owner = _owner(block, table)
        if owner is not None:
            by_member.setdefault(id(owner.member), []).append(block)
    records: list[dict] = []
    for declared in table.values():
        if declared.member.body is not None:
            records += member_records(declared, by_member.get(id(declared.member), []), True)
    return with_dependencies(records, table), []


def with_dependencies(records: list[dict], table: dict[tuple[str, str, str], Declared]) -> list[dict]:
    """Fail the records of every member that refers, directly or through others, to a member of its
    own file that did not verify: a helper lemma whose proof fails still lends its postcondition to
    its callers, and a helper has no graded record of its own to lose. (A file's members may rely on
    another file's unverified members: the spec check's wrappers call the program's.)"""
    outcome = {r["id"]: r["outcome"] for r in records}
    members = [d for d in table.values() if d.member.body is not None]
    by_name: dict[tuple[str, str], list[Declared]] = {}
    for declared in members:
        by_name.setdefault((declared.file, declared.member.name), []).append(declared)
    uses: dict[str, set[str]] = {}
    for declared in members:
        program, member = declared.program, declared.member
        names = {t.text for t in program.tokens[member.first:member.end + 1] if t.kind == "id"} - {member.name}
        uses[f"{declared.file}::{member.qualified}"] = {f"{d.file}::{d.member.qualified}" for n in names
                                                        for d in by_name.get((declared.file, n), ())}
    unsound = {i for i in uses if outcome.get(i) != "passed"}
    because: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for member, used in uses.items():
            bad = sorted(used & unsound)
            if member not in unsound and bad:
                unsound.add(member)
                because[member] = bad[0]
                changed = True
    out = []
    for record in records:
        base = record["id"].split(" > ")[0]
        if base in because and record["outcome"] == "passed":
            used = because[base].partition("::")[2]
            record = {"id": record["id"], "outcome": "failed",
                      "message": f"relies on {used}, which does not verify"[:MESSAGE]}
        out.append(record)
    return out


def broken_files(outcome: Outcome) -> dict[str, str]:
    """File -> the first parse or resolution error located in it."""
    broken: dict[str, str] = {}
    for file, message in outcome.problems:
        at = _LOCATED.match(message)
        broken.setdefault(_normal(at.group(1) if at else file), message)
    return broken


def includes_of(path: str, parsed: dict[str, source.Program]) -> set[str]:
    """`path` and every file it includes, transitively (a file that does not parse includes nothing)."""
    seen: set[str] = set()
    pending = [path]
    while pending:
        file = pending.pop()
        if file in seen:
            continue
        seen.add(file)
        program = parsed.get(file)
        if program is not None:
            pending += [_normal(posixpath.join(posixpath.dirname(file), inc)) for _, inc in program.includes]
    return seen


def clean_files(files: list[str], broken: set[str]) -> list[str]:
    """The files among `files` and what they include that neither are broken nor include a broken
    file: after a parse or resolution error they are verified again without the rest, so a file
    that does not load fails only its own records (and the canaries still run)."""
    _, parsed = declarations(files)
    every = sorted(set().union(*(includes_of(f, parsed) for f in files))) if files else []
    return [f for f in every if os.path.isfile(f) and not includes_of(f, parsed) & broken]


def _write(channel: Channel, records: list[dict], collects: list[dict]) -> bool:
    for record in collects:
        channel.write("collect", **record)
    for record in records:
        channel.write("report", when="call", **record)
    return not collects and all(r["outcome"] == "passed" for r in records)


def _repo_files() -> list[str]:
    found = []
    for folder, dirs, names in os.walk("."):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += sorted(_normal(os.path.join(folder, n)) for n in names if n.endswith(".dfy"))
    return found


def _manifest(results: str) -> dict | None:
    path = os.path.join(results, MANIFEST)
    if not results or not os.path.isfile(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def probe_outcomes(manifest: dict, outcome: Outcome) -> dict[str, dict]:
    """Each probe's outcome in the probe file: "passed" when the member it sits in verified there
    and no error falls on the probe's line; else "failed" with why."""
    table, _ = declarations([manifest["file"]])
    if outcome.problems or not outcome.summary:
        why = outcome.problems[0][1] if outcome.problems else "the verifier stopped without its summary"
        return {p["id"]: {"outcome": "failed", "message": f"the probe file does not verify: {why}"[:MESSAGE]}
                for p in manifest["probes"]}
    blocks_of: dict[str, list[Block]] = {}
    for block in outcome.blocks:
        owner = _owner(block, table)
        if owner is not None:
            blocks_of.setdefault(owner.member.qualified, []).append(block)
    results: dict[str, dict] = {}
    for probe in manifest["probes"]:
        blocks = blocks_of.get(probe["member"], [])
        lines = range(probe["lines"][0], probe["lines"][1] + 1)
        on_probe = [e for b in blocks for e in b.errors
                    if e["line"] in lines or any(r[1] in lines for r in e["related"])]
        broken = [b for b in blocks if b.status != "verified"]
        if on_probe:
            results[probe["id"]] = {"outcome": "failed", "message": on_probe[0]["text"][:MESSAGE]}
        elif broken:
            why = broken[0].errors[0]["text"] if broken[0].errors else f"verification {broken[0].status}"
            results[probe["id"]] = {"outcome": "failed", "message": f"the member does not verify: {why}"[:MESSAGE]}
        else:
            results[probe["id"]] = {"outcome": "passed"}
    return results


def verify_probes(command: list[str], manifest: dict, first: subprocess.Popen, rounds: int = 3) -> dict[str, dict]:
    """The probes' outcomes. A probe on whose line the verifier reports a parse or resolution error
    (a name the candidate does not have) fails and is blanked out of the file, which is verified
    again, up to `rounds` runs in all."""
    path = manifest["file"]
    failed: dict[str, dict] = {}
    probes = list(manifest["probes"])
    outcome = read_output(first.communicate()[0])
    for _ in range(rounds - 1):
        if not outcome.problems:
            break
        bad = {ln for f, ln, _, _ in outcome.located if _normal(f) == path}
        hit = [p for p in probes if any(ln in bad for ln in range(p["lines"][0], p["lines"][1] + 1))]
        if not hit:
            break
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().split("\n")
        for probe in hit:
            message = next(m for f, ln, _, m in outcome.located
                           if _normal(f) == path and probe["lines"][0] <= ln <= probe["lines"][1])
            failed[probe["id"]] = {"outcome": "failed", "message": f"does not resolve in the candidate: {message}"[:MESSAGE]}
            for ln in range(probe["lines"][0], probe["lines"][1] + 1):
                lines[ln - 1] = ""
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines))
        probes = [p for p in probes if p["id"] not in failed]
        outcome = read_output(run_verifier(command, [path]).communicate()[0])
    return failed | probe_outcomes({"file": path, "probes": probes}, outcome)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    command, results = list(spec["command"]), spec.get("results", "")
    channel = Channel()
    manifest = _manifest(results)
    probe_file = _normal(manifest["file"]) if manifest else None
    merged = bool(manifest and manifest.get("merged"))
    files = [_normal(f) for f in spec.get("files", [])] or _repo_files()
    files = [f for f in files if f != probe_file]
    try:
        main_run = run_verifier(command, files + ([probe_file] if merged else []))
        probe_run = run_verifier(command, [probe_file]) if manifest and not merged else None
    except OSError as error:
        print(f"code-gym: the verifier could not start: {error}", file=sys.stderr)
        channel.write("end", exitstatus=3)
        return 3
    outcome = read_output(main_run.communicate()[0])
    print(outcome.text)
    if not outcome.summary and not outcome.problems:
        print("code-gym: the verifier stopped before its summary line (it crashed or was killed)", file=sys.stderr)
        channel.write("end", exitstatus=3)
        return 3
    broken = {f: m for f, m in broken_files(outcome).items() if f != probe_file}
    if outcome.problems:  # verify again what neither is nor includes a broken file
        collects = [{"id": f, "outcome": "failed", "message": m[:MESSAGE]} for f, m in broken.items()]
        records = []
        retry = clean_files(files, set(broken))
        if retry:
            again = read_output(run_verifier(command, retry).communicate()[0])
            print(again.text)
            records, more = outcome_records(again, retry)
            collects += [c for c in more if c["id"] not in {c["id"] for c in collects}]
    else:
        records, collects = outcome_records(outcome, files)
    ok = _write(channel, records, collects)
    if manifest:
        if merged and not outcome.problems:
            probed = probe_outcomes(manifest, outcome)
        elif manifest["program"] in broken:
            probed = {p["id"]: {"outcome": "failed", "message": "the program does not parse or resolve"}
                      for p in manifest["probes"]}
        else:
            probed = verify_probes(command, manifest, probe_run or run_verifier(command, [probe_file]))
        own = {r["id"]: r["outcome"] for r in records}
        for probe in manifest["probes"]:  # a probe holds for a candidate whose own member verifies
            member = f"{manifest['program']}::{probe['own']}"
            if probed[probe["id"]]["outcome"] == "passed" and own.get(member) != "passed":
                probed[probe["id"]] = {"outcome": "failed", "message": f"{member} does not verify on its own"}
        with open(os.path.join(results, PROBE_RESULTS), "w") as handle:
            json.dump(probed, handle)
        ok = _write(channel, [{"id": i, **o} for i, o in probed.items()], []) and ok
    status = 0 if ok else 1
    channel.write("end", exitstatus=status)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
