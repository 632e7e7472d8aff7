"""CodeRepoEnv: a repository-editing task as a multi-turn Gymnasium environment ("CodeRepo-v0")."""
from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

from code_gym import languages
from code_gym.actions.parse import MAX_ACTION_CHARS, ToolCall, parse_action
from code_gym.grading.grade import Grader, GradeResult, grade
from code_gym.env.prompt import initial_prompt, integrity_note, step_observation
from code_gym.actions.provenance import READ_ONLY_TOOLS, Transition, attribute, call_provenance
from code_gym.env.hints import reference_hint
from code_gym.rewards import make_reward, sampled_response, total
from code_gym.rewards.shaping import untouched_passed
from code_gym.sandbox import ISOLATION_KINDS, Limits, make_sandbox
from code_gym.env.spaces import AnyText
from code_gym.tasks.task import Task, bundled_tasks, load_task_dir, resolve_task
from code_gym.actions.tools import ToolContext, ToolResult, run_tool
from code_gym.workspace.diffs import render
from code_gym.util.hostfs import wait_for_cleanup
from code_gym.workspace.working_copy import Workspace

MAX_TEXT = 1_000_000  # an observation's length (observation_space)


class CodeRepoEnv(gym.Env):
    """One episode = one task: the agent edits a repository with tools, then submits.

    Args:
        task: a task id, a task folder, or a Task; None draws one at each reset.
        tasks: the pool to draw from: a folder of task folders or a non-empty list of Tasks (default:
            bundled).
        max_steps: steps before the episode is truncated (and graded). `gym.make(...,
            max_episode_steps=N)` adds Gymnasium's TimeLimit; the env then also ends (and grades)
            the episode at step N when N is the smaller limit, so TimeLimit never truncates an
            episode without an outcome reward.
        isolation: 'auto' (bubblewrap, else unshare), 'bwrap', 'unshare', 'none' (no sandbox:
            explicit opt-in, warns), 'docker' (warm container pool), 'docker-fresh', 'ray', or a
            backend object such as `code_gym.sandbox.docker.DockerBackend(...)` (docs/sandboxes.md).
        workspace: 'auto' (overlayfs when permitted, else copy), 'overlay' or 'copy'.
        disk_quota: bytes an episode may write (None: $CODE_GYM_DISK_QUOTA, else 1 GiB; 0: none).
        tool_schemas: include the tools' JSON schemas in the reset prompt (turn off when the chat
            template already renders them from `code_gym.TOOL_SCHEMAS`).
        max_output: bytes of command output kept (head and tail).
        reward: the reward spec: None (the default: 0.75 * f2p + 0.25 * probes), a name ('f2p',
            'binary', 'fraction', 'static'), a dict of name -> weight (or -> {"weight": w, **options}),
            optionally with "shaping", or a RewardSpec (docs/rewards.md).
        integrity: 'enforce' (a patch that fails the integrity audit gets `integrity_penalty`),
            'report' (findings in info only) or 'off' (no audit).
        integrity_penalty: the reward of a patch that fails the audit under 'enforce'.
        hint: fraction of the reference patch's syntax units shown in the reset prompt (0: none);
            `reset(options={"hint": f})` overrides it for one episode.
        grader: what grades the final patch (`code_gym.grading.grade.Grader`): `grade` by default; a
            `GradeCache()` shares results between episodes that end with the same files.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, task: Any = None, tasks: Any = None, max_steps: int = 30, isolation: str = "auto",
                 workspace: str = "auto", tool_schemas: bool = True, max_output: int = 64 << 10,
                 render_mode: str | None = None, reward: Any = None, integrity: str = "enforce",
                 integrity_penalty: float = 0.0, hint: float = 0.0, grader: Grader = grade,
                 disk_quota: int | None = None):
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        if not hasattr(isolation, "sandbox") and isolation not in ISOLATION_KINDS:  # make_sandbox runs at reset
            raise ValueError(f"isolation must be one of {', '.join(map(repr, ISOLATION_KINDS))} or a backend object "
                             f"(docs/sandboxes.md), got {isolation!r}")
        self.pool: list[Task] = self._pool(tasks)
        if not self.pool and task is None:
            raise ValueError("tasks is empty: pass at least one task (a Task, a task folder or a task id), a folder "
                             "of task folders, or None for the bundled suite")
        self.fixed_task = resolve_task(task, self.pool) if task is not None else None
        self.max_steps = max_steps
        self.isolation = isolation
        self.workspace_strategy = workspace
        self.disk_quota = disk_quota
        self.tool_schemas = tool_schemas
        self.max_output = max_output
        self.render_mode = render_mode
        if not 0.0 <= hint <= 1.0:
            raise ValueError(f"hint must be a fraction between 0 and 1, got {hint}")
        self.reward_spec = make_reward(reward, integrity, integrity_penalty)
        self.hint = hint
        self.grader = grader
        self.time_limit: int | None = None  # TimeLimit's max_episode_steps, when a wrapper says so
        self.rewarder = None
        self.observation_space = AnyText(MAX_TEXT)
        self.action_space = AnyText(MAX_ACTION_CHARS)
        self.task: Task | None = None
        self.ws: Workspace | None = None
        self.ctx: ToolContext | None = None
        self.steps = 0
        self.done = False
        self.last_observation = ""
        self._prompts: dict[tuple, str] = {}  # the reset prompt of each task (its starting files are fixed)

    @staticmethod
    def _pool(tasks: Any) -> list[Task]:
        if tasks is None:
            return bundled_tasks()
        if isinstance(tasks, (list, tuple)):
            return [resolve_task(t) for t in tasks]
        return load_task_dir(tasks)

    def _release(self) -> None:
        if self.ctx is not None:
            self.ctx.sandbox.close()
            self.ctx = None
        if self.ws is not None:
            self.ws.close(wait=False)
            self.ws = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        options = options or {}
        self._release()
        started = time.monotonic()
        if "task" in options:
            self.task = resolve_task(options["task"], self.pool)
        elif self.fixed_task is not None:
            self.task = self.fixed_task
        else:
            self.task = self.pool[int(self.np_random.integers(len(self.pool)))]
        self.ws = Workspace(self.task.repo, strategy=self.workspace_strategy, git=True, disk_quota=self.disk_quota)
        limits = Limits(timeout=self.task.timeouts.command, max_output=self.max_output)
        mask = (self.task.root,) if self.task.root else ()
        sandbox = make_sandbox(self.isolation, self.ws.root, limits, mask=mask, image=self.task.image,
                               runtime=languages.of(self.task).runtime(self.task))
        self.ctx = ToolContext(self.ws.root, sandbox, self.task.visible_tests, self.task.test_command,
                               self.task.timeouts.command, self.task.timeouts.tests, self.task.language)
        self.steps = 0
        self.done = False
        prompt_key = (self.task.id, self.task.root)
        if prompt_key not in self._prompts:
            self._prompts[prompt_key] = initial_prompt(self.task, list(self.ws.initial.keys), sandbox.workdir,
                                                       self.tool_schemas)
            if self.reward_spec.audits:
                self._prompts[prompt_key] += "\n\n" + integrity_note(self.task)
        self.last_observation = self._prompts[prompt_key]
        task, isolation = self.task, self.isolation
        self.rewarder = self.reward_spec.episode(self.task, self.ws.changed_files,
                                                 untouched=lambda: untouched_passed(task, isolation))
        hint = reference_hint(self.task, float(options.get("hint", self.hint)), self.np_random)
        if hint.text:
            self.last_observation += "\n\n" + hint.text
        info = {"task_id": self.task.id, "sandbox": sandbox.name, "workspace": self.ws.strategy,
                "reset_time": time.monotonic() - started, "hint": {"shown": hint.shown, "total": hint.total}}
        return self.last_observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict]:
        if self.ctx is None or self.ws is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise RuntimeError("the episode has ended; call reset() to start another")
        started = time.monotonic()
        self.steps += 1
        action, response, logprobs_error = sampled_response(action)
        parsed = parse_action(action)
        pairs: list[tuple[ToolCall | None, ToolResult]] = [
            (None, ToolResult(f"error: {e}", error=True)) for e in parsed.errors]
        submitted = False
        before = self.ws.last
        transitions: list[Transition] = []  # the workspace after each call that may write
        writer, scans = -1, 0  # the last call that may write; the scans between calls
        for k, call in enumerate(parsed.calls):
            writes = call.name not in READ_ONLY_TOOLS
            if writes and writer >= 0:  # what the previous writer changed
                paths, scans = [d.path for d in self.ws.scan_changes()], scans + 1
                transitions.append(Transition(writer, self.ws.last, paths))
            result = run_tool(self.ctx, call)
            pairs.append((call, result))
            if result.submitted:
                submitted = True
                break
            if writes:
                writer = k
        tool_time = time.monotonic() - started
        last_diffs = self.ws.scan_changes()  # also what a background process of an earlier call changed
        transitions.append(Transition(max(writer, 0), self.ws.last, [d.path for d in last_diffs]))
        transitions = [t for t in transitions if t.paths]
        # one scan: its diff is the step's; several: the step's diff is from the snapshot before the step
        diffs = last_diffs if scans == 0 else self.ws.diff(before, self.ws.last)
        terminated = submitted
        truncated = not submitted and self.steps >= self.step_limit
        spans = call_provenance(parsed.calls, diffs, attribute(self.ws, before, transitions, diffs, max(writer, 0))) \
            if parsed.text is not None and parsed.calls else {"calls": [], "edits": [], "line_calls": [],
                                                               "provenance": []}
        info: dict[str, Any] = {
            "diff": render(diffs),
            "changed_files": sorted(p for d in diffs for p in d.paths),
            "action_text": parsed.text if parsed.text is not None else (action if isinstance(action, str) else None),
            **spans,
            "invalid_action": bool(parsed.errors) or not parsed.calls or any(r.error for _, r in pairs),
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c, _ in pairs if c],
            "tool_results": [{"tool": c.name if c else None, "output": r.output, "error": r.error} for c, r in pairs],
            "steps": self.steps,
            "task_id": self.task.id,
        }
        info["timings"] = {"tools": tool_time, "diff": time.monotonic() - started - tool_time}
        observation = step_observation(pairs, self.step_limit - self.steps)
        if logprobs_error:
            info["logprobs_error"] = logprobs_error
        entries = self.rewarder.step(pairs, info["invalid_action"], response)
        if terminated or truncated:
            changes = self.ws.changed_files()
            result = self.grader(self.task, changes, isolation=self.isolation, audit=self.reward_spec.audits)
            outcome, final = self.rewarder.finish(result, changes)
            entries.update(final)
            info.update(self._grade_info(result, outcome))
            observation += f"\n\nEpisode over: {result.summary()}."
            self.done = True
        observation = _within(observation, MAX_TEXT)
        reward = total(entries)
        info["reward_breakdown"] = {**entries, "total": reward}
        info["patch"] = render(self.ws.patch())
        info["timings"]["step"] = time.monotonic() - started
        self.last_observation = observation
        return observation, reward, terminated, truncated, info

    @property
    def step_limit(self) -> int:
        """The step at which the episode is truncated and graded: `max_steps`, or the limit of
        Gymnasium's TimeLimit wrapper (`time_limit`, set by `TimeLimitAgreement`) when smaller."""
        return min(self.max_steps, self.time_limit) if self.time_limit else self.max_steps

    def _grade_info(self, result: GradeResult, outcome: float) -> dict[str, Any]:
        enforced = self.reward_spec.integrity == "enforce" and result.violation
        return {"outcome_reward": outcome, "resolved": result.resolved and not enforced, "tests": result.tests,
                "tests_passed": result.passed, "tests_total": result.total, "grading_time": result.duration,
                "grading_exit_code": result.exit_code, "grading_timed_out": result.timed_out,
                "ignored_changes": result.ignored, "integrity": [f.as_dict() for f in result.integrity or []],
                "tests_tampered": result.tampered, "canary": [f.as_dict() for f in result.canary]}

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.last_observation
        return None

    def close(self) -> None:
        self._release()
        wait_for_cleanup()
        super().close()


def _within(observation: str, limit: int) -> str:
    """The observation cut to `limit` characters (the observation space's) by leaving out its middle."""
    if len(observation) <= limit:
        return observation
    note = (f"\n[... the middle of the tool output left out: an observation holds at most {limit:,} characters and "
            f"this one had {len(observation):,}; make fewer calls a step, or ones that print less ...]\n")
    head = (limit - len(note)) // 2
    tail = limit - len(note) - head
    return observation[:head] + note + observation[len(observation) - tail:]


class TimeLimitAgreement(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Registered with CodeRepo-v0 as its outermost wrapper: at each reset it tells the env the
    `max_episode_steps` of Gymnasium's TimeLimit (which `gym.make(..., max_episode_steps=N)` adds
    inside it), so the env truncates and grades at that step itself. Without it, TimeLimit would
    end the episode there with no grade, and no outcome reward."""

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)

    def reset(self, **kwargs: Any):
        spec = self.env.spec
        self.env.unwrapped.time_limit = spec.max_episode_steps if spec is not None else None
        return self.env.reset(**kwargs)
