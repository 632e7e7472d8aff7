"""Debian's library source packages as task environments. A language whose libraries Debian ships
as source names their family, the prefix of their package names ("golang-" for Go's
golang-*-dev, "librust-" for Rust's librust-*-dev: each language's folder says which and how it
finds one of them); this module knows nothing of the languages. It gives the index of a family's
packages apt knows (`index`), the Depends closure of a few of them (`closure`) and their files
unpacked into a folder (`extract`, from a shared download cache).

Nothing here runs a package's code: `apt-get download` and `dpkg-deb -x` only (no maintainer
scripts, no `apt-get install`). The toolchain is the system's, so a dependency outside the
family's libraries (golang-go, libc6, libssl-dev) is dropped from a closure."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cmp_to_key, lru_cache
from itertools import zip_longest
from pathlib import Path

from code_gym.util.hostfs import cache_root

APT_LISTS = Path("/var/lib/apt/lists")
_FIELDS = ("Package", "Version", "Architecture", "Filename", "Depends", "Pre-Depends", "Provides",
           "Homepage", "Go-Import-Path")
_RELATION = re.compile(r"^\s*([^\s(:\[]+)(?::\w+)?\s*(?:\(\s*(<<|<=|=|>=|>>)\s*([^)\s]+)\s*\))?")
APT_TIMEOUT = 600


class DebianError(Exception):
    """A Debian package that cannot be found, resolved, downloaded or unpacked; the message names
    it and what asked for it."""


@dataclass(frozen=True)
class Relation:
    """One name in a Depends or Provides field: `librust-serde-1+derive-dev (>= 1.0.103-~~)`."""
    name: str
    op: str = ""  # "", "<<", "<=", "=", ">=", ">>"
    version: str = ""

    def __str__(self) -> str:
        return f"{self.name} ({self.op} {self.version})" if self.op else self.name


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    architecture: str
    filename: str  # its path in the archive (pool/...)
    depends: tuple[tuple[Relation, ...], ...]  # each group: alternatives, the first that resolves wins
    provides: tuple[Relation, ...]
    homepage: str = ""
    go_import_path: str = ""

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def deb_name(self) -> str:
        """The file name `apt-get download` gives it (an epoch's colon is written %3a)."""
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.architecture}.deb"


def family_of(name: str) -> str:
    """The family a package name belongs to: its first word ("librust-serde-dev" -> "librust-")."""
    return name.split("-", 1)[0] + "-"


# ---- Debian versions (dpkg's algorithm, lib/dpkg/version.c) ----

def _order(c: str) -> int:
    """dpkg's weight of a non-digit: `~` sorts before anything (even the end), letters before the rest."""
    return -1 if c == "~" else ord(c) if c.isalpha() else ord(c) + 256


def _verrevcmp(a: str, b: str) -> int:
    """Alternating runs: non-digits compared by weight (the end weighs 0), digits as numbers."""
    runs = zip_longest(re.findall(r"(\D*)(\d*)", a), re.findall(r"(\D*)(\d*)", b), fillvalue=("", ""))
    for (text_a, digits_a), (text_b, digits_b) in runs:
        wa, wb = [_order(c) for c in text_a], [_order(c) for c in text_b]
        wa += [0] * (len(wb) - len(wa))
        wb += [0] * (len(wa) - len(wb))
        if wa != wb:
            return -1 if wa < wb else 1
        if int(digits_a or 0) != int(digits_b or 0):
            return -1 if int(digits_a or 0) < int(digits_b or 0) else 1
    return 0


def split_version(v: str) -> tuple[int, str, str]:
    epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0), upstream, revision


