"""Crafted checkpoints that would crash later if loaded: each is refused in one line by the loader,
by every verb and by File > Open (the model shown stays); damaged bytes are found; what is merely odd still loads."""

from __future__ import annotations

import itertools
import logging
import math
import re
import struct
import time
import zipfile
from pathlib import Path

import pytest
import torch
from PySide6.QtCore import Qt
from qt_helpers import wait_frame

from core_model import ModelConfig, build_model
from core_model.checkpoint import MAX_HISTORY_ROWS, CheckpointError, load_checkpoint, save_checkpoint
from core_model.checkpoint_validation import CHECKSUM_KEY, weights_digest
from core_model.training import TrainConfig
from visualizer.cli import main
from visualizer.composition import Application
from visualizer.controllers import checkpoints as checkpoint_actions

ROOT = Path(__file__).resolve().parents[2]
BEFORE_CHECKSUMS = tuple(f"{task}_{pe}.pt" for task in ("copy", "reverse", "sort") for pe in ("rope", "sinusoidal"))
CONFIG = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=32)
TASK = {"task": "copy", "n_symbols": 10, "min_len": 2, "max_len": 5}
ROW = {"step": 1, "loss": 2.0, "token_accuracy": 0.5, "lr": 1e-3}
WAIT_MS = 60_000
OPEN_MS = 20_000  # reading a small file takes well under a second


def payload(config: ModelConfig = CONFIG) -> dict:
    return {
        "format": "attention-playground-checkpoint",
        "version": 1,
        "config": config.to_dict(),
        "state_dict": {k: v.clone() for k, v in build_model(config, seed=0).state_dict().items()},
        "history": [dict(ROW)],
        "extra": {"task": dict(TASK)},
    }


def _with_attribute(tensor: torch.Tensor, **attributes) -> torch.Tensor:
    for key, value in attributes.items():
        setattr(tensor, key, value)
    return tensor


def _movie(kinds: tuple[str, ...] = ("encoder_self", "decoder_self", "cross"), heads: int = 2) -> dict:
    """An attention movie as the trainer stores it: 2 frames of a 3-symbol source (4 target positions)."""
    sizes = {"encoder_self": (3, 3), "decoder_self": (4, 4), "cross": (4, 3)}
    return {
        "source": "012",
        "steps": [1, 2],
        "kinds": {
            kind: {
                "values": torch.rand(2, 1, heads, *sizes[kind]),
                "valid": torch.ones(sizes[kind], dtype=torch.bool),
                "query_labels": ["q"] * sizes[kind][0],
                "key_labels": ["k"] * sizes[kind][1],
            }
            for kind in kinds
        },
    }


def _record_offset(path: Path, record: str) -> int:
    """Where the bytes of the zip record ending in `record` start in the file."""
    with zipfile.ZipFile(path) as archive:
        info = next(e for e in archive.infolist() if e.filename.endswith(record))
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        header = fh.read(30)
    return info.header_offset + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")


def _flip(path: Path, record: str) -> None:
    """Flip one bit in a record: in a weight's bytes, or in the history's loss 2.0 (still a valid pickle)."""
    data = bytearray(path.read_bytes())
    start = _record_offset(path, record)
    loss = b"G" + struct.pack(">d", ROW["loss"])  # the pickle's BINFLOAT opcode and the number
    at = 5 if record != "/data.pkl" else data.index(loss, start) + len(loss) - 1 - start
    data[start + at] ^= 0x10
    path.write_bytes(data)


def _edit(**changes):
    """A maker that saves payload() with `changes` applied (each a function of the payload)."""

    def make(path: Path) -> None:
        p = payload()
        for change in changes.values():
            change(p)
        torch.save(p, path)

    return make


def _saved_then_flipped(record: str, checksum: bool):
    def make(path: Path) -> None:
        save_checkpoint(path, build_model(CONFIG, seed=0), history=[dict(ROW)], extra={"task": dict(TASK)})
        if not checksum:  # a file from before checksums were stored
            p = torch.load(path, weights_only=True)
            p.pop(CHECKSUM_KEY)
            torch.save(p, path)
        _flip(path, record)

    return make


