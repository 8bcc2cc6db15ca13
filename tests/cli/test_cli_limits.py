"""Every number a verb takes has a range checked while parsing; errors are one line; --version; escaped names."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli_hostile import _run_measured

from visualizer.cli import VERBS, main
from visualizer.cli.common import ArgumentError
from visualizer.cli.limits import (
    EVERY_VERB,
    MAX_EVAL_CELLS,
    MAX_EXHAUSTIVE_SOURCES,
    MAX_SOURCE,
    TABLE,
    TRAIN_MAX_SOURCE,
    Limit,
    eval_work_check,
    exhaustive_check,
    limit,
)
from visualizer.cli.options import verb_parser

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(ROOT / "resources" / "copy_rope.pt")
OUT = str(Path(tempfile.gettempdir()) / "attention-playground-limits-test.pt")  # never written: parsing fails first
REST = {
    "train": ["--task", "copy", "--out", OUT],
    "eval": [CKPT],
    "views": [CKPT, "--source", "01"],
    "decode": [CKPT, "01"],
    "heads": [CKPT],
    "cell": [CKPT, "01", "--kind", "cross", "--query", "0", "--key", "0"],
    "patch": [CKPT, "--clean", "01", "--corrupt", "02"],
    "lens": [CKPT, "--source", "01"],
    "attribute": [CKPT, "--source", "01"],
    "circuits": [CKPT],
    "page": [CKPT, "--source", "01", "--out", OUT + ".html"],
    "tasks": [],
}
ROWS = [(row.option, verb, row.limit) for row in TABLE for verb in (VERBS if row.verbs == EVERY_VERB else row.verbs)]
MAX_CALL_S = 2.0  # parsing only: no model is loaded, no tensor made
MAX_RSS_GROWTH_KIB = 64 * 1024
MAX_CHILD_RSS_KIB = 512 * 1024  # a refused number never even imports torch; a device error imports it to list them
HUGE = [
    "1" + "0" * 30,
    str(2**64),
    str(2**63),
    str(-(10**30)),
    "9" * 5000,
    "1e999",
    "-1e999",
    "nan",
    "inf",
    "-inf",
    "NaN",
    "",
    " ",
    "0x10",
    "one",
    "\x1b[31m7",
]


def _not_an_integer() -> st.SearchStrategy[str]:
    return st.sampled_from(["1.5", "1e3", "2.0", "½", "3 4"]) | st.floats(allow_nan=True).map(repr)


def _bad_value(bound: Limit) -> st.SearchStrategy[str]:
    """Text that is outside `bound` by construction (too small, too big, not a number, not finite)."""
    low, high = bound.low, bound.high
    if bound.kind is int:
        outside = st.integers(max_value=int(low) - 1) | st.integers(min_value=int(high) + 1)
        return outside.map(str) | st.sampled_from(HUGE) | _not_an_integer()
    too_small = st.floats(max_value=low, exclude_max=not bound.low_open, allow_nan=False)
    too_big = st.floats(min_value=high, exclude_min=True)
    return (too_small | too_big).map(repr) | st.sampled_from(HUGE)


def _call(args: list[str]) -> tuple[int, str, str, float, int]:
    """main(args) in this process: (status, stdout, stderr, seconds, growth of the peak RSS in KiB)."""
    out, err = io.StringIO(), io.StringIO()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    took = time.perf_counter() - start
    return status, out.getvalue(), err.getvalue(), took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_number_outside_its_range_is_one_quick_line(data):
    option, verb, bound = data.draw(st.sampled_from(ROWS), label="option")
    value = data.draw(_bad_value(bound), label="value")
    status, out, err, took, growth = _call([verb, *REST[verb], f"{option}={value}"])
    lines = err.splitlines()
    assert status == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"attention-playground: error: argument {option}: must be {bound.describe()}, got ")
    assert lines[0].endswith(f"(see 'attention-playground {verb} --help')") and "\x1b" not in err
    assert "Traceback" not in err and took < MAX_CALL_S and growth < MAX_RSS_GROWTH_KIB


@pytest.mark.parametrize(
    "args",
    [
        ["heads", CKPT, "--threads", "100000"],
        ["decode", CKPT, "01", "--beam", "100000"],
        ["eval", CKPT, "--seed", str(2**64)],
        ["eval", CKPT, "--lengths", "1-" + "9" * 5000],
        ["decode", CKPT, "01", "--device", "meta"],
        ["cell", *REST["cell"], "--paint", "cross:" + "9" * 5000 + ",1"],
    ],
)
def test_hostile_numbers_in_a_real_process_are_quick_small_and_one_line(args):
    start = time.perf_counter()
    status, out, err, rss_kib = _run_measured(*args)
    took = time.perf_counter() - start
    lines = err.splitlines()
    assert status == 2 and out == "" and len(lines) == 1 and lines[0].startswith("attention-playground: error: ")
    assert "Traceback" not in err and took < 30 and rss_kib < MAX_CHILD_RSS_KIB  # mostly interpreter start-up


@pytest.mark.parametrize("device", ["meta", "xla", "cuda:x", "cuda:123", "banana", "cpu,cuda", ""])
def test_devices_pick_device_cannot_serve_are_one_line(device):
    status, out, err, took, _ = _call(["decode", CKPT, "01", f"--device={device}"])
    assert status == 2 and out == "" and len(err.splitlines()) == 1 and took < MAX_CALL_S
    assert "argument --device: unknown device" in err and "choose cpu, cuda, cuda:N or mps" in err


def test_every_numeric_option_of_every_verb_has_a_stated_range():
    """No option parses a bare int or float: each number goes through the table, and its --help says the range."""
    sub = argparse.ArgumentParser().add_subparsers()
    seen = set()
    for verb, entry in VERBS.items():
        parser = verb_parser(sub, entry)
        for action in parser._actions:
            assert action.type not in (int, float), f"{verb} {action.option_strings}: number without a range"
            bound = getattr(action.type, "__self__", None)
            if isinstance(bound, Limit):
                option = action.option_strings[-1]
                assert bound is limit(verb, option) and f"[{bound.help()}]" in action.help
                seen.add((option, verb))
        assert "--threads" in {s for action in parser._actions for s in action.option_strings}, verb
        assert parser.get_default("threads") == 1
    assert seen == {(option, verb) for option, verb, _ in ROWS}  # and the table names nothing that is not there


def test_the_table_follows_core_models_own_caps():
    from core_model import config
    from core_model.tasks import max_source_len
    from core_model.training import TrainConfig
    from core_model.vocab import SYMBOL_POOL

    assert TRAIN_MAX_SOURCE == max_source_len(config.ModelConfig().max_len)
    assert limit("decode", "--max-new").high == config.MAX_LEN == limit("cell", "--query").high + 1
    assert limit("eval", "--length").high == max_source_len(config.MAX_LEN) == limit("decode", "--pads").high
    assert limit("train", "--symbols").high == len(SYMBOL_POOL)
    assert limit("cell", "--layer").high == config.MAX_LAYERS - 1
    assert limit("cell", "--head").high == config.MAX_HEADS - 1
    assert limit("decode", "--top-k").high == config.MAX_VOCAB_SIZE
    from core_model.beam_search import MAX_BEAM_WIDTH
    from core_model.head_importance import MAX_SEQUENCES
    from core_model.sampling import MAX_SAMPLES

    assert limit("decode", "--beam").high == MAX_BEAM_WIDTH and limit("decode", "--samples").high == MAX_SAMPLES
    from core_model.train_config import MAX_BATCH_SIZE, MAX_STEPS

    assert limit("heads", "--n").high == MAX_SEQUENCES  # the Heads tab's box takes the same range
    assert limit("train", "--steps").high == MAX_STEPS and limit("train", "--batch-size").high == MAX_BATCH_SIZE
    lr = limit("train", "--lr")
    assert [TrainConfig(lr=rate).lr for rate in (lr.low, lr.high)] == [lr.low, lr.high]  # rates the trainer takes
    assert torch.Generator().manual_seed(limit("train", "--seed").high).initial_seed() == 2**32 - 1


@pytest.mark.parametrize(
    "args",
    [
        ["decode", CKPT, "0123456789", "--beam", "64", "--device", "cpu"],
        ["decode", CKPT, "0123456789", "--samples", "256", "--temperature", "1000", "--device", "cpu"],
        ["views", CKPT, "--source", "0123456789", "--threads", "64"],
    ],
)
def test_the_largest_values_accepted_stay_cheap(args, one_torch_thread):
    status, out, err, took, growth = _call(args)
    assert status == 0 and err == "" and out.count("\n") == 1
    assert took < 60 and growth < 1024 * 1024  # seconds on one busy CPU; far from the gigabytes of beam 100000


@pytest.mark.parametrize(
    "verb, args",
    [
        (
            "train",
            [
                "--task",
                "copy",
                "--steps",
                "1",
                "--batch-size",
                "2",
                "--max-len",
                "2",
                "--eval-n",
                "1",
                "--device",
                "cpu",
            ],
        ),
        ("eval", [CKPT, "--lengths", "1-1", "--n", "1", "--device", "cpu"]),
        ("views", [CKPT, "--source", "01"]),
        ("decode", [CKPT, "01", "--device", "cpu"]),
        ("heads", [CKPT, "--n", "1"]),
        ("cell", [*REST["cell"], "--device", "cpu"]),
    ],
)
def test_every_verb_takes_threads_and_uses_them(verb, args, tmp_path, one_torch_thread):
    extra = ["--out", str(tmp_path / "m.pt")] if verb == "train" else []
    status, _, err, _, _ = _call([verb, *args, *extra, "--threads", "3"])
    assert status == 0, err
    assert torch.get_num_threads() == 3


@pytest.mark.parametrize(
    "args, hint",
    [
        (["train", "--task", "copy"], "the following arguments are required: --out (see 'attention-playground train"),
        (["eval"], "the following arguments are required: path (see 'attention-playground eval"),
        (["eval", CKPT, "--bogus"], "unrecognized arguments: --bogus (see 'attention-playground eval --help')"),
        (["views", CKPT, "--source", "01", "--mode", "gradients"], "argument --mode: invalid choice: 'gradients'"),
        (["decode", CKPT, "01", "--beam", "two"], "argument --beam: must be an integer from 1 to 64, got 'two'"),
        (["trian"], "unknown command 'trian': did you mean 'train'? (see 'attention-playground --help')"),
        ([], "the following arguments are required: command (see 'attention-playground --help')"),
        (["heads", CKPT, "--task", "shuffle"], "(see 'attention-playground heads --help')"),
        (["decode", CKPT, "01x"], "unknown symbol 'x' at position 3"),  # found by the verb, after parsing
    ],
)
def test_argparse_errors_are_one_line_with_a_hint(args, hint):
    status, out, err, _, _ = _call(args)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("attention-playground: error: ") and hint in err and err.rstrip().endswith("--help')")
    assert "usage:" not in err


def _entry(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "visualizer", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return proc, time.perf_counter() - start


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_and_exits_without_opening_the_window(flag):
    proc, took = _entry(flag)
    assert proc.returncode == 0 and proc.stdout == f"attention-playground {version('attention-playground')}\n"
    assert proc.stderr == "" and took < 10


def test_usage_names_version():
    proc, _ = _entry("--help")
    assert "attention-playground --version" in proc.stdout


NASTY = "evil\x1b[31mred\nnext\x07\u202e.pt"


@pytest.mark.parametrize("verb", ["eval", "views", "decode", "heads", "cell"])
@pytest.mark.parametrize("exists", [False, True])
def test_control_characters_in_file_names_are_escaped(verb, exists, tmp_path):
    path = tmp_path / NASTY
    if exists:
        path.write_bytes(b"PK\x03\x04 not a checkpoint")
    rest = [arg if arg != CKPT else str(path) for arg in REST[verb]]
    status, out, err, _, _ = _call([verb, *rest, "--device", "cpu"] if verb != "views" else [verb, *rest])
    assert status == 1 and out == "" and err.count("\n") == 1, err
    assert not any(ch in err for ch in "\x1b\x07\u202e") and "evil\\x1b[31mred\\nnext\\x07\\u202e.pt" in err


@pytest.mark.parametrize(
    "args",
    [
        ["eval", CKPT, "--\x1b[2Jwipe"],
        ["decode", CKPT, "01", "--beam", "\x1b[2J"],
        ["views", CKPT, "--source", "01", "--mode", "\x1b[2J"],
    ],
)
def test_control_characters_in_arguments_are_escaped(args):
    status, _, err, _, _ = _call(args)
    assert status == 2 and err.count("\n") == 1 and "\x1b" not in err and "\\x1b[2J" in err


def test_the_range_is_checked_before_the_file_is_read(tmp_path):
    """A bad number with a missing file is the number's error (exit 2): nothing was opened to find out."""
    status, _, err, _, _ = _call(["eval", str(tmp_path / "nope.pt"), "--n", "0"])
    assert status == 2 and "argument --n: must be an integer from 1 to" in err
    assert isinstance(limit("eval", "--n").parse("5"), int) and limit("decode", "--top-p").parse("1") == 1.0
    with pytest.raises(argparse.ArgumentTypeError):
        limit("decode", "--top-p").parse("0")


