"""One registry of verbs: usage, help and the answer to a mistyped verb come from it; every verb spells the shared
options (--json, --device, --seed, --threads) the same way; task choices are every task of the registry; parsing
needs no torch."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core_model.shipped import resource_path
from core_model.tasks import TASK_NAMES
from visualizer.__main__ import main as entry_main
from visualizer.cli import VERBS, build_parser, main
from visualizer.cli.common import Verb

ROOT = Path(__file__).resolve().parents[2]
CKPT = str(resource_path("copy_rope.pt"))
REST = {
    "train": ["--task", "copy", "--out", "x.pt"],
    "eval": [CKPT],
    "views": [CKPT, "--source", "01"],
    "decode": [CKPT, "01"],
    "heads": [CKPT],
    "cell": [CKPT, "01", "--kind", "cross", "--query", "0", "--key", "0"],
}
SHARED = ["--json", "--device", "cpu", "--seed", "5", "--threads", "1"]


def _frobnicate() -> Verb:
    """A verb that is in no module: registering it must be enough for usage, suggestions and dispatch."""

    def add_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--level")

    def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        sys.stdout.write(json.dumps({"level": ns.level, "json": ns.json}) + "\n")
        return 0

    return Verb("frobnicate", "[--level L]", "frobnicate the checkpoint thoroughly", add_options, run)


def _usage_verbs(text: str) -> tuple[list[str], list[str]]:
    """The verbs named on the usage lines, and those in the summary block, in order."""
    lines = text.splitlines()
    blank = lines.index("")
    usage = [line.split("attention-playground ", 1)[1].split()[0] for line in lines[:blank]]
    summary = [line.split()[0] for line in lines[blank + 2 :] if line.startswith("  ")]
    assert lines[blank + 1] == "Headless commands (no window, no display needed):"
    return [word for word in usage if not word.startswith(("[", "-"))], summary


def test_usage_lists_exactly_the_registered_verbs(capsys):
    assert entry_main(["--help"]) == 0
    usage, summary = _usage_verbs(capsys.readouterr().out)
    assert usage == summary == list(VERBS)


def test_a_registered_verb_appears_in_usage_is_suggested_and_runs(capsys, monkeypatch):
    monkeypatch.setitem(VERBS, "frobnicate", _frobnicate())
    assert entry_main(["-h"]) == 0
    out = capsys.readouterr().out
    assert _usage_verbs(out) == (list(VERBS), list(VERBS)) and "frobnicate the checkpoint thoroughly" in out
    assert "attention-playground frobnicate [--level L]" in out
    assert entry_main(["frobnicat"]) == 2
    assert "did you mean 'frobnicate'?" in capsys.readouterr().err
    assert entry_main(["frobnicate", "--level", "9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"level": "9", "json": True}


def test_a_mistyped_verb_names_the_closest_registered_one(capsys):
    for verb in VERBS:
        assert main([verb[:-1] + "x"]) == 2  # one letter wrong
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"did you mean {verb!r}?" in err


@pytest.mark.parametrize("verb", list(REST))
def test_every_verb_takes_the_shared_options(verb):
    parser, _ = build_parser()
    ns = parser.parse_args([verb, *REST[verb], *SHARED])
    assert (ns.json, ns.device, ns.seed, ns.threads) == (True, "cpu", 5, 1)


def test_every_verb_help_documents_json_as_its_only_format():
    """...except a verb that prints a table for people (`tasks`): its help says what --json changes instead."""
    _, parsers = build_parser()
    for verb, parser in parsers.items():
        text = " ".join(parser.format_help().split())
        wanted = VERBS[verb].json_help or "only output format"
        assert "--json" in text and wanted in text, verb
    assert [name for name, verb in VERBS.items() if verb.json_help] == ["tasks"]


def test_task_choices_are_every_task_of_the_registry():
    from visualizer.cli.options import TASK_CHOICES

    assert TASK_CHOICES == TASK_NAMES  # the torch-free copy of the registry's names, in its order
    _, parsers = build_parser()
    with_task = {
        verb
        for verb, parser in parsers.items()
        for action in parser._actions
        if "--task" in action.option_strings and tuple(action.choices) == TASK_NAMES
    }
    takes_task = {
        verb for verb, parser in parsers.items() for action in parser._actions if "--task" in action.option_strings
    }
    assert with_task == takes_task == {"train", "eval", "views", "heads", "patch"}


def test_views_accepts_json_device_and_seed_and_the_seed_changes_nothing(capsys):
    args = ["views", CKPT, "--source", "3141", "--mode", "scores"]
    assert main([*args, "--json", "--device", "cpu", "--seed", "7"]) == 0
    with_options = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert with_options == plain and plain["device"] == "cpu" and plain["maps"]["cross"]


def test_cell_accepts_seed_and_the_seed_changes_nothing(capsys):
    args = ["cell", CKPT, "3141", "--kind", "cross", "--query", "1", "--key", "2", "--device", "cpu"]
    assert main([*args, "--seed", "1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*args, "--seed", "99"]) == 0
    assert json.loads(capsys.readouterr().out) == first


def test_parsing_every_verb_and_the_usage_import_no_torch_and_no_qt():
    code = (
        "import sys\nfrom visualizer.cli import build_parser, usage\nusage()\nparser, _ = build_parser()\n"
        f"for args in {[[v, *r, *SHARED] for v, r in REST.items()]!r}:\n    parser.parse_args(args)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'PySide6', 'pyqtgraph')))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_python_m_visualizer_runs_a_verb():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", QT_QPA_PLATFORM="")
    proc = subprocess.run(
        [sys.executable, "-m", "visualizer", "views", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "--json" in proc.stdout and "--seed" in proc.stdout and proc.stderr == ""
