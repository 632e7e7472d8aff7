"""The Debian package of a Rust crate: `librust-<crate>-dev` (or `librust-<crate>-<major>-dev`) whose
crate version meets a cargo requirement (`crate_package`), the package that gives a crate one of
its features (`feature_package`), and cargo's version requirements (`matches_req`). The packages
themselves come from `code_gym.tasks.debian`'s index of the librust family."""
from __future__ import annotations

import re

from code_gym.tasks import debian

FAMILY = "librust-"


def crate_package(crate: str, version_req: str | None = None, index: debian.Index | None = None) -> debian.Package:
    """The highest librust-<crate>-dev or librust-<crate>-<version>-dev package whose crate version
    meets the cargo requirement (`1.2`, `^1.2`, `~1.2.3`, `=1.0.1`, `>=1, <3`, `1.*`)."""
    idx = debian.index(FAMILY) if index is None else index
    stem = "librust-" + crate.lower().replace("_", "-")
    named = re.compile(re.escape(stem) + r"(?:-(\d+(?:\.\d+)*))?-dev")  # librust-clap-dev, librust-clap-2-dev
    found = []
    for name, versions in idx.packages.items():
        m = named.fullmatch(name)
        for p in versions if m else ():
            v = crate_version(p.version)
            if m.group(1) and not (v + ".").startswith(m.group(1) + "."):
                continue  # librust-md-5-dev is crate md-5, not crate md at version 5
            if not version_req or matches_req(v, version_req):
                found.append((_semver(v), p))
    if not found:
        asked = f" {version_req}" if version_req else ""
        raise debian.DebianError(f"crate {crate}{asked}: no Debian package ships it ({idx.describe(stem + '-dev')})")
    return max(found, key=lambda vp: vp[0])[1]


def feature_package(package: debian.Package, feature: str, index: debian.Index | None = None) -> debian.Package:
    """The package that gives crate `package` its cargo feature `feature`, at the same version:
    (librust-serde-dev, "derive") -> librust-serde+serde-derive-dev; (librust-serde-dev, "std")
    -> librust-serde-dev itself (a feature that needs no other crate is provided by the crate)."""
    idx = debian.index(FAMILY) if index is None else index
    name = f"{package.name[:-len('-dev')]}+{feature.lower().replace('_', '-')}-dev"
    found = idx.provider(name, "=", package.version)
    if found is None:
        raise debian.DebianError(f"crate feature {feature!r} of {package}: Debian has no {name} at that version "
                          f"({idx.describe(name)})")
    return found


def crate_version(debian_version: str) -> str:
    """The crate version a librust package ships: `1.0.152-2` -> `1.0.152` (no epoch, revision,
    +dfsg; `~` back to `-` for a pre-release)."""
    _, upstream, _ = debian.split_version(debian_version)
    return upstream.split("+")[0].replace("~", "-")


def _semver(text: str) -> tuple[int, ...]:
    numbers = re.match(r"\d+(?:\.\d+)*", text.strip().lstrip("v"))
    parts = [int(n) for n in numbers.group(0).split(".")] if numbers else []
    return tuple(parts[:3])


def _bump(parts: tuple[int, ...], i: int) -> tuple[int, ...]:
    return tuple(parts[:i]) + (parts[i] + 1,) + (0,) * (2 - i)


def matches_req(version: str, requirement: str) -> bool:
    """Does crate `version` meet the cargo requirement? (Pre-release tags are ignored.)"""
    v = (_semver(version) + (0, 0, 0))[:3]
    for comparator in filter(None, (c.strip() for c in requirement.split(","))):
        op = re.match(r"(\^|~|=|>=|<=|>|<)?", comparator).group(0)
        text = comparator[len(op):].strip()
        if text in ("*", ""):
            continue
        given = _semver(text.split("*")[0].rstrip("."))
        n = len(given)
        low = (given + (0, 0, 0))[:3]
        op = op or ("=" if "*" in text else "^")
        if op == "^":
            first = next((i for i, x in enumerate(given) if x), n - 1)
            ok = low <= v < _bump(low, first)
        elif op == "~":
            ok = low <= v < _bump(low, 0 if n == 1 else 1)
        elif op == "=":
            ok = v == low if n == 3 else low <= v < _bump(low, n - 1)
        elif op == ">=":
            ok = v >= low
        elif op == ">":
            ok = v > low if n == 3 else v >= _bump(low, n - 1)
        elif op == "<":
            ok = v < low
        else:
            ok = v <= low if n == 3 else v < _bump(low, n - 1)
        if not ok:
            return False
    return True
