from .version import Version


def bump(version: Version, part: str) -> Version:
    """Return the next ``major``, ``minor`` or ``patch`` release."""
    if part == "major":
        return Version(version.major + 1, 0, 0)
    if part == "minor":
        return Version(version.major, version.minor + 1, 0)
    if part == "patch":
        if version.prerelease:
            return version.release()
        return Version(version.major, version.minor, version.patch + 1)
    raise ValueError(f"unknown part {part!r}")
