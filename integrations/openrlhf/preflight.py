"""The cluster check that train.py runs right after `ray.init`, before OpenRLHF makes any placement group.

A patch that did not happen (the setup hook not run on a node, code-gym missing there, OpenRLHF
changed under it) would otherwise show only after a whole rollout, as OpenRLHF's
`Unkown advantage_estimator didpo`. `check_cluster` runs `check_node` as one zero-CPU task on every
alive node, in a worker of the job (so the setup hook has run there as in OpenRLHF's actors), and
raises one error that names each failing node and what it lacks.

`ray.init` connects as soon as the head is up, whatever the number of workers that have joined;
with CODE_GYM_PREFLIGHT_NODES=N in the driver's environment the check first waits (up to
CODE_GYM_PREFLIGHT_WAIT_S seconds, default 600) for N alive nodes, and fails naming those alive if
they do not come, instead of letting OpenRLHF wait for placement groups that cannot form.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import time
from typing import Any, Mapping

OPENRLHF_VERSION = "0.11.2"
TIMEOUT_S = 300  # a fresh worker imports torch, deepspeed and vLLM's modules first
# module: (class, {method: the parameters of OpenRLHF 0.11.2's method, which the patch wraps})
PATCHED = {
    "openrlhf.trainer.ppo_utils.samples_generator": ("SamplesGenerator", {
        "_process_response_into_experience": ["self", "response", "generate_kwargs"],
        "generate_eval_samples": ["self", "generate_kwargs"],
    }),
    "openrlhf.trainer.ppo_utils.experience_maker": ("RemoteExperienceMaker", {
        "compute_advantages_and_returns": ["self", "experiences"],
    }),
}
EXECUTOR = "integrations.openrlhf.agent"
NODES_VARIABLE, WAIT_VARIABLE = "CODE_GYM_PREFLIGHT_NODES", "CODE_GYM_PREFLIGHT_WAIT_S"
WAIT_S = 600.0


def check_node() -> list[str]:
    """What this process lacks for a didpo/gigpo run: [] when the executor imports and both
    OpenRLHF modules import patched, with the method signatures the patches were written for."""
    problems = []
    for name, (class_name, methods) in PATCHED.items():
        try:
            cls = getattr(importlib.import_module(name), class_name)
        except Exception as err:  # every failure is reported, with its text
            problems.append(f"cannot import {name}.{class_name}: {err!r}")
            continue
        for method, expected in methods.items():
            problems += _check_method(cls, method, expected)
    try:
        importlib.import_module(EXECUTOR)
    except Exception as err:
        problems.append(f"cannot import the agent executor ({EXECUTOR}): {err!r}")
    return problems


def _check_method(cls: type, method: str, expected: list[str]) -> list[str]:
    function = getattr(cls, method, None)
    if function is None:
        return [f"{cls.__name__}.{method} is missing (OpenRLHF {_openrlhf_version()}; code-gym is built for "
                f"{OPENRLHF_VERSION})"]
    problems = []
    if not getattr(function, "_code_gym", False):
        problems.append(f"{cls.__name__}.{method} is not patched: Ray's worker_process_setup_hook "
                        "(integrations.openrlhf.hook.install) did not run in this job's workers; start training "
                        "with `python -m integrations.openrlhf.train`")
    found = list(inspect.signature(inspect.unwrap(function)).parameters)
    if found != expected:
        problems.append(f"{cls.__name__}.{method}({', '.join(found)}) differs from OpenRLHF {OPENRLHF_VERSION}'s "
                        f"({', '.join(expected)}): installed OpenRLHF is {_openrlhf_version()}")
    return problems


def _openrlhf_version() -> str:
    try:
        return importlib.metadata.version("openrlhf")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def check_cluster(timeout_s: float = TIMEOUT_S) -> None:
    """Run `check_node` on every alive node of the connected Ray cluster; raise RuntimeError naming
    each node that fails it (or cannot run it, e.g. without code-gym) and what it lacks."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(check_node)
    nodes = wait_for_nodes(*expected_nodes())
    refs = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote()
            for node in nodes]
    failures = []
    for node, ref in zip(nodes, refs):
        try:
            problems = ray.get(ref, timeout=timeout_s)
        except Exception as err:  # the node could not run the check at all
            problems = [f"the check could not run: {_first_line(err)}"]
        failures += [f"  node {_node_name(node)}: {problem}" for problem in problems]
    if failures:
        raise RuntimeError("code-gym preflight failed before any placement group was made:\n" + "\n".join(failures)
                           + "\n(docs/openrlhf.md, \"First run on a GPU cluster\")")


def expected_nodes(environ: Mapping[str, str] = os.environ) -> tuple[int, float]:
    """(nodes to wait for, seconds to wait) from CODE_GYM_PREFLIGHT_NODES / _WAIT_S (0: don't wait)."""
    try:
        nodes = int(environ.get(NODES_VARIABLE) or 0)
        wait_s = float(environ.get(WAIT_VARIABLE) or WAIT_S)
    except ValueError:
        raise ValueError(f"{NODES_VARIABLE} must be a number of nodes and {WAIT_VARIABLE} a number of seconds, got "
                         f"{environ.get(NODES_VARIABLE)!r} and {environ.get(WAIT_VARIABLE)!r}") from None
    if nodes < 0 or wait_s < 0:
        raise ValueError(f"{NODES_VARIABLE} and {WAIT_VARIABLE} must not be negative")
    return nodes, wait_s


def wait_for_nodes(expected: int, wait_s: float, poll_s: float = 1.0) -> list[dict[str, Any]]:
    """The alive nodes of the connected cluster, once there are `expected` of them (at once when
    `expected` is 0); RuntimeError naming those alive when `wait_s` seconds pass first."""
    import ray

    deadline = time.monotonic() + wait_s
    while True:
        nodes = [node for node in ray.nodes() if node["Alive"]]
        if len(nodes) >= expected:
            return nodes
        if time.monotonic() >= deadline:
            alive = ", ".join(_node_name(node) for node in nodes) or "none"
            raise RuntimeError(f"code-gym preflight: {len(nodes)} of the {expected} nodes of {NODES_VARIABLE} joined "
                               f"the Ray cluster within {wait_s:g} s (alive: {alive}); start `ray start --address` "
                               f"on the others, or raise {WAIT_VARIABLE}")
        time.sleep(min(poll_s, max(deadline - time.monotonic(), 0.0)))


def _node_name(node: dict[str, Any]) -> str:
    return f"{node.get('NodeManagerAddress', '?')} ({node['NodeID'][:12]})"


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[-1] if lines else text}"
