"""`python -m integrations.openrlhf.train [OpenRLHF's arguments]`: OpenRLHF's PPO trainer on
CodeRepo-v0 episodes, with `--algo.advantage.estimator didpo` (or another DiDPO preset: `didpo-split`,
the rule measured best) and `gigpo` available.

It runs `openrlhf.cli.train_ppo_ray` as OpenRLHF's own `python -m` would, with every argument of
it, while three narrow patches are in place (undone afterwards):

- its argument parser also accepts credit's step-level estimators (DiDPO's presets, `gigpo`), and
  `--credit.options JSON` (keyword options of the credit estimator, overriding a preset's);
- after parsing, `--train.agent_func_path` defaults to this package's agent_func.py, the DAPO
  overlong penalty is refused for its episodes, and a didpo/gigpo run is checked (several samples
  per prompt, KL in the loss, known options);
- `ray.init` registers `hook.install` as the job's worker_process_setup_hook (the patches of
  estimator.py, applied inside OpenRLHF's Ray actors), forwards the CODE_GYM_* variables, and
  then runs `preflight.check_cluster` on every node before OpenRLHF makes a placement group.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import importlib.util
import json
import os
import runpy
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from integrations.openrlhf import ESTIMATORS

TRAIN_MODULE = "openrlhf.cli.train_ppo_ray"
ESTIMATOR_FLAG = "--algo.advantage.estimator"
OPTIONS_FLAG = "--credit.options"
AGENT_FUNC = str(Path(__file__).resolve().with_name("agent_func.py"))
FORWARDED_PREFIX = "CODE_GYM_"


# CUDA-only packages OpenRLHF's trainer module imports at its top (flash_attn.bert_padding first);
# `--help` stands in for those missing here, as printing the flags runs none of their code
GPU_PACKAGES = ("flash_attn", "ring_flash_attn", "liger_kernel", "bitsandbytes", "optimum", "deepspeed", "vllm")


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    helping = {"-h", "--help"} & set(argv)
    try:
        with openrlhf_extended(), _replaced(sys, "argv", lambda _: [TRAIN_MODULE, *argv]), \
                (_gpu_stack_stood_in() if helping else contextlib.nullcontext()):
            runpy.run_module(TRAIN_MODULE, run_name="__main__", alter_sys=True)
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] not in GPU_PACKAGES:
            raise
        raise SystemExit(f"OpenRLHF's trainer needs {err.name}, which is not installed: training runs on a CUDA "
                         f"machine with OpenRLHF's GPU extras (docs/openrlhf.md); --help works without them") from None


class _StandIn(types.ModuleType):
    """A module of a missing GPU package: any name in it is another stand-in (also as a base class
    or a decorator), for as long as argparse takes to print the help and exit."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else self

    def __mro_entries__(self, bases):
        return (object,)


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in GPU_PACKAGES:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        module = _StandIn(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        pass


@contextlib.contextmanager
def _gpu_stack_stood_in() -> Iterator[None]:
    """Imports of GPU packages that are not installed succeed with stand-ins (installed ones load as
    usual: the finder is asked last); the modules imported meanwhile are dropped afterwards."""
    finder, before = _StandInFinder(), set(sys.modules)
    sys.meta_path.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in set(sys.modules) - before:
            if name.split(".")[0] in GPU_PACKAGES or name.startswith("openrlhf"):
                del sys.modules[name]


@contextlib.contextmanager
def openrlhf_extended() -> Iterator[None]:
    """The three patches of this module's docstring, for the duration of the block."""
    import ray

    with _replaced(argparse.ArgumentParser, "add_argument", _add_argument), \
            _replaced(argparse.ArgumentParser, "parse_args", _parse_args), \
            _replaced(ray, "init", _ray_init):
        yield


@contextlib.contextmanager
def _replaced(owner: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def _add_argument(original):
    def add_argument(self, *flags, **kwargs):
        if ESTIMATOR_FLAG not in flags:
            return original(self, *flags, **kwargs)
        kwargs["choices"] = [*kwargs["choices"], *ESTIMATORS]
        kwargs["help"] = (kwargs.get("help") or "") + (
            f". code-gym adds {', '.join(ESTIMATORS)}: DiDPO (Diff-in-Diff Policy Optimization) by its presets "
            "(didpo-split: the rule measured best) and GiGPO, computed by `credit` over CodeRepo-v0 episodes "
            "(docs/openrlhf.md, docs/credit.md)")
        action = original(self, *flags, **kwargs)
        original(self, OPTIONS_FLAG, type=json_object, default="{}",
                 help='keyword options of the didpo/gigpo estimator as a JSON object, overriding a DiDPO '
                      'preset\'s, e.g. \'{"lambda_": 1.0, "mode": "mean_std_norm"}\' (docs/credit.md lists them)')
        return action

    return add_argument


def _parse_args(original):
    def parse_args(self, args=None, namespace=None):
        parsed = original(self, args, namespace)
        if hasattr(parsed, OPTIONS_FLAG[2:]):
            check_arguments(parsed, self.error)
        return parsed

    return parse_args


def check_arguments(parsed: argparse.Namespace, error: Callable[[str], None]) -> None:
    """Default the agent to CodeRepo-v0 episodes and check what didpo/gigpo need. `parsed` has
    argparse's flat dotted names; `error` reports a problem and does not return."""
    args = vars(parsed)
    if args["train.agent_func_path"] is None:
        args["train.agent_func_path"] = AGENT_FUNC
    if Path(args["train.agent_func_path"]).resolve() == Path(AGENT_FUNC) and args["reward.overlong_buffer_len"]:
        error("--reward.overlong_buffer_len compares a sample's whole response span with --rollout.max_new_tokens; "
              "a CodeRepo-v0 episode's span holds every turn and tool output, so it would penalise almost every "
              "multi-step episode: leave it off (--data.max_len bounds the episode, --rollout.max_new_tokens each "
              "action, --reward.stop_properly_penalty_coef penalises a last action cut at its limit)")
    estimator = args["algo.advantage.estimator"]
    if estimator not in ESTIMATORS:
        return
    if args["rollout.n_samples_per_prompt"] < 2:
        error(f"{estimator} compares the episodes of one task: pass --rollout.n_samples_per_prompt 2 or more")
    if args["algo.kl.init_coef"] > 0 and not args["algo.kl.use_loss"]:
        error(f"{estimator} writes the advantages itself, so a KL penalty in the reward would be lost: pass "
              "--algo.kl.use_loss (the KL term in the loss, as for GRPO) or --algo.kl.init_coef 0")
    import credit

    try:  # names and values, before Ray and the rollouts start (a bad value failed at the first advantages)
        credit.check_options(estimator, json.loads(args[OPTIONS_FLAG[2:]]))
    except ValueError as err:
        error(f"{OPTIONS_FLAG}: {err} (the options of credit.{estimator} are in docs/credit.md)")


def json_object(text: str) -> str:
    """`text`, checked to be a JSON object. It stays a string: OpenRLHF's `hierarchize` would turn a
    dict into a namespace; `estimator.estimator_options` reads it in the trainer."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not JSON: {err}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object of option names and values")
    return text


def _ray_init(original):
    def init(*args, runtime_env=None, **kwargs):
        from integrations.openrlhf.preflight import check_cluster

        context = original(*args, runtime_env=runtime_env_with_hook(runtime_env), **kwargs)
        check_cluster()
        return context

    return init


def runtime_env_with_hook(runtime_env: dict | None, environ: Any = os.environ) -> dict:
    """`runtime_env` plus the setup hook, and the CODE_GYM_* variables of `environ` that neither it
    nor the Ray job this driver may run in (`ray job submit --runtime-env-json`) already sets."""
    from integrations.openrlhf.hook import SETUP_HOOK

    runtime_env = dict(runtime_env or {})
    job = json.loads(environ.get("RAY_JOB_CONFIG_JSON_ENV_VAR") or "{}").get("runtime_env") or {}
    taken = {**(job.get("env_vars") or {}), **(runtime_env.get("env_vars") or {})}
    forwarded = {k: v for k, v in environ.items() if k.startswith(FORWARDED_PREFIX) and k not in taken}
    runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **forwarded}
    runtime_env["worker_process_setup_hook"] = SETUP_HOOK
    return runtime_env


if __name__ == "__main__":
    main()
