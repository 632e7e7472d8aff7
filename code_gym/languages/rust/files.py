"""The files a Rust crate's grader owns: what decides how the crate builds and what its tests are.

- `Cargo.toml` (targets, features, dependencies, profiles), `Cargo.lock` (the dependency versions
  the task's environment was made for) and `.cargo/` (cargo's configuration: rustflags, runners,
  source replacement, target directories);
- `build.rs` at the crate root (cargo runs it before compiling; a new one is picked up by name);
- `tests/` (the integration tests, and the helpers they share) and `benches/`;
- `rust-toolchain`, `rust-toolchain.toml` (another toolchain), `clippy.toml`/`rustfmt.toml` are
  harmless but the grader keeps them too, so that the task's build stays the built one.

The agent's changes to them never reach the graded copy (`grader_owned`), and a run must leave
them untouched (`guarded`). The `#[cfg(test)]` modules inside the crate's sources are the audit's."""
from __future__ import annotations

import posixpath

# the audit rules of the kept files (the adapter's `rules` holds them with the audit's)
RULES: dict[str, str] = {
    "cargo-config": "changes Cargo.toml, .cargo/ or the toolchain file: the crate's targets, features, dependencies, "
                    "profiles and cargo's configuration are the grader's",
    "cargo-lock": "changes Cargo.lock: the dependency versions are the task environment's",
    "build-script": "adds or changes build.rs: cargo runs it before compiling the crate",
    "rust-tests": "changes the integration tests (tests/) or the benchmarks (benches/)",
    "build-output": "adds files under target/: cargo's build output is never part of a patch",
}
ROOT_FILES = {"Cargo.toml": "cargo-config", "Cargo.lock": "cargo-lock", "build.rs": "build-script",
              "rust-toolchain": "cargo-config", "rust-toolchain.toml": "cargo-config"}
FOLDERS = {".cargo": "cargo-config", "tests": "rust-tests", "benches": "rust-tests", "target": "build-output"}


def grader_owned(path: str, old: bytes | None, new: bytes | None) -> str | None:
    """The rule that makes the grader keep the task's own version of `path`, if any."""
    parts = path.split("/")
    if len(parts) == 1 and parts[0] in ROOT_FILES:
        return ROOT_FILES[parts[0]]
    if parts[0] in FOLDERS:
        return FOLDERS[parts[0]]
    if posixpath.basename(path) in ("Cargo.toml", "Cargo.lock") or ".cargo" in parts[:-1]:
        return "cargo-config"  # a nested manifest makes a workspace member or a path dependency
    return None


def guarded(path: str) -> bool:
    """Whether a test run's verdict depends on `path` staying as it is (not Cargo.lock: cargo itself
    writes one where a task has none, and what it resolved is decided before any crate code runs)."""
    parts = path.split("/")
    return (len(parts) == 1 and parts[0] in ROOT_FILES and parts[0] != "Cargo.lock") or \
        parts[0] in (".cargo", "tests", "benches")
