"""The workspace and its diffs: an episode's working copy of a repository (overlay or copy), the
stat-key snapshots that find what a step changed (`working_copy`), git-style diffs made in-process
(`diffs`), and the one-commit `.git` a workspace starts with (`base_commit`).
"""
