"""Checkpoints that save_checkpoint itself writes, every number in range, whose analyses would still take gigabytes
or many minutes: patch, lens, attribute and circuits refuse them in one line before any pass, with the numbers and
only the options that exist; what a refusal suggests does fit; long work counts itself on stderr."""

from __future__ import annotations

import re
import resource

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.analysis_budget import BudgetError, Knobs, analysis_output, check_attribute, check_patch
from core_model.analysis_cost import MAX_WORK, Cost, composition_counts
from core_model.checkpoint import save_checkpoint
from core_model.head_composition import composition_pairs
from core_model.shipped import resource_path
from core_model.vocab import EOS
from visualizer.cli import main

COPY = resource_path("copy_rope.pt")
DEEP = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=24, n_decoder_layers=24, max_len=4096)
CLI = Knobs(source="--source", ig_steps="--ig-steps")


def refused(capsys, args: list[str]) -> str:
    """Exit 2, one line on stderr, nothing on stdout, and no pass run (the process grew by less than 200 MB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main([*args, "--threads", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 * 1024  # KiB
    return err


def saved(tmp_path, config: ModelConfig, never_ends: bool = False) -> str:
    """A checkpoint of an untrained model of `config`; `never_ends`: its decoder never chooses <eos>."""
    model = build_model(config, seed=0)
    if never_ends:
        with torch.no_grad():
            model.generator.bias[EOS] = -1e4
    return str(save_checkpoint(tmp_path / "model.pt", model))


def test_circuits_over_a_1024_token_vocabulary_says_the_model_is_too_large(tmp_path, capsys):
    err = refused(capsys, ["circuits", saved(tmp_path, ModelConfig(vocab_size=1024, d_model=16, n_heads=2, d_ff=32))])
    assert "reading the circuits of 12 heads over 1,024 tokens and 12 positions would need about 2.8 GB" in err
    assert "the model alone (12 heads, 1,024 tokens, 84 composition links) is over that, whatever the options" in err
    for absent in ("--n ", "IG steps", "pads", "--positions", "--baseline-samples", "sequences"):
        assert absent not in err  # options circuits does not have, and options that would not help


def test_circuits_of_a_24_plus_24_layer_64_head_model_is_refused_at_once(tmp_path, capsys):
    config = ModelConfig(
        d_model=64, n_heads=64, d_ff=16, n_encoder_layers=24, n_decoder_layers=24, positional="sinusoidal"
    )
    err = refused(capsys, ["circuits", saved(tmp_path, config)])
    assert "4,608 heads" in err and "17,252,352 composition links" in err and "whatever the options" in err


def test_composition_links_are_counted_as_head_composition_lists_them():
    config = ModelConfig(d_model=48, n_heads=3, n_encoder_layers=3, n_decoder_layers=2)
    heads = (3 + 2 + 2) * 3
    links, unlinked = composition_counts(config)
    pairs = composition_pairs(config)
    assert links == len(pairs)
    assert unlinked == heads * (heads - 1) - len({(s, t) for s, t, _kind in pairs})


def test_patch_on_a_4094_symbol_source_says_how_long_a_source_fits(tmp_path, capsys):
    path = saved(tmp_path, ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=4096))
    long = ("0123456789" * 410)[:4094]
    corrupt = "5" + long[1:]
    err = refused(capsys, ["patch", path, "--clean", long, "--corrupt", corrupt])
    assert "patching on 4094 symbols (8,206 patched runs) would need about" in err
    assert re.search(r"use at most \d+ symbols in --clean and --corrupt \(see", err)


def test_a_suggested_length_or_step_count_fits_and_one_more_does_not():
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=4096)
    knobs = Knobs(source="--clean")
    with pytest.raises(BudgetError, match=r"use at most \d+ symbols") as refusal:
        check_patch(config, 4094, 4096, 4095, knobs)
    most = int(re.search(r"use at most (\d+) symbols", str(refusal.value)).group(1))
    check_patch(config, most, most + 2, most + 1, knobs)  # fits: no error
    with pytest.raises(BudgetError):
        check_patch(config, most + 1, most + 3, most + 2, knobs)
    with pytest.raises(BudgetError, match=r"use --ig-steps \d+ or less") as refusal:
        check_attribute(DEEP, 40, 42, 41, 512, CLI)
    steps = int(re.search(r"use --ig-steps (\d+)", str(refusal.value)).group(1))
    check_attribute(DEEP, 40, 42, 41, steps, CLI)
    with pytest.raises(BudgetError):
        check_attribute(DEEP, 40, 42, 41, steps + 1, CLI)


@pytest.mark.parametrize("verb", ["lens", "attribute"])
def test_lens_and_attribute_on_a_long_source_of_a_deep_model_say_what_fits(verb, tmp_path, capsys):
    long = ("0123456789" * 410)[:4094]
    err = refused(capsys, [verb, saved(tmp_path, DEEP), "--source", long])
    assert "on 4094 symbols would need about" in err and " symbols in --source" in err


def test_attribute_on_a_deep_model_that_never_ends_stops_decoding_within_the_budget(tmp_path, capsys):
    """Without a cap the decoder would write 4,095 tokens, and attribute them for hours."""
    assert main(["attribute", saved(tmp_path, DEEP, never_ends=True), "--source", "1", "--threads", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1].startswith("attention-playground: error: the model wrote")
    assert "the model wrote" in err and "tokens for this source without <eos>; attribution of a longer output" in err
    assert "use a shorter --source" in err
    written = int(err.split("the model wrote ")[1].split()[0].replace(",", ""))
    assert written < 4095


def test_an_analysis_decodes_no_further_than_its_budget_allows():
    model = build_model(DEEP, seed=0).eval()
    with torch.no_grad():
        model.generator.bias[EOS] = -1e4
    seen: list[tuple[int, int]] = []
    ten = lambda tokens: Cost(0, tokens * (MAX_WORK // 10))  # noqa: E731 - an analysis that fits 10 tokens
    with pytest.raises(BudgetError, match="the model wrote 10 tokens for this source without <eos>"):
        analysis_output(model, [1, 5, 2], 13, ten, 2, "the logit lens", CLI, lambda *p: seen.append(p))
    assert seen[-1] == (10, 10)


def test_the_shipped_models_attribution_at_254_symbols_is_refused_with_what_fits(capsys):
    long = ("0123456789" * 26)[:254]
    err = refused(capsys, ["attribute", str(COPY), "--source", long])
    assert "attribution with 32 IG steps on 254 symbols would need about" in err
    assert re.search(r"use --ig-steps \d or less, or use at most 1\d\d symbols in --source \(see", err)


def test_attribute_counts_its_output_positions_and_occlusion_passes_on_stderr(capsys):
    assert main(["attribute", str(COPY), "--source", "31415926", "--ig-steps", "4"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith("attribution steps 1/") and lines[-1].startswith("attribution steps 10/10")


def test_patch_counts_its_patched_runs_on_stderr(capsys):
    assert main(["patch", str(COPY), "--clean", "31415926", "--corrupt", "31475926"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("patched runs ") and lines[-1].startswith("patched runs 50/50")


def test_circuits_counts_its_parts_on_stderr(capsys):
    assert main(["circuits", str(COPY), "--baseline-samples", "2"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("circuits parts (tokens) 1/4") and lines[-1].startswith("circuits parts (baseline) 4/4")
