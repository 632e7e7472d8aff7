"""Debian's library packages by family (Go's golang-*, Rust's librust-*): the index from apt, Depends
closures with features, versions and virtual packages, dpkg's version order, and extraction that
leaves a folder complete or not at all; and the languages' lookups on top (a crate's package and
cargo requirements in code_gym.languages.rust.crates, an import path's package in
code_gym.languages.go.packages). Uses the machine's real apt lists and Debian's mirror."""
from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from sandbox_backends import IN_CI

from code_gym.languages.go import packages as go_packages
from code_gym.languages.rust import crates
from code_gym.tasks import debian
from code_gym.tasks.debian import DebianError, Package, Relation


def _index(family: str, name: str):
    if not shutil.which("apt-cache") or not shutil.which("dpkg-deb"):
        (pytest.fail if IN_CI else pytest.skip)("apt-cache/dpkg-deb not installed: these tests need a Debian system")
    idx = debian.index(family)
    if name not in idx:
        (pytest.fail if IN_CI else pytest.skip)(f"apt's lists have no {name} (run apt-get update)")
    return idx


@pytest.fixture(scope="module")
def idx():
    """Rust's family."""
    return _index("librust-", "librust-serde-dev")


@pytest.fixture(scope="module")
def go_idx():
    return _index("golang-", "golang-github-google-go-cmp-dev")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private code-gym cache: downloads land here, never in the user's cache."""
    monkeypatch.setenv("CODE_GYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("a, b, sign", [
    ("1.0", "1.0", 0), ("1.0-1", "1.0-2", -1), ("1:0.1", "2.0", 1), ("1.0~rc1", "1.0", -1),
    ("1.0.152-2", "1.0.103-~~", 1), ("1.0-~~", "1.0-0", -1), ("1.0", "1.0-0", 0), ("1.0a", "1.0", 1),
    ("1.0+dfsg-1", "1.0-1", 1), ("0.10", "0.9", 1), ("1.0.0~~", "1.0.0~", -1), ("2.0-1+b1", "2.0-1", 1),
])
def test_version_order_is_dpkgs(a, b, sign):
    got = debian.compare_versions(a, b)
    assert (got > 0) - (got < 0) == sign
    if shutil.which("dpkg"):
        op = {-1: "lt", 0: "eq", 1: "gt"}[sign]
        assert subprocess.run(["dpkg", "--compare-versions", a, op, b]).returncode == 0


@pytest.mark.parametrize("version, req, ok", [
    ("1.2.3", "1.2", True), ("2.0.0", "1.2", False), ("0.2.5", "^0.2.3", True), ("0.3.0", "^0.2.3", False),
    ("0.0.4", "^0.0.3", False), ("1.2.9", "~1.2.3", True), ("1.3.0", "~1.2.3", False), ("1.9.0", "~1", True),
    ("1.0.1", "=1.0.1", True), ("1.0.2", "=1.0.1", False), ("1.5.0", ">=1, <3", True), ("3.0.0", ">=1, <3", False),
    ("1.4.0", "1.*", True), ("2.0.0", "1.*", False), ("7.1.1", "*", True), ("1.2.0", ">1.1", True),
    ("1.1.9", ">1.1", False), ("1.2.9", "<=1.2", True), ("1.3.0", "<=1.2", False),
])
def test_cargo_requirements(version, req, ok):
    assert crates.matches_req(version, req) is ok


def test_relations_parse_versions_and_alternatives():
    pkg = debian._package({"Package": "golang-x-dev", "Version": "1-1",
                           "Depends": "golang-go (>= 2:1.19~1) | gccgo-go, librust-foo-1+std-dev (>= 1.2-~~)",
                           "Provides": "librust-x+a-dev (= 1-1), librust-x-1-dev"})
    assert pkg.depends == ((Relation("golang-go", ">=", "2:1.19~1"), Relation("gccgo-go")),
                           (Relation("librust-foo-1+std-dev", ">=", "1.2-~~"),))
    assert pkg.provides == (Relation("librust-x+a-dev", "=", "1-1"), Relation("librust-x-1-dev"))


