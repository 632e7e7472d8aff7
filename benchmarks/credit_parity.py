"""Parity of credit.didpo with the public DiDPO reference, per `cover` mode, on the shared harness's rollouts.

The shared harness (../shared/refbench, see its README) generates the rollouts and turns them into
credit input; this script imports it and the reference (a directory holding the reference's
`didpo/`, exported from the search tool's fetch of github:xuc865/verl-code), runs the reference
once (lightweight mode, the harness's defaults) and credit.didpo once per cover mode, and prints
per-token parity overall and by token class.

The harness's responses are XML-like (`<edit path=..>` with `<search>`/`<replace>`, `<insert>`,
`<code>`, or a ```python fence; `<bash>` commands). The script plays the environment's part for
cover="edit" / "call": each tag element or fence is a call (`Step.calls`), and the bodies of
`<search>` (deleted) and `<replace>`, `<insert>`, `<code>` and fences (added) are its edit
arguments (`Step.edits`).

Token classes: "edit body" (inside an edit argument), "markup" (inside a call, outside its edit
arguments: tags, paths, bash commands, fence markers), "thought" (everything else).

Run: python benchmarks/credit_parity.py REF_DIR [--harness ../shared/refbench] [--shape paper]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import credit  # noqa: E402

CALL = re.compile(r"<edit [^>]*>.*?</edit>|<bash>.*?</bash>|```python\n.*?\n```", re.S)
BODY = re.compile(r"<(search|replace|insert|code)>\n(.*?)\n</\1>|```python\n(.*?)\n```", re.S)
CLASSES = ("edit body", "markup", "thought")
COVERS = ("lines", "edit", "call")


def with_calls(step: dict) -> dict:
    """The step with `calls` and `edits` read off its response text (the environment's part)."""
    text = step["action"]
    calls, edits = [], []
    for k, call in enumerate(CALL.finditer(text)):
        calls.append(call.span())
        for body in BODY.finditer(text, call.start(), call.end()):
            group = 2 if body.group(2) is not None else 3
            kind = "deleted" if body.group(1) == "search" else "added"
            edits.append((k, kind, body.start(group), body.end(group)))
    return {**step, "calls": calls, "edits": edits}


def token_classes(step: dict) -> np.ndarray:
    """Class index (into CLASSES) of each token of the step."""
    offsets = np.asarray(step["token_offsets"], np.int64).reshape(-1, 2)
    mid = (offsets[:, 0] + offsets[:, 1]) // 2
    out = np.full(offsets.shape[0], 2, np.int64)
    for start, end in step["calls"]:
        out[(mid >= start) & (mid < end)] = 1
    for _, _, start, end in step["edits"]:
        out[(mid >= start) & (mid < end)] = 0
    return out


def parity(ref: np.ndarray, ours: np.ndarray) -> dict:
    close = np.abs(ref - ours) < 1e-6
    pearson = float(np.corrcoef(ref, ours)[0, 1]) if ref.std() > 0 and ours.std() > 0 else float("nan")
    return {"tokens": int(ref.shape[0]), "pearson": pearson, "equal": float(close.mean())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("ref_dir")
    ap.add_argument("--harness", default=str(ROOT.parent / "shared" / "refbench"))
    ap.add_argument("--shape", default="paper")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, args.harness)
    sys.path.insert(0, str(Path(args.ref_dir).resolve()))
    import didpo_ours_compare as bridge
    import didpo_ref_bench as harness
    import torch
    from didpo.core_didpo import compute_didpo_outcome_advantage, episode_norm_reward
    from didpo.snippet import parse_response_to_snippets

    (_, (U, G, T)), = harness.shape_list(args.shape)
    tok = harness.PieceTokenizer()
    rows = harness.gen_batch(U, G, T, args.seed, harness.PROBS)
    ids, _, tlr, step_rewards, mask, index, traj_index, _ = harness.build_inputs(rows, tok, torch, 0.95, 4096)
    lens = [len(x) for x in ids]
    diffs, _ = bridge.row_file_diffs(rows)
    trajs, groups = bridge.to_trajectories(rows, tok, diffs)
    trajs = [{**t, "steps": [with_calls(s) for s in t["steps"]]} for t in trajs]
    classes = np.concatenate([token_classes(s) for t in trajs for s in t["steps"]])

    snippets = harness.parse_all(parse_response_to_snippets, rows, ids, tok, "lightweight", predecoded=True)
    t0 = time.perf_counter()
    adv, _, _ = compute_didpo_outcome_advantage(
        token_level_rewards=tlr, step_rewards=step_rewards, response_mask=mask, snippets=snippets, index=index,
        traj_index=traj_index, sim_thresh=0.8, overhead_mode="lightweight", return_diagnostics=True)
    ref_ms = (time.perf_counter() - t0) * 1e3
    ref = bridge.ref_flat(adv, groups, lens)
    ep = bridge.ref_flat(episode_norm_reward(tlr, mask, index, traj_index, 1e-6, True), groups, lens)
    print(f"reference (lightweight): {ref_ms:.0f} ms; {ref.shape[0]} tokens; "
          f"token share per class: " + ", ".join(f"{c} {np.mean(classes == k):.3f}" for k, c in enumerate(CLASSES)))

    lines = ["| cover | max_anchors | Pearson, all tokens | equal, all | " + " | ".join(
        f"Pearson, {c} | equal, {c}" for c in CLASSES) + " | tokens with A^D: ref / ours |", "|" + "---|" * 10]
    for cover in COVERS:
        for cap in (None, 64):
            res = credit.didpo(trajs, cover=cover, max_anchors=cap)
            ours = np.concatenate([np.asarray(v, np.float64) for per in res.tokens for v in per])
            cells = [parity(ref, ours)] + [parity(ref[classes == k], ours[classes == k]) for k in range(3)]
            credited = f"{np.mean(np.abs(ref - ep) > 1e-6):.3f} / {np.mean(np.abs(ours - ep) > 1e-6):.3f}"
            lines.append(f"| {cover} | {cap or 'none'} | " + " | ".join(
                f"{c['pearson']:.3f} | {c['equal']:.3f}" for c in cells) + f" | {credited} |")
            print(lines[-1], flush=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