def _mismatched_checksum(p: dict) -> None:
    p[CHECKSUM_KEY] = weights_digest(build_model(CONFIG, seed=1).state_dict())


def _million_shared_rows(path: Path) -> None:
    p = payload()
    p["history"] = [dict(ROW)] * 10**6  # one row shared: never written by the app, cheap to write, 10**6 rows to read
    torch.save(p, path)


CRAFTED = {
    "parameter": (
        _edit(
            w=lambda p: p["state_dict"].__setitem__(
                "generator.bias", _with_attribute(torch.nn.Parameter(p["state_dict"]["generator.bias"]), numel=5)
            )
        ),
        r"weight generator\.bias is a Parameter, not a plain tensor",
    ),
    "tensor_attribute": (
        _edit(w=lambda p: _with_attribute(p["state_dict"]["generator.bias"], numel=5)),
        r"weight generator\.bias carries Python attributes \['numel'\]",
    ),
    "extra_parameter": (
        _edit(e=lambda p: p["extra"].__setitem__("x", torch.nn.Parameter(torch.zeros(2)))),
        r"extra data holds an unusable tensor: extra\['x'\] is a Parameter",
    ),
    "grad_tensor": (
        _edit(e=lambda p: p["extra"].__setitem__("x", torch.zeros(2, requires_grad=True))),
        r"extra\['x'\] requires gradients",
    ),
    "min_len": (
        _edit(t=lambda p: p["extra"]["task"].update(min_len=40, max_len=40)),
        r"task does not fit its model: max_len must be at most 30 .* got 40",
    ),
    "task_nan_runs": (  # a file's non-finite numbers are read as None: the message names NaN, not "None"
        _edit(t=lambda p: p["extra"]["task"].update(runs=math.nan)),
        r"task has runs = NaN or infinity \(or nothing\), not a number",
    ),
    "task_max_len": (
        _edit(t=lambda p: p["extra"]["task"].update(max_len=10**9)),
        r"task does not fit its model: max_len must be at most 30",
    ),
    "inf_step": (
        _edit(h=lambda p: p["history"].append({**ROW, "step": math.inf})),
        r"row 1 of its training history has 'step' = inf, not a finite number",
    ),
    "huge_step": (
        _edit(h=lambda p: p["history"].append({**ROW, "step": 10**400})),
        r"row 1 of its training history has 'step' = .*, larger than 2\*\*63",
    ),
    "eval_inf_step": (
        _edit(
            e=lambda p: p["extra"].__setitem__(
                "eval_series", {"steps": [math.inf], "loss": [1.0], "token_accuracy": [0.5], "exact_match": [0.1]}
            )
        ),
        r"its evaluation curves have steps\[0\] = ",
    ),
    "eval_huge_step": (
        _edit(
            e=lambda p: p["extra"].__setitem__(
                "eval_series", {"steps": [10**400], "loss": [1.0], "token_accuracy": [0.5], "exact_match": [0.1]}
            )
        ),
        r"integer too large at extra\['eval_series'\]\['steps'\]\[0\]",
    ),
    "movie_without_cross": (
        _edit(e=lambda p: p["extra"].__setitem__("probe_snapshots", _movie(kinds=("encoder_self", "decoder_self")))),
        r"attention movie has the kinds \['decoder_self', 'encoder_self'\]",
    ),
    "movie_wrong_heads": (
        _edit(e=lambda p: p["extra"].__setitem__("probe_snapshots", _movie(heads=3))),
        r"attention movie's encoder_self maps have shape \(2, 1, 3, 3, 3\)",
    ),
    "checksum_mismatch": (
        _edit(c=_mismatched_checksum),
        r"is corrupt: its weights do not match the checksum stored when it was saved$",
    ),
    "flipped_weight": (
        _saved_then_flipped("/data/3", checksum=True),
        r"is corrupt: its stored tensors .* do not match the CRC-32 checksum stored when it was saved",
    ),
    "flipped_old_weight": (_saved_then_flipped("/data/3", checksum=False), r"is corrupt: its stored tensors"),
    "flipped_history": (_saved_then_flipped("/data.pkl", checksum=True), r"is corrupt: its history and settings"),
    "million_rows": (
        _million_shared_rows,
        (
            r"history and extra data take .* MiB, more than the 4 MiB a checkpoint "
            r"may hold, and its history is not one the app can thin"
        ),
    ),
}
VERBS = {
    "eval": ["--n", "4", "--device", "cpu"],
    "views": ["--source", "0123"],
    "decode": ["0123", "--device", "cpu"],
    "heads": ["--n", "4"],
    "cell": ["0123", "--kind", "cross", "--query", "0", "--key", "0", "--device", "cpu"],
}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("crafted")
    paths = {}
    for kind, (make, _) in CRAFTED.items():
        paths[kind] = folder / f"{kind}.pt"
        make(paths[kind])
    return paths


