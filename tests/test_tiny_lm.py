"""The tiny LM (`code_gym.apps.tiny_lm`): a GPT-2-style transformer with a BPE trained here,
warm-started on the candidate responses and trained with a clipped policy gradient on the real
environment and tests. A short run: it checks that the loop runs, that the credit reaches the
tokens of the edits through the tokenizer's offsets, that the warm start lowers the loss, and that
the CLI writes its outputs; no success-rate or timing asserts."""
import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from code_gym.apps.cli import main  # noqa: E402
from code_gym.apps.policy import REFERENCE, UNTOUCHED  # noqa: E402
from code_gym.apps.tiny_lm import TinyLMConfig, TinyLMTrainer, token_offsets  # noqa: E402
from code_gym.apps.train import SEPARATOR  # noqa: E402
from code_gym.tasks.task import bundled_tasks  # noqa: E402

TASK = "report-avg-aggregation"


@pytest.fixture(scope="module")
def trainer():
    import torch

    torch.set_num_threads(1)
    task = next(t for t in bundled_tasks() if t.id == TASK)
    trainer = TinyLMTrainer(task, TinyLMConfig(updates=1, group_size=4, sft_steps=25, seed=0, n_layer=2))
    trainer.warm_start()
    yield trainer
    trainer.close()


def test_warm_start_lowers_the_loss(trainer):
    losses = trainer.sft_losses
    assert len(losses) == 25
    assert np.mean(losses[-5:]) < 0.7 * losses[0]


def test_offsets_are_the_tokenizers_and_tile_the_sampled_text(trainer):
    ids = trainer.target_ids[0][0]  # a candidate response and EOS
    text = trainer.tokenizer.decode(ids[:-1])
    spans = token_offsets(trainer.tokenizer, ids, text)
    assert spans.shape == (len(ids), 2)
    assert spans[0, 0] == 0 and (spans[1:, 0] == spans[:-1, 1]).all() and spans[-1].tolist() == [len(text)] * 2
    assert "".join(text[a:b] for a, b in spans) == text
    # a split the tokenizer would not make (a sampled one): offsets from decoding, still tiling the text
    pieces = [trainer.tokenizer.token_to_id(ch) for ch in "ab"]
    odd = token_offsets(trainer.tokenizer, pieces, "ab")
    assert odd.tolist() == [[0, 1], [1, 2]]


def test_didpo_credit_reaches_the_edit_tokens(trainer):
    """Episodes that play the reference edit at region 1 against one that plays a wrong variant
    (the responses are the tokenized candidate texts, decoded and played as the sampler's are):
    DiDPO's per-token advantages differ inside the edit and not outside it."""
    decisions = trainer.decisions
    wrong = next(c for c, cand in enumerate(decisions[1].candidates) if cand.kind not in (REFERENCE, UNTOUCHED))
    choices = [[0, 0, 0], [0, 0, 0], [0, wrong, 0], [0, wrong, 0]]
    encode = trainer.tokenizer.encode
    batch = [trainer.play([encode(decisions[d].candidates[c].action).ids + [trainer.eos] for d, c in enumerate(row)])
             for row in choices]
    assert [e.resolved for e in batch] == [True, True, False, False]
    pairs = [(trainer.prompt_ids[s], list(r)) for e in batch for s, r in enumerate(e.responses)]
    _, _, response = trainer._rows(pairs)
    didpo = np.asarray(trainer.advantages(batch, response))
    config = trainer.config
    trainer.config = TinyLMConfig(**{**config.__dict__, "estimator": "grpo"})
    try:
        grpo = np.asarray(trainer.advantages(batch, response))
    finally:
        trainer.config = config
    mask = response.numpy()
    # GRPO: one value per trajectory on every token
    for row in range(len(pairs)):
        assert np.unique(grpo[row][mask[row]]).size == 1
    # DiDPO: in the steps of region 1 (rows 1, 4, 7, 10) the edit's tokens get A^E + A^D, the rest A^E
    region_rows = [3 * i + 1 for i in range(4)]
    for row in region_rows:
        values = didpo[row][mask[row]]
        assert np.unique(values).size > 1
        episode_value = values[0]  # the first token (the thought) no diff covers
        assert np.count_nonzero(values != episode_value) > 0
    right, bad = didpo[region_rows[0]][mask[region_rows[0]]], didpo[region_rows[2]][mask[region_rows[2]]]
    assert right.max() > right[0] > 0 > bad[0] > bad.min()  # the edit pushed further than the episode


