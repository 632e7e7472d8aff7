"""What a rollout writes: trajectories, one `credit.Trajectory` JSON line each (`credit.load_jsonl`
reads the file), and beside them, when asked, one `EpisodeRecord` line per trajectory, in the same
order, with what credit does not read: the sample number, whether the episode resolved the task,
its time, the server's token counts and what the client did about the model's context.

The records of `DIR/NAME.jsonl` are `DIR/NAME.episodes.jsonl` (`records_path`). `code-gym eval`
writes both and resumes from them; `code-gym export` and `code-gym report` read the records when
they are there.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import credit

TRUNCATED, SUBMITTED, REFUSED = "truncated", "submitted", "refused"
CONTEXT_NOTE = "[code-gym context]"  # opens the note a context event leaves in the step's observation


@dataclass(frozen=True)
class ContextEvent:
    """What the client did at one step because the conversation outgrew the model's context.

    action: TRUNCATED (the contents of older tool results were elided, the episode went on),
      SUBMITTED (the client submitted for the agent: strategy "submit", or nothing left to elide)
      or REFUSED (the server refused the request as too long; the client submitted).
    step: the step (0-based) whose request it concerned.
    tokens: the client's estimate of the prompt's tokens before (None for REFUSED: the server's
      count is in its message).
    budget: the prompt tokens allowed, the context limit less the reply's max_tokens (None for
      REFUSED without a client-side limit).
    elided: messages whose content was elided; kept: the estimate after eliding.
    """
    action: str
    step: int
    tokens: int | None = None
    budget: int | None = None
    elided: int = 0
    kept: int | None = None

    def note(self) -> str:
        """The sentence recorded in the step's observation (for TRUNCATED, also what the model read)."""
        if self.action == TRUNCATED:
            return (f"{CONTEXT_NOTE} The contents of {self.elided} earlier tool result(s) were elided to fit the "
                    f"model's context (about {self.tokens:,} -> {self.kept:,} prompt tokens; budget {self.budget:,}).")
        if self.action == SUBMITTED:
            return (f"{CONTEXT_NOTE} The conversation (about {self.tokens:,} prompt tokens) outgrew the model's "
                    f"context budget of {self.budget:,} tokens: the client submitted for the agent.")
        return f"{CONTEXT_NOTE} The server refused the conversation as too long: the client submitted for the agent."

    @property
    def ended(self) -> bool:
        """Whether it ended the episode (the client submitted)."""
        return self.action != TRUNCATED


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode, beside its trajectory line."""
    task_id: str
    sample: int  # which of the task's samples (0-based); (task_id, sample) names the episode
    resolved: bool
    reward: float
    steps: int
    seconds: float  # the episode's wall time, grading included
    prompt_tokens: int | None = None  # summed over its requests, from the server's `usage` (None: not given)
    completion_tokens: int | None = None
    context: tuple[ContextEvent, ...] = ()
    model: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "context": [asdict(e) for e in self.context]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EpisodeRecord":
        return cls(**{**data, "context": tuple(ContextEvent(**e) for e in data.get("context", ()))})


def records_path(trajectories: str | Path) -> Path:
    """Where the episode records of a trajectories file live: NAME.jsonl -> NAME.episodes.jsonl."""
    path = Path(trajectories)
    return path.with_name(f"{path.stem}.episodes.jsonl")


@dataclass(frozen=True)
class Rollouts:
    """A trajectories file read back, with its episode records (None when it has none)."""
    path: Path
    trajectories: list[credit.Trajectory]
    records: list[EpisodeRecord] | None = None

    def resolved(self) -> list[bool]:
        """Each episode's verdict; a ValueError saying what to do when the file has no records."""
        if self.records is None:
            raise ValueError(f"{self.path} has no episode records ({records_path(self.path).name}, written by "
                             "`code-gym eval`), so whether each episode resolved its task is not known: filter by "
                             "reward instead (--min-reward 1.0)")
        return [r.resolved for r in self.records]


def load_rollouts(path: str | Path) -> Rollouts:
    """Trajectories and, when the records file is there, their records (checked to line up)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such trajectories file (JSON lines, as `code-gym rollout` or `eval` write)")
    trajectories = credit.load_jsonl(path)
    side = records_path(path)
    if not side.is_file():
        return Rollouts(path, trajectories)
    records = [EpisodeRecord.from_dict(json.loads(line)) for line in _lines(side)]
    if [r.task_id for r in records] != [t.task_id for t in trajectories]:
        raise ValueError(f"{side} does not line up with {path} ({len(records)} records, {len(trajectories)} "
                         "trajectories, or other task ids): they were edited apart; move the records away to "
                         "read the trajectories alone")
    return Rollouts(path, trajectories, records)


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def finished(path: str | Path) -> set[tuple[str, int]]:
    """The (task id, sample) pairs a resumable rollout already holds (none without records)."""
    side = records_path(path)
    if not side.is_file():
        return set()
    return {(r["task_id"], r["sample"]) for r in map(json.loads, _lines(side))}


def recorded_models(path: str | Path) -> set[str]:
    """The model names in a trajectories file's records."""
    side = records_path(path)
    return {json.loads(line).get("model", "") for line in _lines(side)} if side.is_file() else set()


class RolloutWriter:
    """Finished episodes to a trajectories file and, when `records` is set, their records file.

    A fresh run (`append=False`) opens the files, replacing existing ones, only when the first
    episode is ready, so a run that finishes none (a dead server) leaves them as they were. An
    appending run first cuts what an interrupted run left half-written: a last line without its
    newline, and a trajectory line whose record line was never written. Each line goes out in one
    write and is flushed, trajectory first, so the finished episodes of a run that dies midway are
    readable."""

    def __init__(self, path: Path, records: bool = False, append: bool = False):
        self.path, self.records, self.append = Path(path), records, append
        self._files: list[BinaryIO] | None = None

    def write(self, trajectory: credit.Trajectory, record: EpisodeRecord) -> None:
        if self._files is None:
            self._files = self._open()
        lines = [trajectory.to_dict()] + ([record.to_dict()] if self.records else [])
        for file, data in zip(self._files, lines):
            file.write(json.dumps(data, ensure_ascii=False).encode() + b"\n")
            file.flush()

    def _open(self) -> list[BinaryIO]:
        paths = [self.path] + ([records_path(self.path)] if self.records else [])
        if self.append:
            _cut_partial_lines(paths)
        return [p.open("ab" if self.append else "wb") for p in paths]

    def close(self) -> None:
        for file in self._files or ():
            file.close()


def _cut_partial_lines(paths: list[Path]) -> None:
    """Cut a half-written last line from each file, then the trajectory lines past the records'."""
    counts = [_keep_whole_lines(p) for p in paths]
    if len(paths) == 2 and counts[0] > counts[1]:
        _truncate_to_lines(paths[0], counts[1])


def _keep_whole_lines(path: Path) -> int:
    """Drop a last line that has no newline; the number of lines left."""
    if not path.is_file():
        return 0
    data = path.read_bytes()
    whole = data[:data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        path.write_bytes(whole)
    return whole.count(b"\n")


def _truncate_to_lines(path: Path, lines: int) -> None:
    data = path.read_bytes()
    end = 0
    for _ in range(lines):
        end = data.index(b"\n", end) + 1
    path.write_bytes(data[:end])