def _verb(verb: str, path: Path, capsys) -> tuple[int, str, str]:
    code = main([verb, str(path), *VERBS[verb]])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", CRAFTED)
def test_the_loader_refuses_each_crafted_file_in_one_line(crafted, kind):
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(crafted[kind])
    text = str(info.value)
    assert text.startswith(f"{kind}.pt") and "\n" not in text and len(text) < 400, text
    assert re.search(CRAFTED[kind][1], text), text


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("kind", CRAFTED)
def test_every_verb_refuses_each_crafted_file_in_one_line(crafted, kind, verb, capsys):
    code, out, err = _verb(verb, crafted[kind], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and out == "", (code, out, err)
    assert len(lines) == 1 and lines[0].startswith(f"attention-playground: error: {kind}.pt"), err
    assert re.search(CRAFTED[kind][1], lines[0]) and "Traceback" not in err, err


def test_a_million_shared_history_rows_are_refused_before_they_are_read(crafted):
    """The same row a million times (memo references, which the app never writes) is not thinned but refused."""
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match="more than the 4 MiB"):
        load_checkpoint(crafted["million_rows"])
    assert time.perf_counter() - start < 5  # judged from the archive and the pickle's bytes, never unpickled


def _rows(n: int) -> list[dict]:
    return [{**ROW, "step": i + 1, "loss": 1.0 / (i + 1)} for i in range(n)]


def test_long_histories_keep_evenly_spaced_rows_with_the_first_and_last(tmp_path):
    p = payload()
    p["history"] = _rows(25_000)  # written by an older version: every row stored
    torch.save(p, tmp_path / "long.pt")
    loaded = load_checkpoint(tmp_path / "long.pt").history
    steps = [row["step"] for row in loaded]
    assert len(steps) == MAX_HISTORY_ROWS and steps[0] == 1 and steps[-1] == 25_000
    gaps = {b - a for a, b in itertools.pairwise(steps)}
    assert gaps <= {2, 3}  # 25,000 rows into 10,000: every 2.5th row
    saved = save_checkpoint(
        tmp_path / "saved.pt", build_model(CONFIG, seed=0), history=_rows(25_000), extra={"task": dict(TASK)}
    )
    stored = torch.load(saved, weights_only=True)["history"]
    assert [row["step"] for row in stored] == steps


def test_saved_files_carry_the_weights_checksum_and_old_files_still_load(tmp_path):
    model = build_model(CONFIG, seed=0)
    path = save_checkpoint(tmp_path / "new.pt", model, extra={"task": dict(TASK)})
    assert torch.load(path, weights_only=True)[CHECKSUM_KEY] == weights_digest(model.state_dict())
    assert load_checkpoint(path).build().config == CONFIG
    for shipped in sorted((ROOT / "resources").glob("*.pt")):
        stored = torch.load(shipped, weights_only=True)
        if shipped.name in BEFORE_CHECKSUMS:  # the six first task models, saved before checksums: CRCs only
            assert CHECKSUM_KEY not in stored
        else:  # saved since (the library's other tasks, the lessons' own models): the checksum matches the weights
            assert stored[CHECKSUM_KEY] == weights_digest(stored["state_dict"])
        load_checkpoint(shipped)