def test_one_update_end_to_end(trainer):
    stats = trainer.update(1)
    assert stats.episodes == 4 and len(trainer.last_batch) == 4
    assert 0.0 <= stats.success_rate <= 1.0 and 0.0 <= stats.parsed <= 1.0
    for episode in trainer.last_batch:
        assert len(episode.trajectory.steps) == len(trainer.steps)
        for response, step in zip(episode.responses, episode.trajectory.steps):
            assert step.token_offsets.shape == (len(response), 2)


def test_cli_trains_the_tiny_lm_and_writes_its_outputs(tmp_path):
    task = next(t for t in bundled_tasks() if t.id == TASK)
    code = main(["train", "--policy", "tiny-lm", "--estimator", "didpo", "--tasks", str(task.root), "--updates", "1",
                 "-G", "2", "--regions-per-step", "0", "--warm-start-steps", "5", "--out", str(tmp_path)])
    assert code == 0
    rows = (tmp_path / "curves.csv").read_text().splitlines()
    assert rows[0].startswith("run,update") and len(rows) == 3
    assert (tmp_path / "curves.png").stat().st_size > 0
    folder = tmp_path / "tiny-lm-didpo"
    assert (folder / "config.json").exists() and (folder / "tokenizer.json").exists()
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 and all(len(s["responses"]) == 1 for s in samples)


def test_warm_start_cache_gives_the_same_run_and_the_kl_reference_stays(tmp_path):
    """Two trainers with one config: the second loads the first's warm start from the cache file
    (model, losses and random states), so it samples what the first samples. An update with the KL
    term moves the policy and leaves the warm-start reference as it was."""
    import torch

    torch.set_num_threads(1)
    task = next(t for t in bundled_tasks() if t.id == TASK)
    config = TinyLMConfig(updates=1, group_size=2, sft_steps=4, seed=3, n_layer=1, n_embd=32, n_head=2, kl=0.5,
                          regions_per_step=0)
    cache = tmp_path / "warm.pt"
    first = TinyLMTrainer(task, config)
    second = TinyLMTrainer(task, config, grade_cache=first.grade_cache, decisions=first.decisions)
    try:
        first.warm_start(cache)
        assert cache.exists()
        sampled = first.sample(0, 2)  # moves torch's generator on; the cache holds its state before
        second.warm_start(cache)
        assert second.sft_losses == first.sft_losses and len(first.sft_losses) == 4
        for a, b in zip(first.model.parameters(), second.model.parameters()):
            assert torch.equal(a, b)
        assert second.sample(0, 2) == sampled
        before = [p.detach().clone() for p in second.reference.parameters()]
        stats = second.update(1)
        assert 0.0 <= stats.p_reference <= 1.0  # 4 warm-start steps: about 0 for a 165-token response
        assert all(torch.equal(a, b) for a, b in zip(before, second.reference.parameters()))
        with torch.no_grad():  # the reference is a copy, not the policy's tensors
            next(second.model.parameters()).add_(1.0)
        assert torch.equal(next(second.reference.parameters()), before[0])
    finally:
        first.close()
        second.close()


def test_reference_probability_is_that_of_the_reference_texts(trainer):
    """Supervised steps on the reference response alone raise `p_reference` (its log); steps on another
    candidate's response (same prompts) lower it."""
    import copy

    import torch

    state = copy.deepcopy(trainer.model.state_dict())
    wrong = [trainer.tokenizer.encode(SEPARATOR.join(trainer.decisions[d].candidates[1].action for d in regions)).ids
             + [trainer.eos] for regions in trainer.steps]  # candidates[0] is the reference

    def fit(targets) -> float:
        trainer.model.load_state_dict(state)
        optimizer = torch.optim.Adam(trainer.model.parameters(), lr=1e-3)
        trainer.model.train()
        for _ in range(5):
            ids, attention, response = trainer._rows(list(zip(trainer.prompt_ids, targets)))
            loss = -(trainer._token_logprobs(ids, attention) * response).sum() / response.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return trainer.reference_logprob()

    try:
        start = trainer.reference_logprob()
        assert start < 0.0 and trainer.reference_probability() == pytest.approx(np.exp(start), rel=1e-6, abs=0)
        assert fit(trainer.reference_ids) > start > fit(wrong)
    finally:
        trainer.model.load_state_dict(state)


