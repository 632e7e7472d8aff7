"""`code_gym.languages.python.source.parse` under threads: CPython 3.11's ast constructor shares its recursion
counter between threads (python/cpython#106905). The integrity audit parsing patches in a
4-thread soak failed with `SystemError: AST constructor recursion depth mismatch`; the churn below
(a finalizer that switches threads during garbage collection) reproduces it with plain ast.parse
in every one of five runs on this machine."""
import ast
import gc
import sys
import threading
import time
from pathlib import Path

import pytest

from code_gym.languages.python import source as pysource
SOURCES = [p.read_text() for p in sorted(Path(ast.__file__).parent.glob("*.py"))[:5]]


class _Finalized:
    def __del__(self):
        time.sleep(0)  # gives the GIL away inside a collection


def _parse_in_threads(parse) -> list[str]:
    errors: list[str] = []
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            a = _Finalized()
            a.cycle = a
            del a
            time.sleep(0)

    def work():
        for source in SOURCES:
            try:
                parse(source)
            except SystemError as e:
                errors.append(str(e))
            except SyntaxError:
                pass

    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(50, 1, 1)
    sys.setswitchinterval(1e-4)  # the lock's waiters hand the GIL back sooner (the test's own speed)
    try:
        churner = threading.Thread(target=churn)
        churner.start()
        workers = [threading.Thread(target=work) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        stop.set()
        churner.join()
    finally:
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)
    return errors


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="python/cpython#106905 is fixed in 3.13's ast state")
def test_the_race_is_real_with_plain_ast_parse():
    # up to five tries: the race needs a collection at the wrong moment
    assert any(_parse_in_threads(ast.parse) for _ in range(5))


def test_guarded_parse_is_safe_under_the_same_churn():
    assert _parse_in_threads(pysource.parse) == []


def test_guarded_parse_is_ast_parse():
    source = "def f(x):\n    return x + 1\n"
    assert ast.dump(pysource.parse(source, "f.py")) == ast.dump(ast.parse(source, "f.py"))
    with pytest.raises(SyntaxError):
        pysource.parse("def (:")


def test_code_gym_parses_only_through_pysource():
    root = Path(__file__).resolve().parents[1] / "code_gym"
    direct = []
    for path in root.rglob("*.py"):
        if path == root / "languages" / "python" / "source.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ast"):
                direct.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert not direct, "use code_gym.languages.python.source.parse (thread-safe) instead of ast.parse: " + ", ".join(direct)
