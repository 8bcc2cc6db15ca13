"""core_model.inputs: the encoder and teacher-forced decoder inputs every front end feeds the model."""

from __future__ import annotations

import pytest
import torch

from core_model.inputs import decoder_input, encoder_input
from core_model.tasks import TASK_NAMES, TaskSpec, default_spec, expected_output, make_batch

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2  # written out: the vocabulary's first three ids are <pad>, <bos>, <eos>


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.parametrize("pads", [0, 1, 3])
def test_encoder_input_is_the_source_with_anchors_then_pads(anchored, pads):
    ids = [5, 3, 3, 9]
    expected = ([BOS_ID] if anchored else []) + ids + ([EOS_ID] if anchored else []) + [PAD_ID for _ in range(pads)]
    assert encoder_input(ids, pads, anchored=anchored) == expected
    assert encoder_input(tuple(ids), pads, anchored=anchored) == expected  # any sequence, always a new list


@pytest.mark.parametrize("pads", [0, 2])
def test_decoder_input_is_bos_then_target_then_pads(pads):
    assert decoder_input([7, 4], pads) == [BOS_ID, 7, 4] + [PAD_ID for _ in range(pads)]
    assert decoder_input((), pads) == [BOS_ID] + [PAD_ID for _ in range(pads)]


def test_negative_pads_are_refused():
    with pytest.raises(ValueError, match="pads"):
        encoder_input([4], -1)
    with pytest.raises(ValueError, match="pads"):
        decoder_input([4], -1)


@pytest.mark.parametrize("anchored", [False, True])
def test_task_source_ids_is_encoder_input_without_pads(anchored):
    assert TaskSpec(anchored=anchored).source_ids([6, 8]) == encoder_input([6, 8], anchored=anchored)


@pytest.mark.parametrize("task", TASK_NAMES)
@pytest.mark.parametrize("anchored", [False, True])
def test_training_batches_hold_the_same_tokens_as_one_example(task, anchored):
    """Training and every single-example front end must feed the model the same layout: right padding, same anchors."""
    spec = default_spec(task, anchored=anchored)
    batch = make_batch(spec, 40, torch.Generator().manual_seed(1))
    for src, tgt_in in zip(batch.src.tolist(), batch.tgt_in.tolist()):
        symbols = [t for t in src if t > EOS_ID]
        width = len(symbols) + (2 if anchored else 0)
        assert src == encoder_input(symbols, len(src) - width, anchored=anchored)
        target = expected_output(spec, symbols)
        assert tgt_in == decoder_input(target, len(tgt_in) - 1 - len(target))
