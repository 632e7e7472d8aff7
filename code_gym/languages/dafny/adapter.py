"""Dafny behind the `Language` protocol: the verifier (`dafny /compile:0`) runs in the sandbox and
the grader's reader (reader/verify.py) streams one record per member and per postcondition, the
audit rejects programs that verify without a proof, canary lemmas ride along every graded run,
and probes check the reference proof's own annotations against the candidate."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from code_gym.languages.base import Canaries, FileCheck, Finding, TestRun
from code_gym.languages.dafny import files, runner
from code_gym.sandbox.base import Runtime
from code_gym.tasks.task import Task, TaskError


MONO_CONFIG = (Path("/etc/mono"),)


class Dafny:
    name = "dafny"
    source_suffixes = (".dfy",)
    grammar = "dafny"  # credit splits .dfy diffs by brace blocks (credit.split), no tree-sitter grammar
    run_ok = (0, 1)  # the reader's status: everything verified, something did not
    default_test_command = runner.DEFAULT_COMMAND
    image_packages = ("dafny", "python3")  # Debian's dafny 2.3 (Boogie, Z3, Mono); the reader is Python
    grading_rules = ("any change to the given specification (requires, ensures, reads, modifies, decreases, the "
                     "signatures and the bodies of functions and predicates), or anything that lets a program "
                     "verify without a proof: assume, {:axiom}, {:verify false}, {:extern}, other attributes that "
                     "change what is verified, methods, lemmas or functions without a body, loops without a body, "
                     "decreases *, include, expect")

    @property
    def rules(self) -> dict[str, str]:
        from code_gym.languages.dafny import audit
        return audit.RULES

    def runtime(self, task: Task) -> Runtime:
        """The system's verifier (Debian's `dafny`, with its Mono runtime and Z3) and the reader.
        Mono maps its native libraries through /etc/mono, which a sandbox shows only when asked."""
        return Runtime(folders=tuple(p for p in MONO_CONFIG if p.is_dir()), reporter=runner.DafnyReporter(),
                       packages=self.image_packages)

    def read_environment(self, table: object, where: Path) -> Any:
        if table is not None:
            raise TaskError(f"{where}: [environment] is not read for Dafny tasks: the verifier is the system's "
                            "(the Debian package dafny); its options go in test_command")
        return None

    # -- file policy and audit
    def grader_owned(self, path: str, old: bytes | None, new: bytes | None) -> str | None:
        return files.grader_owned(path, old, new)

    def guarded(self, path: str) -> bool:
        return files.guarded(path)

    def path_rule(self, task: Task, path: str, old: bytes | None, new: bytes | None) -> str | None:
        from code_gym.languages.dafny import audit
        return audit.path_rule(task, path, old, new)

    def audit_file(self, task: Task, path: str, old: bytes | None, new: bytes) -> list[Finding]:
        from code_gym.languages.dafny import audit
        return audit.audit_file(task, path, old, new)

    # -- verification runs with records
    def test_run(self, test_command: str, selected: tuple[str, ...], results: str, *, known_ids: bool = False,
                 canaries: bool = False) -> TestRun:
        return runner.test_run(test_command, selected, results, known_ids=known_ids, canaries=canaries)

    def report_outcomes(self, results: Path, lookup: tuple[str, ...] | None = None) -> dict[str, str] | None:
        return runner.report_outcomes(results, lookup)

    def collect_command(self, test_command: str, test_files: tuple[str, ...]) -> str:
        """The verifier lists nothing without verifying: the graded ids are task.toml's fail_to_pass
        and pass_to_pass (the builder writes them from the records of a run)."""
        return "exit 3"

    def collected_ids(self, output: str) -> tuple[str, ...]:
        return ()

    def canaries(self, test_files: tuple[str, ...], exists: Any, test_command: str = default_test_command) -> Canaries:
        from code_gym.languages.dafny import canary
        return canary.make(test_files, exists)

    # -- source code
    def enclosing_definition(self, data: bytes | None, lines: list[int]) -> str:
        from code_gym.languages.dafny import checks
        return checks.enclosing_definition(data, lines)

    def static_check(self, path: str, old: bytes | None, new: bytes) -> FileCheck:
        from code_gym.languages.dafny import checks
        return checks.check_file(path, old, new)

    # -- optional capabilities
    @property
    def probes(self):
        from code_gym.languages.dafny import probes
        return probes

    @property
    def obligations(self):
        from code_gym.languages.dafny import obligations
        return obligations

    vote = None  # the execution vote runs programs; a verified program needs none
    environments = None  # no project environment: the verifier is the system's
    mutations = None  # a wrong variant of a proof is a stripped one: the builder's

    @property
    def builder(self):
        """The task builder (builder/): verified programs -> tasks with their proofs stripped; None
        in an installation without it."""
        if importlib.util.find_spec("code_gym.languages.dafny.builder") is None:
            return None
        from code_gym.languages.dafny import builder
        return builder


DAFNY = Dafny()