def test_non_finite_numbers_nested_in_extras_become_none(tmp_path, capsys):
    nested = {"per_length": {"3": math.nan, "4": 1.0}, "notes": [math.inf, (-math.inf, 2.0)]}
    p = payload()
    p["extra"]["final_metrics"] = nested
    p["extra"]["eval_series"] = {"steps": [5], "loss": [math.nan], "token_accuracy": [0.5], "exact_match": [0.1]}
    torch.save(p, tmp_path / "nested.pt")
    extra = load_checkpoint(tmp_path / "nested.pt").extra
    cleaned = {"per_length": {"3": None, "4": 1.0}, "notes": [None, (None, 2.0)]}
    assert extra["final_metrics"] == cleaned and extra["eval_series"]["loss"] == [None]
    saved = save_checkpoint(
        tmp_path / "saved.pt", build_model(CONFIG, seed=0), extra={"task": dict(TASK), "final_metrics": nested}
    )
    assert torch.load(saved, weights_only=True)["extra"]["final_metrics"] == cleaned
    for verb in VERBS:
        code, out, err = _verb(verb, tmp_path / "nested.pt", capsys)
        assert code == 0 and out and err == "", (verb, err)


def test_shared_and_self_referring_extras_are_cleaned_once(tmp_path):
    """2**60 paths through 60 shared tuples, and a list holding itself: a walk that copies per path never ends."""
    web = (math.nan,)
    for _ in range(60):
        web = (web, web)
    loop: list = [math.inf]
    loop.append(loop)
    p = payload()
    p["extra"] |= {"web": web, "loop": loop}
    torch.save(p, tmp_path / "web.pt")
    start = time.perf_counter()
    extra = load_checkpoint(tmp_path / "web.pt").extra
    assert time.perf_counter() - start < 5
    inner = extra["web"]
    for _ in range(60):
        assert inner[0] is inner[1]
        inner = inner[0]
    assert inner == (None,) and extra["loop"][0] is None and extra["loop"][1] is extra["loop"]


def test_a_model_with_more_ids_than_its_task_works_in_every_verb(tmp_path, capsys):
    """Ids 13-39 have no symbol in a 10-symbol task: nothing that names ids fails."""
    config = ModelConfig(**{**CONFIG.to_dict(), "vocab_size": 40})
    p = payload(config)
    p["state_dict"]["generator.bias"][30] = 50.0  # id 30 is the model's favourite everywhere
    torch.save(p, tmp_path / "wide.pt")
    for verb in VERBS:
        code, out, err = _verb(verb, tmp_path / "wide.pt", capsys)
        assert code == 0 and out and "Traceback" not in err, (verb, err)


# --- File > Open in the window -------------------------------------------------------------------------------------


@pytest.fixture
def window(qtbot, monkeypatch):
    """The whole app on the shipped model, File > Open's error box recording its text instead of blocking."""
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(checkpoint_actions, "_show_error", lambda parent, title, text: shown.append((title, text)))
    app = Application(checkpoint=None)
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=WAIT_MS)
    wait_frame(qtbot, app.session)
    app.shown = shown
    yield app
    app.hub.dirty = False
    app.window.close()


@pytest.mark.usefixtures("one_torch_thread")
def test_file_open_shows_why_each_crafted_file_is_refused_and_keeps_the_model(qtbot, window, crafted):
    hub = window.hub
    model, origin, steps = hub.model, hub.origin, list(window.training.series.steps)
    for kind, (_, message) in CRAFTED.items():
        with qtbot.waitSignal(window.checkpoints.failed, timeout=OPEN_MS) as blocker:
            window.checkpoints.open_path(crafted[kind])
        assert window.shown[-1] == (f"Could not open {kind}.pt", blocker.args[0]), kind
        assert re.search(message, blocker.args[0]), (kind, blocker.args[0])
        assert hub.model is model and hub.origin == origin and window.training.series.steps == steps, kind
    wait_frame(qtbot, window.session)
    assert hub.task.task == "copy" and hub.path.name == "copy_rope.pt" and len(window.shown) == len(CRAFTED)


