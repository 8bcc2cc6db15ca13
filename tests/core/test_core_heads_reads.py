"""The cross `alignment` role scores "reads where the answer comes from": the weight on the task's ground-truth reads
positions. For copy, reverse and sort those are the positions holding the symbol (the score as it always was); for
addition, recall and the other tasks it is checked against float64 loops over the maps with the reads of the tests'
own task references (tests/task_references.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from task_references import REFERENCES

from core_model import ModelConfig, build_model
from core_model.head_roles import head_roles, probe_sequences, reads_mask, roles_from_maps
from core_model.tasks import TaskSpec, default_spec
from core_model.vocab import BOS, EOS, PAD

N, SEED = 24, 5

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def _tiny(task: TaskSpec) -> torch.nn.Module:
    config = ModelConfig(
        vocab_size=max(8, task.vocab_size), d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2
    )
    return build_model(config, seed=3).eval()


def _maps(model, batch) -> dict[str, np.ndarray]:
    with torch.no_grad():
        att = model(batch.src, batch.tgt_in, return_attention=True).attention
    return {
        kind: np.stack([m.double().numpy() for m in att.kind(kind)])
        for kind in ("encoder_self", "decoder_self", "cross")
    }


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.parametrize("task_name", ["copy", "reverse", "sort"])
def test_copy_reverse_and_sort_read_every_position_holding_the_symbol_so_the_roles_do_not_change(task_name, anchored):
    """Their reads are the positions holding each output's symbol: the mask equals the old "holds" mask on every
    scored query, and the roles with the reads equal, to the last bit, the roles scored without them."""
    task = TaskSpec(task_name, n_symbols=4, min_len=1, max_len=7, runs=0.5, anchored=anchored)
    batch = probe_sequences(task, N, SEED)
    src, tgt_in, tgt_out = (t.numpy() for t in (batch.src, batch.tgt_in, batch.tgt_out))
    queries = (tgt_out != PAD) & (tgt_out != EOS) & (tgt_out != BOS)
    holds = (src[:, None, :] == tgt_out[:, :, None]) & (src != PAD)[:, None, :] & queries[:, :, None]
    reads = reads_mask(task, src, tgt_out)
    assert np.array_equal(reads, holds) and reads.any()
    model = _tiny(task)
    maps = _maps(model, batch)
    assert head_roles(model, task, n=N, seed=SEED) == roles_from_maps(maps, src, tgt_in, tgt_out)


def _loop_alignment(w: np.ndarray, task: TaskSpec, src: list[list[int]], tgt_out: list[list[int]]) -> float:
    """One head's maps w (B, T, S) in float64: the mean over symbol-producing decoder positions of the weight on
    the reference's reads of that output, one column further right when the source is anchored."""
    reference, vocab = REFERENCES[task.task], task.vocabulary
    shift = 1 if task.anchored else 0
    total, count = 0.0, 0
    for b, row in enumerate(src):
        source = "".join(vocab.token(t) for t in row if t not in (PAD, BOS, EOS))
        reads = reference.reads(source, task.n_symbols)
        labels = [t for t in tgt_out[b] if t not in (PAD, EOS, BOS)]
        assert len(labels) == len(reads)
        for t in range(len(labels)):
            total += sum(float(w[b, t, s + shift]) for s in reads[t])
            count += 1
    return total / count


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.parametrize("task_name", ["addition", "recall", "histogram", "dyck_depth", "copy_memory"])
def test_alignment_is_the_weight_on_the_tasks_reads(task_name, anchored):
    task = default_spec(task_name, anchored=anchored, runs=0.25)
    model = _tiny(task)
    batch = probe_sequences(task, N, SEED)
    maps = _maps(model, batch)
    src, tgt_out = batch.src.tolist(), batch.tgt_out.tolist()
    roles = {(r.layer, r.head): r for r in head_roles(model, task, n=N, seed=SEED) if r.kind == "cross"}
    assert len(roles) == 2 * 2
    for (layer, head), role in roles.items():
        assert role.alignment == pytest.approx(
            _loop_alignment(maps["cross"][layer][:, head], task, src, tgt_out), abs=1e-12
        )


