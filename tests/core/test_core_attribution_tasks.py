"""Attribution and patching on every task: occlusion's edits and the baseline range over the task's source alphabet,
an edit that breaks the grammar is skipped, and patching refuses a source the task does not take. Checked against
the tests' own task references (tests/task_references.py) and a float64 computation written out here."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
import torch
from task_references import REFERENCES

from core_model import ModelConfig, build_model
from core_model.attribution import attribute, occlusion_pairs
from core_model.inputs import decoder_input
from core_model.source_analysis import analyse_source, occlusion_edits, occlusion_passes, source_symbol_ids
from core_model.source_patching import patch_sources
from core_model.tasks import TASK_NAMES, TaskSpec, default_spec
from core_model.vocab import N_SPECIALS

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def _tiny(task: TaskSpec, seed: int = 0) -> torch.nn.Module:
    config = ModelConfig(vocab_size=max(8, task.vocab_size), d_model=16, n_heads=2, d_ff=32, max_len=24)
    return build_model(config, seed=seed).eval()


def _sources(task: TaskSpec, count: int = 6) -> list[str]:
    """A few valid sources of the task: its hard cases and random draws of its shorter lengths."""
    definition, n, rng = task.definition, task.n_symbols, random.Random(1)
    lengths = task.lengths()[:4]
    out = [definition.adversarial(n, length)[0] for length in lengths]
    out += [definition.draw(rng, n, rng.choice(lengths)) for _ in range(count)]
    return out


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.parametrize("task_name", TASK_NAMES)
def test_occlusion_edits_are_every_single_change_the_reference_calls_valid(task_name, anchored):
    task = default_spec(task_name, anchored=anchored)
    reference, n, vocab = REFERENCES[task_name], task.n_symbols, task.vocabulary
    for source in _sources(task):
        src = task.source_ids(vocab.encode(source))
        edits = occlusion_edits(task, src)
        shift = 1 if anchored else 0
        assert len(edits) == len(src) and (not anchored or edits[0] == edits[-1] == [])
        for j, symbol in enumerate(source):
            own = [
                s for s in reference.alphabet(n) if s != symbol and reference.valid(source[:j] + s + source[j + 1 :], n)
            ]
            assert vocab.tokens(edits[j + shift]) == sorted(own, key=reference.alphabet(n).index), (source, j)


def test_structural_symbols_and_brackets_are_never_edited():
    addition, recall, dyck = (default_spec(name) for name in ("addition", "recall", "dyck_depth"))
    plus = occlusion_edits(addition, addition.vocabulary.encode("927+185"))
    assert plus[3] == [] and all(len(e) == 9 for j, e in enumerate(plus) if j != 3)  # every other digit
    keys = occlusion_edits(recall, recall.vocabulary.encode("a3b1c4?b"))
    letters = "abcdefgh"
    assert recall.vocabulary.tokens(keys[0]) == [c for c in letters if c not in "abc"]  # not a key already there
    assert recall.vocabulary.tokens(keys[7]) == ["a", "c"] and keys[6] == []  # the query: another key; "?" stays
    assert all(e == [] for e in occlusion_edits(dyck, dyck.vocabulary.encode("(()())")))  # one flip unbalances


@pytest.mark.parametrize("task_name", ["copy", "reverse", "sort"])
def test_copy_reverse_and_sort_occlude_with_every_other_symbol_as_before(task_name):
    task = TaskSpec(task_name, n_symbols=5, anchored=True)
    src = task.source_ids(task.vocabulary.encode("01140"))
    assert source_symbol_ids(task) == list(task.vocabulary.symbol_ids)
    default = occlusion_pairs(src, task.vocabulary.symbol_ids)
    assert occlusion_pairs(src, task.vocabulary.symbol_ids, occlusion_edits(task, src)) == default
    model = _tiny(task)
    found = analyse_source(model, task, task.vocabulary.encode("01140"), 4)
    mine = attribute(model, src, found.output, task.vocabulary.symbol_ids, ig_steps=4)
    for name in ("gradient_x_delta", "integrated_gradients", "occlusion", "f_input", "f_baseline"):
        np.testing.assert_array_equal(getattr(found.attribution, name), getattr(mine, name))


def _f(model64, src: list[int], output: list[int], table_rows: dict[int, torch.Tensor] | None = None) -> np.ndarray:
    """log p(output token i) teacher-forced, in float64; `table_rows` puts another (unscaled) source embedding at
    some encoder positions."""
    calls = []

    def swap(_module, _args, out):
        calls.append(None)
        if len(calls) > 1 or not table_rows:  # the tied decoder embedding is the second call
            return out
        out = out.clone()
        for j, row in table_rows.items():
            out[0, j] = row
        return out

    handle = model64.src_embed.register_forward_hook(swap)
    try:
        with torch.no_grad():
            lp = model64(torch.tensor([src]), torch.tensor([decoder_input(output[:-1])])).log_probs[0]
    finally:
        handle.remove()
    return np.array([float(lp[i, t]) for i, t in enumerate(output)])


@pytest.mark.parametrize("task_name", ["addition", "recall", "histogram", "copy_memory"])
def test_occlusion_and_the_baseline_equal_a_float64_computation_over_the_source_alphabet(task_name):
    task = default_spec(task_name, anchored=True)
    model, vocab = _tiny(task, seed=2), task.vocabulary
    source = task.definition.example(task.n_symbols, next(n for n in task.lengths() if n >= 5))
    found = analyse_source(model, task, vocab.encode(source), 3)
    src, output = found.source, found.output
    model64 = copy.deepcopy(model).double().eval()
    base = _f(model64, src, output)
    np.testing.assert_allclose(found.attribution.f_input, base, atol=1e-12)
    reference = REFERENCES[task_name]
    for j, symbol in enumerate(source):
        own = [s for s in reference.alphabet(task.n_symbols) if s != symbol]
        own = [s for s in own if reference.valid(source[:j] + s + source[j + 1 :], task.n_symbols)]
        edited = [_f(model64, src[: j + 1] + vocab.encode(s) + src[j + 2 :], output) for s in own]
        want = base - np.mean(edited, axis=0) if edited else np.zeros_like(base)
        np.testing.assert_allclose(found.attribution.occlusion[:, j + 1], want, atol=1e-10)
    np.testing.assert_array_equal(found.attribution.occlusion[:, [0, -1]], 0.0)  # the anchors
    table = model64.src_embed.weight
    letters = torch.tensor(vocab.encode(reference.alphabet(task.n_symbols)))
    mean = table[letters].mean(0)
    symbols = {j: mean for j, t in enumerate(src) if t >= N_SPECIALS}
    np.testing.assert_allclose(found.attribution.f_baseline, _f(model64, src, output, symbols), atol=1e-10)
    if task_name == "histogram":  # its vocabulary's counts 1-9 are no source symbol, so no part of the baseline
        everything = table[list(vocab.symbol_ids)].mean(0)
        other = _f(model64, src, output, dict.fromkeys(symbols, everything))
        assert np.abs(found.attribution.f_baseline - other).max() > 1e-6
    passes = occlusion_passes(model, task, src, len(output))
    assert passes == (1 if any(occlusion_edits(task, src)) else 0)


def test_a_dyck_source_has_no_occlusion_but_its_gradients_still_attribute():
    task, steps = default_spec("dyck_depth", anchored=True), []
    model = _tiny(task)
    found = analyse_source(model, task, task.vocabulary.encode("(())()"), 3, progress=lambda d, t: steps.append(d))
    assert not found.attribution.occlusion.any() and np.abs(found.attribution.integrated_gradients).max() > 0
    assert occlusion_passes(model, task, found.source, len(found.output)) == 0
    assert len(steps) == len(found.output)  # the gradients' steps, and no occlusion pass


@pytest.mark.parametrize(
    ("task_name", "clean", "corrupt", "message"),
    [
        ("addition", "12+34", "12+3+", "the corrupted source: an addition needs one '+' between two numbers"),
        ("addition", "1234+", "12+34", "the clean source: an addition needs one '+' between two numbers"),
        ("recall", "a1b2?a", "a1a2?a", "the corrupted source: the keys of a recall must be distinct"),
        ("dyck_depth", "(())", "()))", "the corrupted source: brackets must balance"),
    ],
)
def test_patching_refuses_a_source_the_task_does_not_take(task_name, clean, corrupt, message):
    task = default_spec(task_name, anchored=True)
    encode = task.vocabulary.encode
    with pytest.raises(ValueError, match=message.replace("+", "\\+").replace("(", "\\(")):
        patch_sources(_tiny(task), task, encode(clean), encode(corrupt))


def test_patching_two_valid_sources_of_a_grammar_task_runs():
    task = default_spec("addition", anchored=True)
    encode = task.vocabulary.encode
    result = patch_sources(_tiny(task), task, encode("12+34"), encode("92+34"))
    assert result.position == 0 and task.vocabulary.tokens([result.clean_token, result.corrupt_token]) == ["4", "2"]
