"""The files a JavaScript project's grader owns: the test runners' configuration, the fields of
package.json that decide how tests run and what is installed, npm's own configuration, and any
`node_modules` inside the repository (node resolves `require` there before the environment's
packages, so a file in it would replace a test framework). The agent's changes to them never
reach the graded copy (`grader_owned`), and a run must leave them untouched (`guarded`)."""
from __future__ import annotations

import json
import posixpath
import re

# package.json fields that decide how the tests run or what is installed
PACKAGE_FIELDS = ("scripts", "jest", "mocha", "ava", "tap", "c8", "nyc", "babel", "type", "imports", "workspaces",
                  "overrides", "dependencies", "devDependencies", "optionalDependencies", "peerDependencies",
                  "bundledDependencies")
_CONFIG = re.compile(r"^(?:\.mocharc(?:\.\w+)?|jest\.config\.\w+|vitest\.config\.\w+|vitest\.workspace\.\w+|"
                     r"vite\.config\.\w+|\.taprc|\.babelrc(?:\.\w+)?|babel\.config\.\w+|\.swcrc|"
                     r"jest\.setup\.\w+|setupTests\.\w+|\.nycrc(?:\.\w+)?|\.c8rc(?:\.\w+)?)$")
NPM_CONFIGS = frozenset({".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs"})


def grader_owned(path: str, old: bytes | None, new: bytes | None) -> str | None:
    """The rule that makes the grader keep the task's own version of `path`, if any."""
    parts = path.split("/")
    name = parts[-1]
    if "node_modules" in parts[:-1] or name == "node_modules":
        return "dependencies"
    if _CONFIG.match(name) or name in NPM_CONFIGS:
        return "test-config"
    if name == "package.json" and _test_fields(old) != _test_fields(new):
        return "test-config"
    if name in ("package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"):
        return "dependencies"
    return None


def _test_fields(data: bytes | None) -> object:
    """The fields of a package.json the grader owns (None: no file; "unparseable": not JSON)."""
    if data is None:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return "unparseable"
    if not isinstance(doc, dict):
        return "unparseable"
    return {key: doc.get(key) for key in PACKAGE_FIELDS}


def guarded(path: str) -> bool:
    """Whether a test run's verdict depends on `path` staying as it is."""
    name = posixpath.basename(path)
    return name == "package.json" or name in NPM_CONFIGS or bool(_CONFIG.match(name))