def test_addition_reads_both_digits_of_a_place_and_of_the_place_below_not_the_digits_equal_to_the_sum():
    """Hand-made maps of one addition 12+39 (21 + 93 = 114, least significant first "411"): digit 0 reads positions
    0 and 3, digit 1 positions 1 and 4 and the place below (0 and 3: its carry), the final carry the top place; the
    <eos> row is not scored."""
    task = TaskSpec("addition", n_symbols=10, min_len=5, max_len=5)
    vocab = task.vocabulary
    assert task.definition.target("12+39", 10) == "411"
    src = np.array([vocab.encode("12+39")])
    tgt_out = np.array([[*vocab.encode("411"), EOS]])
    tgt_in = np.array([[BOS, *vocab.encode("411")]])
    w = np.zeros((1, 1, 1, 4, 5))
    w[0, 0, 0, 0] = [0.5, 0.0, 0.0, 0.25, 0.25]  # digit 0: 0.75 on positions 0 and 3
    w[0, 0, 0, 1] = [0.25, 0.25, 0.5, 0.0, 0.0]  # digit 1: 0.5 on positions 0 and 1 (the "+" is not read)
    w[0, 0, 0, 2] = [0.0, 0.0, 0.0, 0.0, 1.0]  # the carry: 1.0 on position 4 (the top place)
    w[0, 0, 0, 3] = [1.0, 0.0, 0.0, 0.0, 0.0]  # <eos>: not scored
    (role,) = roles_from_maps({"cross": w}, src, tgt_in, tgt_out, reads=reads_mask(task, src, tgt_out))
    assert role.alignment == pytest.approx((0.75 + 0.5 + 1.0) / 3, abs=1e-15)
    (copying,) = roles_from_maps({"cross": w}, src, tgt_in, tgt_out)  # without the task: the positions holding "1"
    assert copying.alignment == pytest.approx((0.0 + 0.25 + 0.0) / 3, abs=1e-15)  # the "1" at position 0


def test_the_sequences_sentence_names_a_tasks_hard_cases_not_runs():
    from core_model.head_roles import probe_description
    from core_model.tasks import default_spec

    addition = probe_description(default_spec("addition", runs=0.25), 200, 1234)["description"]
    assert "25% of them the task's hard cases" in addition and "repeated" not in addition
    copy = probe_description(default_spec("copy", runs=0.25), 200, 1234)["description"]
    assert "25% of them runs of repeated symbols" in copy


def test_a_head_that_looks_elsewhere_is_other_not_the_pattern_that_holds_a_fifth_of_its_weight():
    """Every row of one addition 1234567+9876543 puts 0.8 on the "+" and 0.2 on position 0: its best pattern,
    `first`, holds a fifth of its weight (more than its `broad` score over 15 keys), so the head is named other."""
    task = TaskSpec("addition", n_symbols=10, min_len=15, max_len=15)
    vocab = task.vocabulary
    source = "1234567+9876543"
    answer = task.definition.target(source, 10)
    src = np.array([vocab.encode(source)])
    tgt_out = np.array([[*vocab.encode(answer), EOS]])
    tgt_in = np.array([[BOS, *vocab.encode(answer)]])
    w = np.zeros((1, 1, 1, len(answer) + 1, len(source)))
    w[0, 0, 0, :, 0], w[0, 0, 0, :, 7] = 0.2, 0.8
    (role,) = roles_from_maps({"cross": w}, src, tgt_in, tgt_out, reads=reads_mask(task, src, tgt_out))
    scores = dict(role.scores)
    assert scores["first"] == pytest.approx(0.2, abs=1e-12) and scores["broad"] < 0.2
    assert role.role == "other"
