"""Debian's Go and Rust library packages as task environments: the index of every `golang-*` and
`librust-*` package apt knows (`index`), the Depends closure of a few of them (`closure`), their
files unpacked into a folder (`extract`, from a shared download cache), and the package that
ships a Rust crate (`crate_package`) or a Go import path (`import_path_package`).

Nothing here runs a package's code: `apt-get download` and `dpkg-deb -x` only (no maintainer
scripts, no `apt-get install`). The toolchain is the system's, so a dependency outside the
libraries (golang-go, libc6, libssl-dev) is dropped from a closure."""
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
PREFIXES = ("golang-", "librust-")
GOCODE = "usr/share/gocode/src"
_FIELDS = ("Package", "Version", "Architecture", "Filename", "Depends", "Pre-Depends", "Provides",
           "Homepage", "Go-Import-Path")
_RELATION = re.compile(r"^\s*([^\s(:\[]+)(?::\w+)?\s*(?:\(\s*(<<|<=|=|>=|>>)\s*([^)\s]+)\s*\))?")
APT_TIMEOUT = 600
GO_CANDIDATES = 12  # .debs downloaded at most to find the package of an import path


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


def is_library(name: str) -> bool:
    """A Go or Rust library package (a closure keeps these and drops the rest)."""
    return name.startswith(PREFIXES) and name.endswith("-dev")


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


def _split_version(v: str) -> tuple[int, str, str]:
    epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0), upstream, revision


def compare_versions(a: str, b: str) -> int:
    """<0, 0 or >0 as Debian version `a` sorts before, with or after `b` (dpkg --compare-versions)."""
    ea, ua, ra = _split_version(a)
    eb, ub, rb = _split_version(b)
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
    """Every golang-*/librust-* package apt knows: all versions of a name (highest first) and, for
    each virtual name, the packages that provide it."""

    def __init__(self, packages: list[Package]):
        self.packages: dict[str, list[Package]] = {}
        self.providers: dict[str, list[tuple[Package, Relation]]] = {}
        for p in packages:
            self.packages.setdefault(p.name, []).append(p)
            for r in p.provides:
                self.providers.setdefault(r.name, []).append((p, r))
        for versions in self.packages.values():
            versions.sort(key=_by_version, reverse=True)

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


def _read_dumpavail() -> list[dict[str, str]]:
    try:
        done = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, timeout=APT_TIMEOUT)
    except FileNotFoundError:
        raise DebianError("apt-cache is not installed: Go and Rust environments need a Debian system") from None
    if done.returncode != 0:
        raise DebianError(f"apt-cache dumpavail failed: {done.stderr.strip()[:500]}")
    records = []
    for stanza in done.stdout.split("\n\n"):
        if not stanza.startswith(tuple("Package: " + p for p in PREFIXES)):
            continue
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(": ")
            if sep and key in _FIELDS:
                fields[key] = value.strip()
        records.append(fields)
    return records


@lru_cache(maxsize=1)
def _index(key: str) -> Index:
    path = cache_root() / "debian-index" / f"{key}.json"
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError):
        records = _read_dumpavail()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(records))
        os.replace(tmp, path)
    return Index([_package(r) for r in records])


def index() -> Index:
    """The index of apt's current lists (read from `apt-cache dumpavail` once per change of
    /var/lib/apt/lists, then from `<cache>/debian-index/<key>.json`)."""
    if not shutil.which("apt-cache"):
        raise DebianError("apt-cache is not installed: Go and Rust environments need a Debian system")
    return _index(_lists_key())


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
    are the system's). Two versions of one package asked for: DebianError."""
    idx = _apt_index() if index is None else index
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
            libraries = [r for r in group if is_library(r.name)]
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


# ---- the package of a Rust crate or a Go import path ----

def crate_package(crate: str, version_req: str | None = None, index: Index | None = None) -> Package:
    """The highest librust-<crate>-dev or librust-<crate>-<version>-dev package whose crate version
    meets the cargo requirement (`1.2`, `^1.2`, `~1.2.3`, `=1.0.1`, `>=1, <3`, `1.*`)."""
    idx = _apt_index() if index is None else index
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
        raise DebianError(f"crate {crate}{asked}: no Debian package ships it ({idx.describe(stem + '-dev')})")
    return max(found, key=lambda vp: vp[0])[1]


