"""The records that cross the boundary between an environment and the credit estimators.

`Trajectory` / `Step` are what an environment produces (and what `load_jsonl` reads back);
`Result`, `StepCredit` and `Anchor` are what every estimator returns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Optional, Union

import numpy as np

from credit._tensor import to_numpy
from credit.offsets import check_listed_offsets, checked_offsets

Provenance = tuple  # (path: str, line: int, start: int, end: int)
CallSpan = tuple  # (start: int, end: int)
EditSpan = tuple  # (call: int, kind: str, start: int, end: int)
LineCall = tuple  # (path: str, kind: str, line: int, call: int)
EDIT_KINDS = ("added", "deleted")

_STEP_KEYS = ("action", "diff", "reward", "token_offsets", "provenance", "observation", "calls", "edits",
              "line_calls", "token_ids", "logprobs")
_STEP_KEY_SET = frozenset(_STEP_KEYS)
_TRAJECTORY_KEYS = ("task_id", "steps", "reward")


@dataclass(frozen=True, eq=False)
class Step:
    """One turn of an episode.

    Attributes:
      action: the policy's response text for this turn (thought and tool calls).
      diff: the unified diff (git format) this step made to the repository; "" when it changed
        nothing.
      reward: the environment's reward for this step (0.0 when only the outcome is rewarded).
      token_offsets: (n_tokens, 2) integer (start, end) character spans of the response tokens in
        `action`, as a fast tokenizer's offset mapping gives them; a numpy array, a torch tensor
        (kept as given: token advantages then come back as tensors) or a list of pairs. Zero-width
        (start == end) entries, e.g. special tokens, are allowed anywhere; the others must be in
        order. None when the tokens are not known. (The estimators, given a batch of dicts, keep
        list offsets as lists and check in full only the tokens they read: see `credit.offsets`.)
      provenance: spans from the environment that say which characters of `action` wrote which
        added diff line: tuples (path, line, start, end), `line` being the 1-based line number in
        the new file of `path` (the target line number of the `+` line), `action[start:end]` the
        characters it came from (inside the JSON string, escaped, for JSON tool calls). Dicts with
        those keys are accepted.
      observation: the observation the policy saw before this action (GiGPO groups on it).
      calls: the tool calls of the action, (start, end) character spans in it, each the whole
        call with its tool name (DiDPO's cover="call" credits them). Dicts {start, end} accepted.
      edits: the edit arguments of the calls, (call, kind, start, end): `action[start:end]` is the
        text that call number `call` (an index into `calls`) writes (kind "added": new_str,
        file_text, a heredoc body, a script) or replaces (kind "deleted": old_str), inside the
        JSON string for JSON tool calls (cover="edit"). Dicts {call, kind, start, end} accepted.
      line_calls: which call made each changed line, (path, kind, line, call): the line of
        `path` with that number (kind "added": in the new file, "deleted": in the old one) was
        changed by call number `call`. Lines whose text is not in the action (a `sed` edit) get
        their call's span (cover="call") or edit arguments of their kind (cover="edit") this way.
        Dicts {path, kind, line, call} accepted.
      token_ids: the response's token ids, one per entry of `token_offsets` (the tokens the
        policy sampled), as an int64 array; None when not recorded.
      logprobs: the sampling log-probability of each of those tokens, float64; None when not
        recorded. The estimators do not read either; trainers do (importance ratios, KL).
    """

    action: str
    diff: str
    reward: float = 0.0
    token_offsets: Any = None
    provenance: Optional[tuple[Provenance, ...]] = None
    observation: Optional[str] = None
    calls: Optional[tuple[CallSpan, ...]] = None
    edits: Optional[tuple[EditSpan, ...]] = None
    line_calls: Optional[tuple[LineCall, ...]] = None
    token_ids: Any = None
    logprobs: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.action, str):
            raise TypeError(f"Step.action must be the response text (str), got {type(self.action).__name__}")
        if not isinstance(self.diff, str):
            raise TypeError(
                f"Step.diff must be a unified diff (str), got {type(self.diff).__name__}; "
                "use '' for a step that changed nothing")
        object.__setattr__(self, "reward", _finite(self.reward, "Step.reward"))
        if self.observation is not None and not isinstance(self.observation, str):
            raise TypeError(f"Step.observation must be a str or None, got {type(self.observation).__name__}")
        if self.token_offsets is not None:
            object.__setattr__(self, "token_offsets", checked_offsets(self.token_offsets, self.action))
        if self.provenance is not None:
            object.__setattr__(self, "provenance", _checked_provenance(self.provenance, self.action))
        if self.calls is not None or self.edits is not None or self.line_calls is not None:
            _check_calls(self)
        if self.token_ids is not None:
            object.__setattr__(self, "token_ids", _per_token(self.token_ids, "token_ids", np.int64, self.token_offsets))
        if self.logprobs is not None:
            object.__setattr__(self, "logprobs", _per_token(self.logprobs, "logprobs", np.float64, self.token_offsets))

    @property
    def offsets(self) -> Optional[np.ndarray]:
        """`token_offsets` as an (n_tokens, 2) int64 numpy array (None when not given)."""
        return None if self.token_offsets is None else to_numpy(self.token_offsets, np.int64).reshape(-1, 2)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], **override: Any) -> "Step":
        """A Step from a dict with the attribute names as keys (`action` and `diff` required);
        keyword arguments replace fields of the dict."""
        if isinstance(d, Step):
            return d
        if not isinstance(d, Mapping):
            raise TypeError(f"a step must be a credit.Step or a dict, got {type(d).__name__}")
        unknown = d.keys() - _STEP_KEY_SET
        if unknown:
            raise ValueError(f"step has unknown keys {sorted(unknown)}; allowed keys: {list(_STEP_KEYS)}")
        for key in ("action", "diff"):
            if key not in d:
                raise ValueError(
                    f"step is missing '{key}' (required keys: action, diff; the diff is '' "
                    "when the step changed nothing)")
        return cls(**{**d, **override}) if override else cls(**d)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict that `Step.from_dict` reads back."""
        offsets = self.offsets
        return {
            "action": self.action,
            "diff": self.diff,
            "reward": self.reward,
            "token_offsets": None if offsets is None else offsets.tolist(),
            "provenance": None if self.provenance is None else [
                {"path": p, "line": ln, "start": s, "end": e} for p, ln, s, e in self.provenance],
            "observation": self.observation,
            "calls": None if self.calls is None else [{"start": s, "end": e} for s, e in self.calls],
            "edits": None if self.edits is None else [
                {"call": c, "kind": k, "start": s, "end": e} for c, k, s, e in self.edits],
            "line_calls": None if self.line_calls is None else [
                {"path": p, "kind": k, "line": ln, "call": c} for p, k, ln, c in self.line_calls],
            "token_ids": None if self.token_ids is None else to_numpy(self.token_ids).tolist(),
            "logprobs": None if self.logprobs is None else to_numpy(self.logprobs).tolist(),
        }


