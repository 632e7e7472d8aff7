"""The Debian package of a Go import path: the golang-*-dev package that ships
/usr/share/gocode/src/<import path> (`import_path_package`). apt here has no Contents index (and
apt-file is not installed), so the candidates come from Debian's naming of Go packages
(dh-make-golang's), their Go-Import-Path and Homepage fields, and each candidate's file list."""
from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from pathlib import Path

from code_gym.tasks import debian

FAMILY = "golang-"
GOCODE = "usr/share/gocode/src"
GO_CANDIDATES = 12  # .debs downloaded at most to find the package of an import path


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


def _go_candidates(idx: debian.Index, path: str) -> list[debian.Package]:
    """Packages that may ship `path`, likeliest first: for each prefix of the path (longest first)
    Debian's names for it and the packages whose Go-Import-Path or Homepage it is; then those
    named after a prefix's last element (golang-github-coreos-bbolt-dev for go.etcd.io/bbolt)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(len(parts), 1, -1)]
    latest = [versions[0] for versions in idx.packages.values() if idx.is_library(versions[0].name)]
    found: list[debian.Package] = []
    for prefix in prefixes:
        found += [idx.packages[name][0] for name in _debian_go_names(prefix) if name in idx.packages]
        found += [p for p in latest if prefix.lower() in (p.go_import_path.lower(), _homepage_path(p.homepage))]
    for prefix in prefixes:
        last = _debian_go_names(prefix)[0].rpartition("-")[0].rpartition("-")[2]
        found += [p for p in latest if p.name.startswith("golang-") and p.name.endswith(f"-{last}-dev")]
    return list(dict.fromkeys(found))[:GO_CANDIDATES]


@lru_cache(maxsize=256)
def _go_dirs(deb: Path) -> frozenset[str]:
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                             timeout=debian.APT_TIMEOUT).stdout
    prefix = f"./{GOCODE}/"
    return frozenset(line.split(prefix, 1)[1].rstrip("/") for line in listing.splitlines() if prefix in line)


def import_path_package(import_path: str, index: debian.Index | None = None) -> debian.Package:
    """The golang-*-dev package that ships /usr/share/gocode/src/<import_path>. apt here has no
    Contents index (and apt-file is not installed), so the candidates come from Debian's naming,
    Go-Import-Path and Homepage (`_go_candidates`); the first whose file list (read from its
    downloaded .deb, which extract reuses) holds the path wins."""
    idx = debian.index(FAMILY) if index is None else index
    path = import_path.strip("/")
    candidates = _go_candidates(idx, path)
    for p in candidates:
        if path in _go_dirs(debian.download([p])[0]):
            return p
    tried = ", ".join(p.name for p in candidates) or "none"
    raise debian.DebianError(f"Go import path {import_path}: no Debian golang package ships {GOCODE}/{path} "
                      f"(packages tried: {tried})")