@pytest.fixture(scope="module")
def symbols_36(tmp_path_factory) -> Path:
    """An untrained copy model over all 36 symbols: --exhaustive K means 36 + 36^2 + ... sources for it."""
    from core_model import ModelConfig, build_model
    from core_model.checkpoint import save_checkpoint
    from core_model.vocab import Vocabulary

    model = build_model(
        ModelConfig(vocab_size=Vocabulary.size_for(36), d_model=16, n_heads=2, d_ff=32, max_len=16), seed=0
    )
    path = tmp_path_factory.mktemp("symbols") / "copy36.pt"
    return save_checkpoint(path, model, extra={"task": {"task": "copy", "n_symbols": 36, "min_len": 1, "max_len": 4}})


@pytest.mark.parametrize(("k", "count"), [(3, 36 + 36**2 + 36**3), (4, 36 + 36**2 + 36**3 + 36**4)])
def test_exhaustive_past_the_cap_for_the_checkpoints_symbols_is_refused_before_any_work(symbols_36, k, count):
    """K <= 4 bounds 10 symbols (11,110 sources at most); 36 symbols reach 47,988 at K = 3 and 1,727,604 at 4."""
    status, out, err, took, growth = _call(["eval", str(symbols_36), "--exhaustive", str(k), "--device", "cpu"])
    assert status == 2 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("attention-playground: error: --exhaustive ") and "Traceback" not in err
    assert f"{count:,} sources" in err and f"{MAX_EXHAUSTIVE_SOURCES:,}" in err and "36 symbols" in err
    assert took < MAX_CALL_S and growth < MAX_RSS_GROWTH_KIB  # the checkpoint read, nothing evaluated