@dataclass(frozen=True, eq=False)
class Trajectory:
    """One episode on one task.

    Attributes:
      task_id: the task (prompt) the episode solved; trajectories with equal ids form one group.
      steps: the episode's steps, in order.
      reward: the outcome reward of the episode (counted at its last step by the step returns).
    """

    task_id: Union[str, int]
    steps: tuple[Step, ...]
    reward: float

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, (str, int)) or isinstance(self.task_id, bool):
            raise TypeError(f"Trajectory.task_id must be a str or int, got {type(self.task_id).__name__}")
        if isinstance(self.steps, (str, bytes)) or not isinstance(self.steps, Iterable):
            raise TypeError("Trajectory.steps must be a sequence of credit.Step (or dicts)")
        steps = []
        for t, s in enumerate(self.steps):
            try:
                steps.append(Step.from_dict(s))
            except (TypeError, ValueError) as err:
                raise type(err)(f"task {self.task_id!r}, step {t}: {err}") from None
        object.__setattr__(self, "steps", tuple(steps))
        object.__setattr__(self, "reward", _finite(self.reward, "Trajectory.reward"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Trajectory":
        """A Trajectory from a dict {task_id, steps: [step dicts], reward}."""
        if isinstance(d, Trajectory):
            return d
        if not isinstance(d, Mapping):
            raise TypeError(f"a trajectory must be a credit.Trajectory or a dict, got {type(d).__name__}")
        missing = [k for k in _TRAJECTORY_KEYS if k not in d]
        if missing:
            raise ValueError(f"trajectory is missing {missing}; required keys: {list(_TRAJECTORY_KEYS)}")
        unknown = set(d) - set(_TRAJECTORY_KEYS)
        if unknown:
            raise ValueError(
                f"trajectory has unknown keys {sorted(unknown)}; allowed keys: {list(_TRAJECTORY_KEYS)}")
        return cls(task_id=d["task_id"], steps=d["steps"], reward=d["reward"])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict that `Trajectory.from_dict` reads back."""
        return {"task_id": self.task_id, "steps": [s.to_dict() for s in self.steps], "reward": self.reward}


def load_jsonl(path: Union[str, PathLike]) -> list[Trajectory]:
    """Trajectories from a JSON-lines file, one `Trajectory.to_dict()` object per line."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(Trajectory.from_dict(json.loads(line)))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{path}, line {n}: {err}") from None
    return out


def dump_jsonl(trajectories: Iterable[Trajectory], path: Union[str, PathLike]) -> None:
    """Write trajectories as JSON lines that `load_jsonl` reads back."""
    with open(path, "w", encoding="utf-8") as f:
        for traj in trajectories:
            f.write(json.dumps(Trajectory.from_dict(traj).to_dict(), ensure_ascii=False) + "\n")


def as_trajectories(trajectories: Iterable[Any]) -> list[Trajectory]:
    """Trajectory objects from Trajectory objects or dicts (the estimators' input coercion).

    The token offsets (and token ids, logprobs) that dicts give as lists are kept as given, after
    `credit.offsets.check_listed_offsets` (ids and logprobs: their count): reading a batch's
    lists costs more than all the rest of DiDPO, and most tokens need only their count. The
    estimators read the offsets where they need them (`credit.offsets.token_windows`).
    """
    if isinstance(trajectories, (Trajectory, Mapping)):
        raise TypeError("pass a list of trajectories, not a single trajectory")
    out: list[Trajectory] = []
    for i, t in enumerate(trajectories):
        try:
            out.append(t if isinstance(t, Trajectory) else _trajectory_of_dict(t))
        except (TypeError, ValueError) as err:
            raise type(err)(f"trajectory {i}: {err}") from None
    if not out:
        raise ValueError("no trajectories given: pass at least one credit.Trajectory")
    return out


_LISTED = ("token_offsets", "token_ids", "logprobs")


def _trajectory_of_dict(d: Any) -> Trajectory:
    """A Trajectory from a dict, its steps' list offsets, ids and logprobs kept as lists."""
    if not isinstance(d, Mapping) or not isinstance(d.get("steps"), (list, tuple)):
        return Trajectory.from_dict(d)
    steps = []
    for t, s in enumerate(d["steps"]):
        if (type(s) is dict or isinstance(s, Mapping)) and type(s.get("token_offsets")) in (list, tuple):
            try:
                s = _plain_step(s) or _step_of_listed(s)
            except (TypeError, ValueError) as err:
                raise type(err)(f"task {d.get('task_id')!r}, step {t}: {err}") from None
        steps.append(s)
    task_id, reward = d.get("task_id"), d.get("reward")
    if (len(d) == 3 and type(task_id) in (str, int) and type(reward) in (float, int) and math.isfinite(reward)
            and all(type(s) is Step for s in steps)):  # what Trajectory.from_dict would check, at once
        traj = object.__new__(Trajectory)
        traj.__dict__.update(task_id=task_id, steps=tuple(steps), reward=float(reward))
        return traj
    return Trajectory.from_dict({**d, "steps": steps})


_PLAIN_KEYS = frozenset(("action", "diff", "reward", "token_offsets", "observation"))
_NO_EXTRAS = {k: None for k in _STEP_KEYS[_STEP_KEYS.index("observation") + 1:]}


def _plain_step(d: Mapping[str, Any]) -> Optional[Step]:
    """The Step of a plain dict {action, diff, reward, token_offsets: a list, observation} (the
    other keys absent or None), built without the dataclass's __init__ (which costs more than the
    checks: 1,536 steps a batch); None for any other dict, which `_step_of_listed` then reads. The
    checks are `Step.__post_init__`'s for these fields, the offsets' `check_listed_offsets`."""
    action, diff, offsets = d.get("action"), d.get("diff"), d.get("token_offsets")
    reward, observation = d.get("reward", 0.0), d.get("observation")
    if (type(action) is not str or type(diff) is not str or type(reward) not in (float, int)
            or (observation is not None and type(observation) is not str)):
        return None
    if len(d) != 3 + ("reward" in d) + ("observation" in d) and (
            not d.keys() <= _STEP_KEY_SET or any(d[k] is not None for k in d.keys() - _PLAIN_KEYS)):
        return None
    reward = float(reward)
    if not math.isfinite(reward):
        return None
    check_listed_offsets(offsets, action)
    step = object.__new__(Step)
    step.__dict__.update(action=action, diff=diff, reward=reward, token_offsets=offsets, provenance=None,
                         observation=observation, **_NO_EXTRAS)  # in field order, as the dataclass sets them
    return step


def _step_of_listed(d: Mapping[str, Any]) -> Step:
    """A Step from a dict whose token_offsets is a list: the list kept after the cheap checks, and
    so are token_ids and logprobs given as lists (their count checked)."""
    listed = {k: d[k] for k in _LISTED if isinstance(d.get(k), (list, tuple))}
    step = Step.from_dict(d, **dict.fromkeys(listed))  # the lists left out of the full checks
    offsets = listed["token_offsets"]
    check_listed_offsets(offsets, step.action)
    for name, values in listed.items():
        object.__setattr__(step, name, values)
    for name in ("token_ids", "logprobs"):
        values = getattr(step, name)
        if values is not None and len(values) != len(offsets):
            raise ValueError(f"{name} has {len(values)} entries but token_offsets has {len(offsets)}: "
                             "give one per token")
    logprobs = step.logprobs
    if logprobs is not None and len(logprobs):  # as a Step checks them, in one pass (fsum)
        try:
            finite = math.isfinite(math.fsum(logprobs))
        except (TypeError, OverflowError):
            finite = False
        if not finite:
            _per_token(logprobs, "logprobs", np.float64, None)  # raises, naming the entry
            raise ValueError("logprobs must be finite numbers, one per token")
    return step


@dataclass(frozen=True, eq=False)
class Anchor:
    """A group of similar sub-diffs (DiDPO) or of identical observations (GiGPO) in one task.

    Attributes:
      task_id: the task whose trajectories share it.
      kind: "added" or "deleted" lines (DiDPO), "observation" (GiGPO).
      rows: (n,) step rows (indices into `Result.steps`) of its occurrences, one per step.
      trajectories: (n,) trajectory index of each occurrence.
      steps: (n,) step index (inside its trajectory) of each occurrence.
      advantage: (n,) the diff advantage A^D (GiGPO: step advantage A^S) of each occurrence.
      gs: groupability score phi(mean_lines) * psi(size) (NaN for GiGPO).
      mean_lines: mean number of compared (non-blank, non-comment) lines per occurrence.
      size: the group size n that psi saw (rows, or distinct trajectories with count="trajectories").
      preview: the first lines of the representative occurrence.
    """

    task_id: Union[str, int]
    kind: str
    rows: np.ndarray
    trajectories: np.ndarray
    steps: np.ndarray
    advantage: np.ndarray
    gs: float
    mean_lines: float
    size: int
    preview: str


@dataclass(frozen=True, eq=False)
class StepCredit:
    """Per-step quantities: one row per step, trajectories in input order, steps in order.

    Attributes:
      trajectory: (S,) trajectory index of each row.
      index: (S,) step index t of each row inside its trajectory.
      returns: (S,) step returns G_t.
      advantage: (S,) the step-level term added to every token of the row (GiGPO: omega * A^S;
        zero for the other estimators).
      diff_row: (K,) row of each anchor occurrence (DiDPO; empty otherwise).
      diff_anchor: (K,) index into `Result.anchors` of each occurrence.
      diff_advantage: (K,) diff advantage A^D of each occurrence.
    """

    trajectory: np.ndarray
    index: np.ndarray
    returns: np.ndarray
    advantage: np.ndarray
    diff_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    diff_anchor: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    diff_advantage: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))


