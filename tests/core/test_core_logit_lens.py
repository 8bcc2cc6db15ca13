"""The logit lens against the decoder run layer by layer here (no hooks), float64: norm and output layer applied to
each layer's own stream, and the log-softmax written out."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core_model import BOS, EOS, MaskSpec, ModelConfig, build_model
from core_model.checkpoint import load_checkpoint
from core_model.decoding import greedy_decode
from core_model.layers import AttentionRequest
from core_model.logit_lens import logit_lens
from core_model.shipped import resource_path
from core_model.tasks import expected_output

EXACT = 1e-10
SRC = [3, 4, 5, 6, 7]
OUTPUT = [3, 4, 5, 6, 7, EOS]


def tiny(norm_position: str, positional: str = "rope"):
    config = ModelConfig(
        d_model=16,
        n_heads=2,
        d_ff=32,
        max_len=32,
        n_encoder_layers=2,
        n_decoder_layers=3,
        norm_position=norm_position,
        positional=positional,
    )
    return build_model(config, seed=1).to(torch.float64).eval()


def layer_by_layer(model, src, output) -> list[np.ndarray]:
    """Each decoder layer's stream through the final norm and the output layer: (T, V) log-probabilities each."""
    src_t, tgt = torch.tensor([src]), torch.tensor([[BOS, *output[:-1]]])
    masks = MaskSpec()
    x = model._embed(model.src_embed, src_t, 0)
    for layer in model.encoder_layers:
        x, _ = layer(x, AttentionRequest(masks.encoder_self(src_t)))
    memory = model.encoder_norm(x)
    y, found = model._embed(model.tgt_embed, tgt, 0), []
    for layer in model.decoder_layers:
        y, _, _ = layer(y, memory, AttentionRequest(masks.decoder_self(tgt)), AttentionRequest(masks.cross(src_t)))
        logits = model.generator(model.decoder_norm(y))[0].detach().numpy()
        shifted = logits - logits.max(axis=1, keepdims=True)
        found.append(shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))
    return found


@pytest.mark.parametrize(("norm_position", "positional"), [("pre", "rope"), ("post", "sinusoidal")])
def test_every_row_equals_the_decoder_stopped_after_that_layer(norm_position, positional):
    model = tiny(norm_position, positional)
    lens = logit_lens(model, SRC, OUTPUT)
    expected = layer_by_layer(model, SRC, OUTPUT)
    assert lens.top_tokens.shape == (3, len(OUTPUT)) and lens.output == tuple(OUTPUT)
    for layer, log_probs in enumerate(expected):
        allowed = log_probs.copy()
        allowed[:, [0, BOS]] = -np.inf  # <pad> and <bos> are never chosen
        np.testing.assert_array_equal(lens.top_tokens[layer], allowed.argmax(axis=1))
        np.testing.assert_allclose(lens.top_log_probs[layer], allowed.max(axis=1), atol=EXACT, rtol=0)
        np.testing.assert_allclose(
            lens.output_log_probs[layer], log_probs[np.arange(len(OUTPUT)), OUTPUT], atol=EXACT, rtol=0
        )


def test_top_tokens_are_chosen_among_the_task_vocabulary():
    model = tiny("pre")
    lens = logit_lens(model, SRC, OUTPUT, n_tokens=6)
    assert lens.top_tokens.max() < 6 and not np.isin(lens.top_tokens, [0, BOS]).any()


def test_the_last_layer_of_a_trained_model_writes_its_greedy_output():
    ckpt = load_checkpoint(resource_path("reverse_rope.pt"))
    model, task = ckpt.build().eval(), ckpt.task
    ids = task.vocabulary.encode("31415926")
    src = task.source_ids(ids)
    greedy = greedy_decode(model, torch.tensor([src]), 20, n_tokens=task.vocab_size)[0].tolist()
    output = greedy[: greedy.index(EOS) + 1]
    assert output == [*expected_output(task, ids), EOS]
    lens = logit_lens(model, src, output, n_tokens=task.vocab_size)
    assert lens.top_tokens[-1].tolist() == output
    assert (lens.output_log_probs[-1] > np.log(0.9)).all()


def test_an_empty_output_is_refused():
    with pytest.raises(ValueError, match="output is empty"):
        logit_lens(tiny("pre"), SRC, [])


def test_most_common_is_the_token_a_layer_writes_at_most_positions_lowest_id_on_a_tie():
    from collections import Counter

    from core_model.logit_lens import LogitLens

    top = np.array([[8, 8, 4, 8, 8, 3, 8], [5, 4, 4, 5, 9, 9, 1]])
    lens = LogitLens((1,) * 7, top, np.zeros(top.shape), np.zeros(top.shape))
    for layer in range(2):
        counts = Counter(top[layer].tolist())
        best = max(counts.values())
        assert lens.most_common(layer) == (min(t for t, c in counts.items() if c == best), best)
    assert lens.most_common(0) == (8, 5) and lens.most_common(1) == (4, 2)