def test_exhaustive_within_the_cap_runs_and_the_help_states_the_rule(symbols_36, capsys):
    assert main(["eval", str(symbols_36), "--lengths", "1", "--n", "1", "--exhaustive", "2", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out)["exhaustive"]["sources"] == 36 + 36**2
    exhaustive_check(4, 10, 14)  # the largest K for the shipped 10-symbol models: 11,110 sources
    parser = verb_parser(argparse.ArgumentParser().add_subparsers(), VERBS["eval"])
    help_text = " ".join(next(a.help for a in parser._actions if "--exhaustive" in a.option_strings).split())
    assert f"refused above {MAX_EXHAUSTIVE_SOURCES:,}" in help_text and "n + n^2 + ... + n^K" in help_text


def test_the_trainer_form_and_the_heads_box_take_the_clis_ranges(qtbot):
    """The same number is accepted in the window and by the CLI, or refused by both (the Heads tab's box:
    test_heads_view)."""
    from visualizer.widgets.training.form import TrainerForm

    form = TrainerForm()
    qtbot.addWidget(form)
    assert form.steps_spin.maximum() == limit("train", "--steps").high == form.warmup_spin.maximum()
    assert form.batch_spin.maximum() == limit("train", "--batch-size").high


@pytest.mark.parametrize(
    "args, n_text",
    [
        (["--lengths", "1-254", "--n", "10000"], "10,000 sources per length"),
        (["--lengths", "200-254", "--n", "1000"], "1,000 sources per length"),
        (["--length", "254", "--n", "10000"], "10,000 sources per length"),
        (["--lengths", "1-254", "--n", "50", "--repeated"], "60 sources per length"),  # 50 fit; 10 repeated do not
    ],
)
def test_eval_refuses_a_sweep_of_hours_before_any_work(args, n_text):
    """Old code: --lengths 1-254 --n 10000 was accepted and queued 2,540,000 sources (hours on one CPU thread)."""
    status, out, err, took, growth = _call(["eval", CKPT, *args, "--device", "cpu"])
    lines = err.splitlines()
    assert status == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith("attention-playground: error: eval would decode ") and n_text in lines[0]
    assert f"at most {MAX_EVAL_CELLS:,}" in lines[0] and ("use --n " in lines[0] or "fewer lengths" in lines[0])
    assert took < MAX_CALL_S and growth < MAX_RSS_GROWTH_KIB


def test_eval_work_cap_keeps_the_defaults_and_names_what_fits():
    eval_work_check(1000, list(range(1, 17)), 0)  # the shipped models' default: 16,000 sources of 1-16 symbols
    eval_work_check(100, list(range(200, 255)), 0)  # about two minutes on one CPU thread
    with pytest.raises(ArgumentError, match=r"use --n (\d+) or less") as refused:
        eval_work_check(1000, list(range(1, 255)), 0)
    most = int(re.search(r"use --n (\d+) or less", str(refused.value)).group(1))
    eval_work_check(most, list(range(1, 255)), 0)  # the --n the message names does fit
    with pytest.raises(ArgumentError):
        eval_work_check(most + 1, list(range(1, 255)), 0)
    with pytest.raises(ArgumentError, match="1 source per length for 4,094 lengths.*choose fewer lengths or shorter"):
        eval_work_check(1, list(range(1, 4095)), 0)  # not even one source per length fits
    with pytest.raises(ArgumentError, match=r"use --n 17 or less, or a shorter --length"):
        eval_work_check(100, [4094], 0, one_length=True)


def test_eval_without_n_decodes_as_many_as_fit_and_says_so(caplog):
    """--n's default, 1000 per length, would refuse `eval FILE` for any model trained past 96 symbols."""
    from visualizer.cli.evaluate import DEFAULT_N, _sources_per_length

    assert _sources_per_length(None, list(range(1, 17)), 10) == DEFAULT_N and not caplog.records
    assert _sources_per_length(None, list(range(1, 255)), 0) == 54  # the most eval_work_check accepts
    eval_work_check(54, list(range(1, 255)), 0)
    assert "decoding 54 sources per length instead of 1000, to keep lengths 1-254 within eval's cap" in caplog.text
    assert _sources_per_length(7, list(range(1, 255)), 0) == 7  # a given --n is kept; the check refuses it or not


@pytest.mark.parametrize("text", ["1-1000000000", "0-5", "7-3", "1-" + "9" * 30])
def test_eval_lengths_out_of_range_says_the_range_not_the_form(text):
    """Old code: "--lengths 1-1000000000" said it must look like A-B, which it does."""
    status, _, err, _, _ = _call(["eval", CKPT, "--lengths", text])
    assert status == 2 and len(err.splitlines()) == 1
    assert f"must be A-B with 1 <= A <= B <= {MAX_SOURCE}" in err and "look like" not in err


@pytest.mark.parametrize("value", ["٣", "３", "1_000"])
def test_numbers_are_ascii_digits(value):
    """Old code: int() read "٣" (Arabic-Indic three) as 3 and `train --steps ٣` ran three steps."""
    status, _, err, _, _ = _call(["eval", CKPT, "--n", value])
    assert status == 2 and "argument --n: must be an integer from 1 to" in err and f"got '{value}'" in err


def test_eval_lengths_help_states_its_range_and_the_work_cap():
    parser = verb_parser(argparse.ArgumentParser().add_subparsers(), VERBS["eval"])
    helps = {a.option_strings[-1]: " ".join(a.help.split()) for a in parser._actions if a.option_strings}
    assert f"[range: 1 to {MAX_SOURCE}" in helps["--lengths"]
    assert f"{MAX_EVAL_CELLS:,}" in helps["--lengths"] and f"{MAX_EVAL_CELLS:,}" in helps["--n"]