@dataclass(frozen=True, eq=False)
class Result:
    """What every estimator returns.

    Attributes:
      estimator: the estimator's registry name.
      episode: (N,) episode advantage A^E of each trajectory.
      steps: per-step returns and advantages (see `StepCredit`).
      tokens: tokens[i][t] is the per-token advantage array of step t of trajectory i, of length
        len(token_offsets) (a torch tensor when the offsets were one), or None when the step had
        no token offsets.
      anchors: the anchor groups.
      stats: timings (ms), coverage and a group-size summary.
    """

    estimator: str
    episode: np.ndarray
    steps: StepCredit
    tokens: list[list[Any]]
    anchors: tuple[Anchor, ...]
    stats: dict[str, Any]


def _finite(x: Any, name: str) -> float:
    if isinstance(x, (str, bytes)):  # float("1") would take it: a reward read from text unparsed
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def _per_token(values: Any, name: str, dtype: Any, offsets: Any) -> np.ndarray:
    """`values` (token ids or logprobs) as a 1-D array of `dtype`, one per token of `offsets`."""
    try:
        arr = to_numpy(values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a 1-D sequence of numbers, one per token ({err})") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one entry per token), got shape {arr.shape}")
    kind = "iu" if dtype is np.int64 else "iuf"
    if arr.size and arr.dtype.kind not in kind:
        raise ValueError(f"{name} must be {'integers' if dtype is np.int64 else 'numbers'}, got dtype {arr.dtype}")
    arr = arr.astype(dtype, copy=False)
    if dtype is np.float64 and not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {arr[~np.isfinite(arr)][0]} at entry "
                         f"{int(np.flatnonzero(~np.isfinite(arr))[0])}")
    if offsets is not None and len(offsets) != arr.shape[0]:
        raise ValueError(f"{name} has {arr.shape[0]} entries but token_offsets has {len(offsets)}: give one per token")
    return arr


