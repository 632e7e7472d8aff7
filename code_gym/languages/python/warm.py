"""The warm pytest server (`Runtime.warm`): a server that has imported pytest and its built-in
plugins, forking one child per run that becomes `python -m pytest ARGS` in the repository.

A cold `python -m pytest` pays about 0.7 s before the first test (interpreter, imports, plugin
set-up). The child matches a cold run: `sys.path[0]` is the repository as `-m` sets it, a fresh
random seed, and with records the grader's plugin (`RecordStream`, from records_plugin.py, defined
in the server before anything of a repository is imported). The server takes a command only when
it is exactly `python -m pytest` plus plain arguments (`pytest_argv`), and declines a run (it goes
cold) when the folder holds a module that would shadow one it preloaded, since a cold run would
import that one: a file or a regular package the import system would find there (a folder without
`__init__`, such as a data folder named `json`, shadows nothing: a regular module later on sys.path
wins over it). The protocol and the server's duties are the sandbox's (`runner.server_program`).
"""
from __future__ import annotations

import re
import shlex

from code_gym.languages.python.reporter import PLUGIN_SOURCE
from code_gym.sandbox.base import WarmServer
from code_gym.sandbox.runner import server_program

# Per-process caches the server fills before it forks runs (also run by benchmarks/grading_defences.py).
WARM_CACHES = r'''
def warm_caches():
    """Fill, once in the server, the per-process caches a forked run would otherwise fill again on
    its first failing test: pytest's traceback finds a test's source through inspect.getmodule,
    which on a cache miss takes the real path of every module in sys.modules (~300 with pytest
    loaded), and through tokenize, whose regular expressions compile on first use. Both hold
    only the preloaded modules' file names and stdlib patterns; what a run imports is mapped in
    the run."""
    try:  # a speed-up only: an interpreter where this fails serves runs as before
        import inspect, io, tokenize
        inspect.getmodule(None, "")
        for _ in tokenize.generate_tokens(io.StringIO("x = (1,\n 2)\n").readline):
            pass
    except Exception:
        pass


'''
# pytest's part of the server. Absent pytest, it declines every run (they go cold).
_PYTEST = r'''
import random
try:
    import importlib, pytest, _pytest.config
    for _name in _pytest.config.default_plugins:
        try:
            importlib.import_module("_pytest." + _name)
        except ImportError:
            pass
    READY = True
except ImportError:
    READY = False


# WARM_CACHES
if READY:
    warm_caches()
PRELOADED = sorted({m.split(".")[0] for m in sys.modules})

import importlib.machinery
# what the import system finds in the folder for a name: a module file or a regular package (a folder
# without __init__ is at most a namespace portion, which loses to the preloaded module)
SUFFIXES = importlib.machinery.all_suffixes()


def shadows(cwd, name):
    base = os.path.join(cwd, name)
    return any(os.path.isfile(base + s) or os.path.isfile(os.path.join(base, "__init__" + s)) for s in SUFFIXES)


def declines(cwd):
    return not READY or any(shadows(cwd, n) for n in PRELOADED)


def run(argv, cwd, records):
    sys.path[0] = cwd
    sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + argv
    random.seed()
    try:
        if records:  # the grader's plugin, made before anything of the repository is imported
            code = pytest.main(plugins=[RecordStream(records[0], records[1])])
            sys.stdout.flush()
            return code
        return pytest.console_main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
'''
PROGRAM = server_program(PLUGIN_SOURCE + _PYTEST.replace("# WARM_CACHES\n", WARM_CACHES, 1))


# one argument as shlex.quote writes it: plain, or in single quotes with each ' inside written '"'"'
_WORD = re.compile(r"""[\w@%+=:,./-]+|'[^']*'(?:"'"'[^']*')*""", re.ASCII)


def _joined_words(command: str) -> list[str] | None:
    """The arguments `command` is shlex.join of, or None. Linear in its length: shlex.split takes
    about 20 us a character (18 s on a 900 KB command, all of it before the command could even be
    refused as too long)."""
    words, pos = [], 0
    while True:
        match = _WORD.match(command, pos)
        if match is None:
            return None
        word = match.group()
        words.append(word[1:-1].replace("'\"'\"'", "'") if word.startswith("'") else word)
        pos = match.end()
        if pos == len(command):
            return words if shlex.join(words) == command else None
        if command[pos] != " ":
            return None
        pos += 1


def pytest_argv(command: str) -> list[str] | None:
    """pytest's arguments when `command` is exactly `python -m pytest ARGS` with nothing for the shell
    to expand (as shlex.join writes it); None for anything else."""
    command = command.strip()
    if not command.startswith(("python -m pytest", "python3 -m pytest")):
        return None
    tokens = _joined_words(command)
    if tokens is None or tokens[:3] not in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
        return None
    plugins = [b for a, b in zip(tokens, tokens[1:]) if a == "-p" and not b.startswith("no:")]
    if plugins:  # a plugin from the repository: not covered by the equivalence tests, run it cold
        return None
    return tokens[3:]


def warm_server(python: str) -> WarmServer:
    """The server, run by the interpreter `python` (the one the task's tests use)."""
    return WarmServer(PROGRAM, (python, "-c"), pytest_argv)