def feature_package(package: Package, feature: str, index: Index | None = None) -> Package:
    """The package that gives crate `package` its cargo feature `feature`, at the same version:
    (librust-serde-dev, "derive") -> librust-serde+serde-derive-dev; (librust-serde-dev, "std")
    -> librust-serde-dev itself (a feature that needs no other crate is provided by the crate)."""
    idx = _apt_index() if index is None else index
    name = f"{package.name[:-len('-dev')]}+{feature.lower().replace('_', '-')}-dev"
    found = idx.provider(name, "=", package.version)
    if found is None:
        raise DebianError(f"crate feature {feature!r} of {package}: Debian has no {name} at that version "
                          f"({idx.describe(name)})")
    return found


def crate_version(debian_version: str) -> str:
    """The crate version a librust package ships: `1.0.152-2` -> `1.0.152` (no epoch, revision,
    +dfsg; `~` back to `-` for a pre-release)."""
    _, upstream, _ = _split_version(debian_version)
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


# dh-make-golang's short names of hosts (make.go, shortHostName); another host loses its last label
_GO_HOSTS = {"bazil.org": "bazil", "bitbucket.org": "bitbucket", "blitiri.com.ar": "blitiri",
             "cloud.google.com": "googlecloud", "code.google.com": "googlecode", "git.sr.ht": "sourcehut",
             "github.com": "github", "gitlab.com": "gitlab", "go.uber.org": "uber", "go4.org": "go4",
             "gocloud.dev": "gocloud", "golang.org": "golang", "google.golang.org": "google", "gopkg.in": "gopkg",
             "honnef.co": "honnef", "howett.net": "howett", "k8s.io": "k8s", "pault.ag": "pault", "rsc.io": "rsc",
             "salsa.debian.org": "debian", "sigs.k8s.io": "k8s-sigs"}


def _debian_go_names(path: str) -> list[str]:
    """The package names Debian gives an import path: dh-make-golang's (github.com/google/go-cmp ->
    golang-github-google-go-cmp-dev) and the older host-minus-last-label one (golang-go.uber-zap-dev)."""
    host, *rest = path.split("/")
    tail = [re.sub(r"[^a-z0-9.+-]", "", part.lower().replace("_", "-")).strip("-") for part in rest]
    hosts = dict.fromkeys([_GO_HOSTS.get(host, ""), host.rpartition(".")[0] or host])
    return ["golang-" + "-".join([h, *tail]).strip("-") + "-dev" for h in hosts if h]


def _homepage_path(url: str) -> str:
    return re.sub(r"^\w+://(www\.)?|/+$|\.git$", "", url).lower()


def _go_candidates(idx: Index, path: str) -> list[Package]:
    """Packages that may ship `path`, likeliest first: for each prefix of the path (longest first)
    Debian's names for it and the packages whose Go-Import-Path or Homepage it is; then those
    named after a prefix's last element (golang-github-coreos-bbolt-dev for go.etcd.io/bbolt)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(len(parts), 1, -1)]
    latest = [versions[0] for versions in idx.packages.values() if is_library(versions[0].name)]
    found: list[Package] = []
    for prefix in prefixes:
        found += [idx.packages[name][0] for name in _debian_go_names(prefix) if name in idx.packages]
        found += [p for p in latest if prefix.lower() in (p.go_import_path.lower(), _homepage_path(p.homepage))]
    for prefix in prefixes:
        last = _debian_go_names(prefix)[0].rpartition("-")[0].rpartition("-")[2]
        found += [p for p in latest if p.name.startswith("golang-") and p.name.endswith(f"-{last}-dev")]
    return list(dict.fromkeys(found))[:GO_CANDIDATES]


@lru_cache(maxsize=256)
def _go_dirs(deb: Path) -> frozenset[str]:
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, timeout=APT_TIMEOUT).stdout
    prefix = f"./{GOCODE}/"
    return frozenset(line.split(prefix, 1)[1].rstrip("/") for line in listing.splitlines() if prefix in line)


def import_path_package(import_path: str, index: Index | None = None) -> Package:
    """The golang-*-dev package that ships /usr/share/gocode/src/<import_path>. apt here has no
    Contents index (and apt-file is not installed), so the candidates come from Debian's naming,
    Go-Import-Path and Homepage (`_go_candidates`); the first whose file list (read from its
    downloaded .deb, which extract reuses) holds the path wins."""
    idx = _apt_index() if index is None else index
    path = import_path.strip("/")
    candidates = _go_candidates(idx, path)
    for p in candidates:
        if path in _go_dirs(download([p])[0]):
            return p
    tried = ", ".join(p.name for p in candidates) or "none"
    raise DebianError(f"Go import path {import_path}: no Debian golang package ships {GOCODE}/{path} "
                      f"(packages tried: {tried})")
