"""OpenRLHF executor costs: token offsets of a long action, and episodes per second with 16
concurrent episodes on the local sandbox backend (the load one vLLM engine actor puts on its node).

`python benchmarks/openrlhf_bench.py [--episodes 32] [--concurrency 16]` prints a table and writes
the "openrlhf" section of docs/benchmarks.md. A byte-level BPE tokenizer is trained here (no hub
download); generation is a scripted stand-in for vLLM (fixed responses, no model), so the numbers
are the executor's own work: environment steps, grading, tokenization and offsets.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from _report import write_section  # noqa: E402
from conftest import FILES, write_tiny_task  # noqa: E402  the tests' tiny task
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.outputs import CompletionOutput, RequestOutput  # noqa: E402

from code_gym import TOOL_SCHEMAS  # noqa: E402
from code_gym.actions.replay import hermes  # noqa: E402
from integrations.openrlhf.agent import AgentConfig, AgentExecutor, token_offsets  # noqa: E402

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
FIX_ADD = {"name": "str_replace", "arguments": {"path": "calc/ops.py", "old_str": "def add(a, b):\n    return a - b",
                                               "new_str": "def add(a, b):\n    return a + b"}}
FIX_MUL = {"name": "str_replace", "arguments": {"path": "calc/ops.py", "old_str": "def mul(a, b):\n    return a + b",
                                               "new_str": "def mul(a, b):\n    return a * b"}}
SCRIPT = [hermes([FIX_ADD], "Fix add."), hermes([FIX_MUL]), hermes([{"name": "submit", "arguments": {}}])]


def build_tokenizer() -> PreTrainedTokenizerFast:
    model = Tokenizer(models.BPE())
    model.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    model.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    corpus = [c for c in FILES.values() if isinstance(c, str)] + [json.dumps(TOOL_SCHEMAS), *SCRIPT]
    model.train_from_iterator(corpus * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=model, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=CHATML)


def prefix_decoding_offsets(tokenizer, token_ids, text):
    """The fallback this benchmark replaced (one decode of every prefix, O(n^2)), for comparison."""
    ends = [len(os.path.commonprefix([tokenizer.decode(token_ids[:k]), text])) for k in range(1, len(token_ids) + 1)]
    return ends


def best_ms(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def offsets_rows(tokenizer, target=5000):
    unit = "def add(a, b):\n    return a + b  # sum é\n"
    text = unit
    while len(tokenizer(text, add_special_tokens=False)["input_ids"]) < target:
        text += unit
    canonical = tokenizer(text, add_special_tokens=False)["input_ids"][:target]
    text = tokenizer.decode(canonical)
    first = tokenizer.convert_ids_to_tokens(canonical[:1])[0]
    one_off = [tokenizer.convert_tokens_to_ids(c) for c in first] + canonical[1:]  # one token spelled per byte
    assert tokenizer.decode(one_off) == text and one_off != canonical
    rows = [("canonical (offset mapping)", len(canonical), best_ms(lambda: token_offsets(tokenizer, canonical, text), 5)),
            ("one non-canonical token (incremental decoding)", len(one_off),
             best_ms(lambda: token_offsets(tokenizer, one_off, text), 3))]
    short = one_off[:1000]
    short_text = tokenizer.decode(short)
    rows.append(("previous fallback (prefix decoding), first 1,000 tokens", len(short),
                 best_ms(lambda: prefix_decoding_offsets(tokenizer, short, short_text), 1)))
    return rows


class Engine:
    """A scripted stand-in for vLLM's engine: the next response of SCRIPT per call."""

    def __init__(self, tokenizer):
        self.tokenizer, self.turn = tokenizer, 0

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        text = SCRIPT[min(self.turn, len(SCRIPT) - 1)]
        self.turn += 1
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        output = CompletionOutput(index=0, text=text, token_ids=ids, cumulative_logprob=None, logprobs=None,
                                  finish_reason="stop")
        return RequestOutput(request_id="0", prompt=None, prompt_token_ids=list(prompt_token_ids),
                             prompt_logprobs=None, outputs=[output], finished=True)


async def run_episodes(tokenizer, label, episodes, concurrency):
    executor = AgentExecutor(AgentConfig())
    params = SamplingParams(max_tokens=None, min_tokens=1)
    gate = asyncio.Semaphore(concurrency)
    lags, running = [], True

    async def heartbeat():  # how late the event loop runs a 10 ms timer: what other requests wait
        while running:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append((time.perf_counter() - start - 0.01) * 1000)

    async def one():
        async with gate:
            return await executor.execute("the prompt", label, params, 8192, tokenizer, Engine(tokenizer))

    beat = asyncio.create_task(heartbeat())
    start = time.perf_counter()
    responses = await asyncio.gather(*(one() for _ in range(episodes)))
    elapsed = time.perf_counter() - start
    running = False
    await beat
    failed = sum(r["extra_logs"]["code_gym/failed"] for r in responses)
    resolved = sum(r["extra_logs"]["code_gym/resolved"] for r in responses)
    return elapsed, failed, resolved, lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    tokenizer = build_tokenizer()
    rows = offsets_rows(tokenizer)
    label = str(write_tiny_task(Path(tempfile.mkdtemp())))
    elapsed, failed, resolved, lags = asyncio.run(run_episodes(tokenizer, label, args.episodes, args.concurrency))
    lags.sort()
    table = ["| token offsets of one action | tokens | ms (best) |", "|---|---|---|"]
    table += [f"| {name} | {n:,} | {ms:.1f} |" for name, n, ms in rows]
    episodes = [
        f"| executor, {args.episodes} episodes (3 steps: two edits, submit with grading), "
        f"{args.concurrency} at once, local sandbox | value |", "|---|---|",
        f"| episodes per second | {args.episodes / elapsed:.2f} |",
        f"| wall time, s | {elapsed:.1f} |",
        f"| resolved / failed | {int(resolved)} / {int(failed)} |",
        f"| event-loop lag of a 10 ms timer, median / p99 / max ms | {statistics.median(lags):.1f} / "
        f"{lags[int(0.99 * (len(lags) - 1))]:.1f} / {lags[-1]:.1f} |",
    ]
    body = "\n".join([
        "`python benchmarks/openrlhf_bench.py`: a byte-level BPE trained in the script, a scripted stand-in for "
        "vLLM (no model: the executor's own work only), the tests' tiny task.",
        "",
        "Prediction (written before measuring): offsets of a 5,000-token action ~5 ms canonical and ~100 ms with a "
        "non-canonical token (two short decodes per token, ~10 us each); the old prefix decoding ~2.9 s at 5,000 "
        "tokens (measured in issue 17), ~0.1 s at 1,000; ~3 episodes/s at 16 at once on 2 cores (grading ~0.4 s of "
        "CPU per episode dominates); the event loop's lag stays under ~50 ms because offsets, steps and closes run "
        "in threads.",
        "", *table, "", *episodes, "",
        "Reading: the incremental fallback is linear (about 7x the offset mapping, two short decodes per token); the prefix decoding it replaced grows with the square of the length (~0.2 s at 1,000 tokens, so ~5 s at 5,000), which is why it is only timed on 1,000. The loop lag's tail (p99, max) is the GIL: offsets, steps and grading run in threads on a shared 2-core machine; nothing runs on the loop itself for more than a chat-template render and an encode."])
    print(body)
    if not args.no_write:
        write_section("openrlhf", body)


if __name__ == "__main__":
    main()