def test_loss_weights_per_rule():
    """Two rows of 2 and 4 response tokens: token-mean weighs every token 1/6; token-sum 1/B (the
    long row's tokens weigh what the short row's do); sequence-mean gives each row 1/B in all."""
    import torch

    from code_gym.apps.tiny_lm import loss_weights

    response = torch.tensor([[0, 1, 1, 0, 0], [1, 1, 1, 1, 0]], dtype=torch.bool)
    mean = loss_weights(response, "token-mean")
    assert torch.allclose(mean[response], torch.full((6,), 1 / 6)) and float(mean[~response].abs().sum()) == 0
    total = loss_weights(response, "token-sum")
    assert torch.allclose(total[response], torch.full((6,), 0.5))
    seq = loss_weights(response, "sequence-mean")
    assert torch.allclose(seq.sum(dim=1), torch.tensor([0.5, 0.5]))
    assert float(seq[0, 1]) == pytest.approx(0.25) and float(seq[1, 0]) == pytest.approx(0.125)
    with pytest.raises(ValueError, match="token-sum"):
        loss_weights(response, "mean")


def test_forking_mask_keeps_the_highest_entropy_response_tokens():
    import torch

    from code_gym.apps.tiny_lm import forking_mask

    response = torch.tensor([[0, 1, 1, 1, 1], [0, 0, 1, 1, 1]], dtype=torch.bool)
    entropy = torch.tensor([[9.0, 0.1, 2.0, 0.2, 0.3], [8.0, 7.0, 0.05, 1.5, 0.0]])
    mask = forking_mask(entropy, response, 2 / 7)  # 7 response tokens: the 2 most uncertain
    assert mask.tolist() == [[False, False, True, False, False], [False, False, False, True, False]]
    assert forking_mask(entropy, response, 0.01).sum() == 1  # at least one token
    assert forking_mask(entropy, response, 1.0).equal(response)


def test_config_errors_name_the_valid_choices():
    task = next(t for t in bundled_tasks() if t.id == TASK)
    for bad, match in (({"loss": "mean"}, "token-sum"), ({"optimizer": "rmsprop"}, "adam, sgd"),
                       ({"forking": 1.5}, r"\[0, 1\]")):
        with pytest.raises(ValueError, match=match):
            TinyLMTrainer(task, TinyLMConfig(**bad), decisions=[])


def test_decision_tokens_are_where_the_candidates_part(trainer):
    """An episode of exact candidate responses has one decision per region with two or more
    candidates, at the token that writes the first character where the region's candidates part;
    a response that is no candidate has none."""
    import os

    decisions = trainer.decisions
    encode = trainer.tokenizer.encode
    choices = [0, 1, 0]
    episode = trainer.play([encode(decisions[d].candidates[c].action).ids + [trainer.eos] for d, c in enumerate(choices)])
    found = trainer.decision_tokens(episode)
    assert [(s, region, toward) for s, _, region, toward in found] == [(0, 0, True), (1, 1, False), (2, 2, True)]
    for s, k, region, _ in found:
        step = episode.trajectory.steps[s]
        start, end = step.token_offsets[k]
        part = len(os.path.commonprefix([c.action for c in decisions[region].candidates]))
        assert start <= part < end  # the token writes the first character that differs
    garbled = trainer.play([encode("not a tool call").ids + [trainer.eos]] * len(trainer.steps))
    assert trainer.decision_tokens(garbled) == []


def test_a_cuda_device_without_cuda_is_a_clear_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the error is for machines without it")
    task = next(t for t in bundled_tasks() if t.id == TASK)
    with pytest.raises(ValueError, match="no CUDA device"):
        TinyLMTrainer(task, TinyLMConfig(device="cuda", sft_steps=1), decisions=[])
