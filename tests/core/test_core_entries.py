"""The one entries the CLI verbs and the Causal tab share: analyse_source (attribute), patch_sources (patch) and
source_lens (lens).
Each equals the same analysis assembled here from its parts, written out in the test, and refuses over the budget
before any work."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core_model.analysis_budget import BudgetError, Knobs
from core_model.attribution import attribute
from core_model.attribution_agreement import agreement, attention_views
from core_model.checkpoint import load_checkpoint
from core_model.decoding import greedy_output
from core_model.logit_lens import logit_lens
from core_model.patching import patch_effects
from core_model.shipped import resource_path
from core_model.source_analysis import analyse_source, occlusion_passes
from core_model.source_lens import source_lens
from core_model.source_patching import patch_sources
from core_model.tasks import expected_output


@pytest.fixture(scope="module")
def shipped():
    ckpt = load_checkpoint(resource_path("reverse_rope.pt"))
    return ckpt.build().eval(), ckpt.task


def test_analyse_source_is_greedy_output_attribution_views_and_agreement(shipped):
    model, task = shipped
    ids = task.vocabulary.encode("31415")
    decoded, steps = [], []
    found = analyse_source(
        model, task, ids, 8, lens=True, decoded=decoded.append, progress=lambda d, t: steps.append((d, t))
    )
    src = task.source_ids(ids)
    output = greedy_output(model, src, len(task.vocabulary))
    assert found.source == src and found.output == output and decoded == [output]
    mine = attribute(model, src, output, task.vocabulary.symbol_ids, ig_steps=8)
    for name in ("gradient_x_delta", "integrated_gradients", "occlusion"):
        np.testing.assert_allclose(getattr(found.attribution, name), getattr(mine, name), rtol=0, atol=1e-10)
    views = attention_views(model, src, output)
    assert set(found.views) == set(views) and all(np.allclose(found.views[k], views[k]) for k in views)
    symbols = [j for j, token in enumerate(src) if token in task.vocabulary.symbol_ids]
    assert found.agreement == agreement(mine, views, symbols)
    assert found.lens is not None
    lens = logit_lens(model, src, output, n_tokens=len(task.vocabulary))
    np.testing.assert_array_equal(found.lens.top_tokens, lens.top_tokens)
    np.testing.assert_allclose(found.lens.output_log_probs, lens.output_log_probs, atol=1e-12)
    # a step per output position's gradients, then per occlusion pass
    assert len(steps) == len(output) + occlusion_passes(model, task, src, len(output))


def test_source_lens_is_the_lens_of_the_greedy_output_of_the_padded_source(shipped):
    model, task = shipped
    ids, written = task.vocabulary.encode("2718"), []
    found = source_lens(model, task, ids, pads=2, decoding=lambda done, most: written.append(done))
    src = [*task.source_ids(ids), 0, 0]  # two <pad> tokens after the source
    output = greedy_output(model, src, len(task.vocabulary))
    assert found.source == src and found.output == output and written[-1] == len(output)
    assert found.expected == expected_output(task, ids)
    lens = logit_lens(model, src, output, n_tokens=len(task.vocabulary))
    np.testing.assert_array_equal(found.lens.top_tokens, lens.top_tokens)
    np.testing.assert_allclose(found.lens.top_log_probs, lens.top_log_probs, rtol=0, atol=1e-12)


def test_source_lens_over_the_budget_is_refused_before_it_decodes(shipped):
    model, task = shipped
    written = []
    with pytest.raises(BudgetError, match="the logit lens on 2 symbols"):
        source_lens(
            model,
            task,
            task.vocabulary.encode("12"),
            knobs=Knobs(source="--source"),
            decoding=lambda d, m: written.append(d),
            pads=10**6,
        )
    assert written == []


def test_analyse_source_over_the_budget_is_refused_before_it_decodes(shipped):
    model, task = shipped
    written = []
    with pytest.raises(BudgetError, match="IG"):
        analyse_source(
            model,
            task,
            task.vocabulary.encode("3141592653"),
            10**9,
            knobs=Knobs(ig_steps="IG steps"),
            decoding=lambda w, _m: written.append(w),
        )
    assert written == []


def test_patch_sources_is_patch_effects_on_the_tasks_inputs_and_outputs(shipped):
    model, task = shipped
    clean, corrupt = task.vocabulary.encode("31415"), task.vocabulary.encode("31475")
    found = patch_sources(model, task, clean, corrupt)
    with torch.no_grad():
        mine = patch_effects(
            model,
            task.source_ids(clean),
            task.source_ids(corrupt),
            expected_output(task, clean),
            expected_output(task, corrupt),
            None,
        )
    assert found.position == mine.position and found.clean_metric == pytest.approx(mine.clean_metric, abs=1e-9)
    np.testing.assert_allclose(found.positions, mine.positions, atol=1e-9)
    assert [h.effect for h in found.heads] == pytest.approx([h.effect for h in mine.heads], abs=1e-9)