def _checked_provenance(provenance: Sequence[Any], action: str) -> tuple[Provenance, ...]:
    out = []
    for k, p in enumerate(provenance):
        if isinstance(p, Mapping):
            try:
                p = (p["path"], p["line"], p["start"], p["end"])
            except KeyError as err:
                raise ValueError(f"provenance[{k}] lacks key {err}; each entry is {{path, line, start, end}}") from None
        if len(p) != 4:
            raise ValueError(f"provenance[{k}] must be (path, line, start, end), got {p!r}")
        path, line, start, end = p
        if not isinstance(path, str):
            raise TypeError(f"provenance[{k}]: path must be a str, got {type(path).__name__}")
        line, start, end = int(line), int(start), int(end)
        if line < 1 or not 0 <= start <= end <= len(action):
            raise ValueError(
                f"provenance[{k}] = {(path, line, start, end)}: need line >= 1 and "
                f"0 <= start <= end <= len(action) = {len(action)}")
        out.append((path, line, start, end))
    return tuple(out)


def _check_calls(step: Step) -> None:
    """Check and normalise a step's calls, edits and line_calls (see `Step`)."""
    n_action = len(step.action)
    calls = tuple(_entry(c, ("start", "end"), "calls", k) for k, c in enumerate(step.calls or ()))
    for k, (start, end) in enumerate(calls):
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= n_action):
            raise ValueError(f"calls[{k}] = {(start, end)}: need integers 0 <= start <= end <= len(action) = {n_action}")
    n_calls = len(calls)

    def call_index(c: Any, where: str) -> int:
        if not isinstance(c, int) or not 0 <= c < n_calls:
            raise ValueError(f"{where}: call {c!r} is not an index into the step's {n_calls} calls "
                             "(give `calls` with the spans of the tool calls)")
        return c

    def kind(x: Any, where: str) -> str:
        if x not in EDIT_KINDS:
            raise ValueError(f"{where}: kind must be one of {EDIT_KINDS}, got {x!r}")
        return x

    edits = []
    for k, entry in enumerate(step.edits or ()):
        c, kd, start, end = _entry(entry, ("call", "kind", "start", "end"), "edits", k)
        where = f"edits[{k}]"
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= n_action):
            raise ValueError(f"{where} = {entry!r}: need integers 0 <= start <= end <= len(action) = {n_action}")
        edits.append((call_index(c, where), kind(kd, where), start, end))
    line_calls = []
    for k, entry in enumerate(step.line_calls or ()):
        path, kd, line, c = _entry(entry, ("path", "kind", "line", "call"), "line_calls", k)
        where = f"line_calls[{k}]"
        if not isinstance(path, str) or not isinstance(line, int) or line < 1:
            raise ValueError(f"{where} = {entry!r}: need a str path and an int line >= 1")
        line_calls.append((path, kind(kd, where), line, call_index(c, where)))
    object.__setattr__(step, "calls", None if step.calls is None else calls)
    object.__setattr__(step, "edits", None if step.edits is None else tuple(edits))
    object.__setattr__(step, "line_calls", None if step.line_calls is None else tuple(line_calls))


def _entry(entry: Any, keys: tuple[str, ...], name: str, k: int) -> tuple:
    """A tuple of the fields `keys` from a dict or a sequence of that length."""
    if isinstance(entry, Mapping):
        try:
            return tuple(entry[key] for key in keys)
        except KeyError as err:
            raise ValueError(f"{name}[{k}] lacks key {err}; each entry is {{{', '.join(keys)}}}") from None
    if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) != len(keys):
        raise ValueError(f"{name}[{k}] must be ({', '.join(keys)}), got {entry!r}")
    return tuple(entry)
