"""`code-gym image build`: the default Docker image, built offline from the machine's own apt mirror.

No registry is needed: debootstrap installs a minimal Debian (git, and the Debian packages every
language's runtime asks for: `Runtime.packages`, e.g. python3 and nodejs) from the mirror the
machine's apt sources already name, and the tree is streamed into `docker import`. The image's
label PACKAGES_LABEL lists what it holds: a build reuses an image that holds every package asked
for, and the Docker backend refuses to run a runtime in an image that lacks one of its packages.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from code_gym.util.hostfs import owned_prefix

DEFAULT_IMAGE = "code-gym:bookworm"
LABEL = "code-gym"  # every image, container and volume code-gym creates carries this label
PACKAGES_LABEL = "code-gym.packages"  # the Debian packages an image holds, comma-separated
BASE_PACKAGES = ("git",)
_CHANGES = ["WORKDIR /repo", "ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1",
            f"LABEL {LABEL}=image"]


def apt_mirror(apt_dir: Path = Path("/etc/apt"), suite: str = "bookworm") -> str:
    """The Debian mirror URI that this machine's apt sources use for `suite` (deb822 or one-line format)."""
    candidates: list[tuple[str, list[str]]] = []
    for path in sorted(apt_dir.glob("sources.list.d/*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if fields.get("Enabled", "yes").lower() != "no" and "deb" in fields.get("Types", "").split():
                candidates += [(uri, fields.get("Suites", "").split()) for uri in fields.get("URIs", "").split()]
    for path in [apt_dir / "sources.list", *sorted(apt_dir.glob("sources.list.d/*.list"))]:
        if path.exists():
            for line in path.read_text().splitlines():
                m = re.match(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
                if m:
                    candidates.append((m.group(1), [m.group(2)]))
    for uri, suites in candidates:
        if suite in suites:
            return uri
    raise RuntimeError(f"no apt source for the suite {suite!r} in {apt_dir}; pass --mirror URL")


def image_exists(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def image_packages(client, tag: str) -> frozenset[str] | None:
    """The Debian packages image `tag` holds by its label (None: no such image; empty: unlabelled)."""
    import docker.errors

    try:
        labels = client.images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        return None
    return frozenset(p for p in labels.get(PACKAGES_LABEL, "").split(",") if p)


def build_image(tag: str = DEFAULT_IMAGE, packages: tuple[str, ...] = (), suite: str = "bookworm",
                mirror: str | None = None, rebuild: bool = False, log=print) -> str:
    """Build `tag` holding BASE_PACKAGES and `packages` with debootstrap + docker import, unless an
    image of that name holds them all already (or `rebuild`). Returns the tag."""
    import docker

    client = docker.from_env()
    wanted = tuple(sorted(set(BASE_PACKAGES) | set(packages)))
    held = image_packages(client, tag)
    if held is not None and held >= set(wanted) and not rebuild:
        log(f"image {tag} exists with {', '.join(wanted)} (pass --rebuild to build it again)")
        return tag
    if held is not None and not rebuild:
        log(f"image {tag} lacks {', '.join(sorted(set(wanted) - held))}: building it again")
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is missing: apt-get install debootstrap")
    mirror = mirror or apt_mirror(suite=suite)
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix=owned_prefix("rootfs")))
    try:
        log(f"debootstrap {suite} from {mirror} (about 1-2 minutes)")
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(wanted)}", suite,
                        str(root), mirror], check=True, stdout=subprocess.DEVNULL)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (root / junk).glob("*"):
                if entry.is_file():
                    entry.unlink()
        (root / "repo").mkdir(exist_ok=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-cf", "-", "."], stdout=subprocess.PIPE)
        repository, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
        client.api.import_image_from_stream(tar.stdout, repository=repository, tag=version, changes=[*_CHANGES, f"LABEL {PACKAGES_LABEL}={','.join(wanted)}"])
        if tar.wait() != 0:
            raise RuntimeError("tar of the debootstrap tree failed")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    log(f"built {tag} in {time.monotonic() - started:.0f}s")
    return tag