def test_an_index_holds_its_family_only(idx, go_idx):
    assert all(name.startswith("librust-") for name in idx.packages) and len(idx) > 1000
    assert all(name.startswith("golang-") for name in go_idx.packages) and len(go_idx) > 1000
    with pytest.raises(ValueError, match="prefix ending in '-'"):
        debian.index("librust")


def test_closure_of_semver(idx):
    names = [p.name for p in debian.closure(["librust-semver-dev"], idx)]
    assert names[0] == "librust-semver-dev"
    assert all(idx.is_library(n) for n in names)


def test_closure_resolves_features_to_their_packages(idx):
    """librust-serde+derive-dev is virtual: librust-serde+serde-derive-dev provides it and brings
    serde itself and serde_derive's proc-macro stack."""
    packages = debian.closure(["librust-serde+derive-dev"], idx)
    names = {p.name for p in packages}
    assert {"librust-serde-dev", "librust-serde-derive-dev", "librust-syn-dev", "librust-quote-dev"} <= names
    assert len(names) == len(packages)
    for p in packages:  # every chosen version meets every relation on it in the closure
        for group in p.depends:
            assert any(r.name not in names or debian.satisfies(next(q.version for q in packages if q.name == r.name),
                                                               r.op, r.version) for r in group)


def test_versioned_virtual_dependency_picks_a_provider_that_meets_it(idx):
    serde = idx.packages["librust-serde-dev"][0]
    assert idx.provider("librust-serde-1+std-dev", ">=", "1.0.0-~~") == serde
    assert idx.provider("librust-serde-1+std-dev", ">=", "99.0") is None


def test_go_closure_drops_the_toolchain(go_idx):
    packages = debian.closure(["golang-github-google-go-cmp-dev"])  # the family's index, from the name
    assert packages[0].name == "golang-github-google-go-cmp-dev"
    assert all(go_idx.is_library(p.name) for p in packages)
    assert "golang-go" not in {p.name for p in packages}


def test_unknown_package_is_named(idx):
    with pytest.raises(DebianError, match="librust-no-such-crate-dev: no such Debian package"):
        debian.closure(["librust-no-such-crate-dev"], idx)


def test_unmet_dependency_names_what_asked_for_it(idx):
    asker = Package("librust-asker-dev", "1.0-1", "all", "", ((Relation("librust-serde-1-dev", ">=", "99"),),), ())
    real = debian.Index([asker] + [v for vs in idx.packages.values() for v in vs], "librust-")
    with pytest.raises(DebianError, match=r"librust-serde-1-dev \(>= 99\): needed by librust-asker-dev 1.0-1"):
        debian.closure(["librust-asker-dev"], real)


@pytest.mark.parametrize("path, names", [
    ("github.com/google/go-cmp", ["golang-github-google-go-cmp-dev"]),
    ("golang.org/x/net", ["golang-golang-x-net-dev"]),
    ("go.uber.org/zap", ["golang-uber-zap-dev", "golang-go.uber-zap-dev"]),
    ("github.com/BurntSushi/toml", ["golang-github-burntsushi-toml-dev"]),
    ("github.com/prometheus/client_golang", ["golang-github-prometheus-client-golang-dev"]),
])
def test_debian_go_names(path, names):
    assert go_packages._debian_go_names(path) == names


def test_crate_package(idx):
    assert crates.crate_package("serde", "1.0.100", idx).name == "librust-serde-dev"
    assert crates.crate_package("Rand_Core", None, idx).name == "librust-rand-core-dev"
    assert crates.crate_package("clap", "2", idx).name == "librust-clap-2-dev"
    assert crates.crate_package("clap", ">=3", idx).name == "librust-clap-dev"
    with pytest.raises(DebianError, match="crate serde >=99"):
        crates.crate_package("serde", ">=99", idx)