def compare_versions(a: str, b: str) -> int:
    """<0, 0 or >0 as Debian version `a` sorts before, with or after `b` (dpkg --compare-versions)."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    if ea != eb:
        return ea - eb
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


_by_version = cmp_to_key(lambda a, b: compare_versions(a.version or "0", b.version or "0"))


def satisfies(version: str, op: str, wanted: str) -> bool:
    """Does `version` meet the relation `(op wanted)`? An empty op is met by any version."""
    if not op:
        return True
    c = compare_versions(version, wanted)
    return {"<<": c < 0, "<=": c <= 0, "=": c == 0, ">=": c >= 0, ">>": c > 0}[op]


# ---- the index ----

def _relations(text: str) -> tuple[Relation, ...]:
    found = []
    for part in text.split("|"):
        m = _RELATION.match(part)
        if m:
            found.append(Relation(m.group(1), m.group(2) or "", m.group(3) or ""))
    return tuple(found)


def _package(fields: dict[str, str]) -> Package:
    groups = ", ".join(f for f in (fields.get("Pre-Depends", ""), fields.get("Depends", "")) if f)
    return Package(fields["Package"], fields["Version"], fields.get("Architecture", "all"),
                   fields.get("Filename", ""),
                   tuple(r for r in (_relations(g) for g in groups.split(",")) if r),
                   tuple(r for p in fields.get("Provides", "").split(",") for r in _relations(p)),
                   fields.get("Homepage", ""), fields.get("Go-Import-Path", ""))


class Index:
    """Every package of one family apt knows: all versions of a name (highest first) and, for each
    virtual name, the packages that provide it."""

    def __init__(self, packages: list[Package], family: str = ""):
        self.family = family
        self.packages: dict[str, list[Package]] = {}
        self.providers: dict[str, list[tuple[Package, Relation]]] = {}
        for p in packages:
            self.packages.setdefault(p.name, []).append(p)
            for r in p.provides:
                self.providers.setdefault(r.name, []).append((p, r))
        for versions in self.packages.values():
            versions.sort(key=_by_version, reverse=True)

    def is_library(self, name: str) -> bool:
        """A library package of the family (a closure keeps these and drops the rest)."""
        return name.startswith(self.family) and name.endswith("-dev")

    def __len__(self) -> int:
        return len(self.packages)

    def __contains__(self, name: str) -> bool:
        return name in self.packages or name in self.providers

    def provider(self, name: str, op: str = "", version: str = "") -> Package | None:
        """The package that meets `name (op version)`: the highest real package of that name that
        satisfies it, else the provider with the highest provided version that does (an unversioned
        Provides meets only an unversioned relation, as in dpkg). None when nothing does."""
        for p in self.packages.get(name, ()):
            if satisfies(p.version, op, version):
                return p
        offers = [(p, r) for p, r in self.providers.get(name, ()) if meets(p, Relation(name, op, version))]
        offers.sort(key=lambda offer: _by_version(offer[1]), reverse=True)
        return offers[0][0] if offers else None

    def describe(self, name: str) -> str:
        """What Debian has under `name`, for an error message."""
        have = [str(p) for p in self.packages.get(name, ())]
        have += [f"{p} (provides {r})" for p, r in self.providers.get(name, ())]
        return "Debian has " + ", ".join(have[:5]) if have else "no package of that name or providing it"


def _lists_key() -> str:
    stats = sorted((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in APT_LISTS.iterdir()
                   if "_Packages" in f.name) if APT_LISTS.is_dir() else []
    return hashlib.sha256(json.dumps(stats).encode()).hexdigest()[:16]


def _read_dumpavail(family: str) -> list[dict[str, str]]:
    try:
        done = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, timeout=APT_TIMEOUT)
    except FileNotFoundError:
        raise DebianError("apt-cache is not installed: environments from Debian packages need a Debian system") from None
    if done.returncode != 0:
        raise DebianError(f"apt-cache dumpavail failed: {done.stderr.strip()[:500]}")
    records = []
    for stanza in done.stdout.split("\n\n"):
        if not stanza.startswith("Package: " + family):
            continue
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(": ")
            if sep and key in _FIELDS:
                fields[key] = value.strip()
        records.append(fields)
    return records


@lru_cache(maxsize=8)
def _index(key: str, family: str) -> Index:
    path = cache_root() / "debian-index" / f"{family}{key}.json"
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError):
        records = _read_dumpavail(family)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(records))
        os.replace(tmp, path)
    return Index([_package(r) for r in records], family)


def index(family: str) -> Index:
    """The index of the `family` packages ("librust-") in apt's current lists (read from
    `apt-cache dumpavail` once per change of /var/lib/apt/lists, then from
    `<cache>/debian-index/<family><key>.json`)."""
    if not family.endswith("-"):
        raise ValueError(f"a family is a package name prefix ending in '-' ('librust-'), not {family!r}")
    if not shutil.which("apt-cache"):
        raise DebianError(f"apt-cache is not installed: environments of {family}* packages need a Debian system")
    return _index(_lists_key(), family)


_apt_index = index  # the functions below take an `index` argument, which hides this name


# ---- closure ----

def meets(package: Package, relation: Relation) -> bool:
    """Does `package` satisfy `relation`, by its own name or by a versioned Provides?"""
    if package.name == relation.name:
        return satisfies(package.version, relation.op, relation.version)
    return any(r.name == relation.name and (not relation.op or (r.version and satisfies(r.version, relation.op,
                                                                                          relation.version)))
               for r in package.provides)


def closure(names, index: Index | None = None) -> list[Package]:
    """`names` and every library package their Depends need, each once, in the order first met.
    A group whose alternative is already chosen is met; otherwise the first alternative that
    resolves wins. Relations on non-library packages are dropped (the toolchain and C libraries
    are the system's). Two versions of one package asked for: DebianError. Without `index`, the
    index of the first name's family."""
    names = list(names)
    if not names:
        return []
    idx = _apt_index(family_of(names[0])) if index is None else index
    chosen: dict[str, Package] = {}
    for name in names:
        p = idx.provider(name)
        if p is None:
            raise DebianError(f"{name}: no such Debian package (asked for directly; {idx.describe(name)})")
        chosen.setdefault(p.name, p)
    queue = list(chosen.values())
    while queue:
        package = queue.pop(0)
        for group in package.depends:
            libraries = [r for r in group if idx.is_library(r.name)]
            if not libraries or any(meets(p, r) for p in chosen.values() for r in libraries):
                continue
            found = next((p for r in libraries if (p := idx.provider(r.name, r.op, r.version))), None)
            wanted = " | ".join(map(str, libraries))
            if found is None:
                raise DebianError(f"{wanted}: needed by {package}, but no Debian package satisfies it "
                                  f"({idx.describe(libraries[0].name)})")
            if found.name in chosen:
                raise DebianError(f"{wanted}: needed by {package}, but the closure already has "
                                  f"{chosen[found.name]}, which does not satisfy it")
            chosen[found.name] = found
            queue.append(found)
    return list(chosen.values())


# ---- download and extract ----

def downloads_dir() -> Path:
    return cache_root() / "debian-downloads"


def download(packages: list[Package]) -> list[Path]:
    """The .deb of each package, from the shared cache or fetched now with `apt-get download`
    (into a scratch folder, each file renamed into the cache when complete)."""
    cache = downloads_dir()
    cache.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not (cache / p.deb_name).is_file()]
    if missing:
        scratch = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
        try:
            command = ["apt-get", "download", "-q", *(f"{p.name}={p.version}" for p in missing)]
            try:
                done = subprocess.run(command, cwd=scratch, capture_output=True, text=True, timeout=APT_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise DebianError(f"apt-get download did not finish in {APT_TIMEOUT} s for "
                                  f"{', '.join(map(str, missing))}; is the Debian mirror reachable?") from None
            for p in missing:
                if not (scratch / p.deb_name).is_file():
                    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("E:")]
                    raise DebianError(f"{p}: apt-get download failed ({'; '.join(errors)[:500] or done.returncode})")
                os.replace(scratch / p.deb_name, cache / p.deb_name)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return [cache / p.deb_name for p in packages]


def extract(packages: list[Package], into: Path) -> Path:
    """Unpack the packages' files (`dpkg-deb -x`) into `into`, which appears complete or not at all
    (built in a scratch sibling, then renamed). An existing `into` is taken as done and returned."""
    into = Path(into)
    if into.exists():
        return into
    debs = download(packages)
    into.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{into.name}-", dir=into.parent))
    try:
        scratch.chmod(0o755)  # mkdtemp's 0700 would hide it from a sandbox's other uid
        for package, deb in zip(packages, debs):
            done = subprocess.run(["dpkg-deb", "-x", str(deb), str(scratch)], capture_output=True, text=True,
                                  timeout=APT_TIMEOUT)
            if done.returncode != 0:
                raise DebianError(f"{package}: dpkg-deb -x {deb} failed: {done.stderr.strip()[:500]}")
        try:
            os.rename(scratch, into)
        except OSError:
            if not into.is_dir():  # another process renamed its copy first: that one is complete
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return into