@pytest.mark.usefixtures("one_torch_thread")
def test_file_open_takes_a_recipe_beyond_the_forms_range_and_a_model_wider_than_its_task(qtbot, window, tmp_path):
    p = payload(ModelConfig(**{**CONFIG.to_dict(), "vocab_size": 40}))
    p["state_dict"]["generator.bias"][30] = 50.0
    p["extra"]["train_config"] = {**TrainConfig().to_dict(), "seed": 2**32 - 1, "steps": 2**40}  # the CLI's seeds
    torch.save(p, tmp_path / "wide.pt")
    with qtbot.waitSignal(window.checkpoints.opened, timeout=OPEN_MS):
        window.checkpoints.open_path(tmp_path / "wide.pt")
    window.window.tabs.setCurrentWidget(window.trainer_page)
    form = window.trainer_tab.form
    qtbot.waitUntil(lambda: form.symbols_spin.value() == 10, timeout=OPEN_MS)
    assert form.seed_spin.value() == form.seed_spin.maximum() and form.steps_spin.value() == form.steps_spin.maximum()
    note = form.errors["steps"]  # said beside the field, in amber: Continue training would run another recipe
    assert not note.isHidden() and note.text() == (
        f"the stored recipe had {2**40:,}; out of range here, this run uses {form.steps_spin.maximum():,}"
    )
    assert "stored recipe had 4,294,967,295" in form.errors["seed"].text()
    form.steps_spin.setValue(300)  # the user's own number: the note goes
    qtbot.waitUntil(lambda: form.errors["steps"].isHidden())
    wait_frame(qtbot, window.session)
    assert window.hub.config.vocab_size == 40 and window.shown == []


def test_weights_that_overflow_are_refused_when_the_model_is_built(tmp_path, capsys):
    """Every weight times 1e30 is finite, so the file passes its checks; a pass then gives infinities that crashed
    sampling ("probability tensor contains inf") and attribution, and greedy decoding wrote nonsense."""
    p = payload()
    p["state_dict"] = {k: v * 1e30 if v.is_floating_point() else v for k, v in p["state_dict"].items()}
    torch.save(p, tmp_path / "overflow.pt")
    ckpt = load_checkpoint(tmp_path / "overflow.pt")
    with pytest.raises(CheckpointError, match="its weights overflow: the model's outputs are not finite numbers"):
        ckpt.build()
    for verb in ("decode", "attribute"):
        args = ["3"] if verb == "decode" else ["--source", "3"]
        code = main([verb, str(tmp_path / "overflow.pt"), *args, "--threads", "1"])
        out, err = capsys.readouterr()
        assert code == 1 and out == "" and len(err.splitlines()) == 1 and "weights overflow" in err, (verb, err)


@pytest.mark.usefixtures("one_torch_thread")
def test_each_refused_file_open_logs_one_warning_line_and_its_traceback_only_at_debug(
    qtbot, window, crafted, monkeypatch, caplog
):
    """A refused file is the file's fault, not the app's: the console gets one line per refusal, not a traceback."""
    chosen: list[Path] = []
    monkeypatch.setattr(
        checkpoint_actions.QFileDialog, "getOpenFileName", staticmethod(lambda *args, **kwargs: (str(chosen[-1]), ""))
    )
    caplog.set_level(logging.DEBUG)
    for kind in CRAFTED:
        chosen.append(crafted[kind])
        caplog.clear()
        with qtbot.waitSignal(window.checkpoints.failed, timeout=OPEN_MS):
            qtbot.keyClick(window.window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)  # File > Open
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [r.getMessage() for r in warnings] == [f"Could not open {kind}.pt: {window.shown[-1][1]}"], kind
        assert all(r.exc_info is None for r in warnings), kind
        traced = [r for r in caplog.records if r.exc_info is not None]
        assert traced and all(r.levelno == logging.DEBUG for r in traced), kind
    assert len(window.shown) == len(CRAFTED)