def test_extract_unpacks_the_closure(idx, cache, tmp_path):
    packages = debian.closure(["librust-semver-dev"], idx)
    into = debian.extract(packages, tmp_path / "env")
    crates = [p.name for p in (into / "usr/share/cargo/registry").iterdir()]
    assert any(name.startswith("semver-") for name in crates)
    assert sorted(p.name for p in (cache / "debian-downloads").iterdir()) == sorted(p.deb_name for p in packages)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".env-")] == []


def test_extract_failure_leaves_no_folder(idx, cache, tmp_path):
    good = idx.packages["librust-semver-dev"][0]
    broken = idx.packages["librust-serde-dev"][0]
    (cache / "debian-downloads").mkdir(parents=True)
    (cache / "debian-downloads" / broken.deb_name).write_bytes(b"not a deb")
    with pytest.raises(DebianError, match=f"{broken.name} .*dpkg-deb -x"):
        debian.extract([good, broken], tmp_path / "env")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def test_download_failure_is_named(idx, cache, tmp_path):
    fake = Package("librust-semver-dev", "0.0.0-0", "amd64", "", (), ())
    with pytest.raises(DebianError, match="librust-semver-dev 0.0.0-0: apt-get download failed"):
        debian.extract([fake], tmp_path / "env")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


def test_import_path_package(go_idx, cache):
    idx = go_idx
    assert go_packages.import_path_package("github.com/google/go-cmp/cmp", idx).name == "golang-github-google-go-cmp-dev"
    if "golang-go.uber-zap-dev" in idx.packages:  # a vanity path under Debian's older naming
        assert go_packages.import_path_package("go.uber.org/zap", idx).name == "golang-go.uber-zap-dev"
    with pytest.raises(DebianError, match="example.com/nothing/here"):
        go_packages.import_path_package("example.com/nothing/here", idx)


def test_feature_package(idx):
    serde = crates.crate_package("serde", "1", idx)
    assert crates.feature_package(serde, "derive", idx).name == "librust-serde+serde-derive-dev"
    assert crates.feature_package(serde, "std", idx) == serde
    with pytest.raises(DebianError, match="crate feature 'no_such_feature' of librust-serde-dev"):
        crates.feature_package(serde, "no_such_feature", idx)


def test_two_versions_of_one_package_is_an_error(idx):
    old = Package("librust-pin-dev", "1.0-1", "all", "", (), ())
    new = Package("librust-pin-dev", "2.0-1", "all", "", (), ())
    a = Package("librust-a-dev", "1-1", "all", "", ((Relation("librust-pin-dev", "<<", "2"),),), ())
    b = Package("librust-b-dev", "1-1", "all", "", ((Relation("librust-pin-dev", ">=", "2"),),), ())
    with pytest.raises(DebianError, match=r"librust-b-dev 1-1, but the closure already has librust-pin-dev 1.0-1"):
        debian.closure(["librust-a-dev", "librust-b-dev"], debian.Index([old, new, a, b], "librust-"))


def test_version_order_agrees_with_dpkg_on_random_versions():
    """Random versions from the characters that matter (digits, letters, ~ + . -, epochs) against
    `dpkg --compare-versions` itself."""
    if not shutil.which("dpkg"):
        pytest.skip("dpkg is not installed")
    rng = random.Random(34)

    def version():
        upstream = rng.choice("0123456789") + "".join(rng.choice("0123456789ab~+.") for _ in range(rng.randint(1, 6)))
        epoch = f"{rng.randint(0, 2)}:" if rng.random() < 0.2 else ""
        revision = f"-{rng.choice(['1', '0', '~~', '2+b1', '1~bpo'])}" if rng.random() < 0.6 else ""
        return epoch + upstream + revision

    for _ in range(60):
        a, b = version(), version()
        got = debian.compare_versions(a, b)
        op = "lt" if got < 0 else "eq" if got == 0 else "gt"
        assert subprocess.run(["dpkg", "--compare-versions", a, op, b]).returncode == 0, (a, op, b)
