"""Checkpoints: exact round trip, atomic writes, and a clear CheckpointError for every kind of bad file."""

from __future__ import annotations

import dataclasses
import os
import random
import re
from pathlib import Path

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import FORMAT, Checkpoint, CheckpointError, load_checkpoint, save_checkpoint

CONFIG = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, positional="rope")


def write_marker(path: str) -> None:
    """What a malicious checkpoint would run on load; here it only leaves a file behind."""
    Path(path).write_text("code ran")


class Payload:
    """Pickles into a call of write_marker(path)."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return write_marker, (self.path,)


@pytest.fixture
def saved(tmp_path):
    model = build_model(CONFIG, seed=0)
    path = save_checkpoint(tmp_path / "model.pt", model, history=[{"step": 1.0, "loss": 2.5}])
    return model, path


def payload_of(path: Path) -> dict:
    return torch.load(path, weights_only=True)


@pytest.mark.parametrize("tie", [True, False])
def test_round_trip_is_exact(tmp_path, tie):
    model = build_model(dataclasses.replace(CONFIG, tie_embeddings=tie), seed=1)
    history = [{"step": 1.0, "loss": 2.25}, {"step": 2.0, "loss": 1.5}]
    extra = {"task": {"task": "copy", "n_symbols": 10}, "probe": "0123", "ids": torch.arange(4), "ratio": 0.5}
    path = save_checkpoint(tmp_path / "sub" / "dir" / "m.pt", model, history=history, extra=extra)
    ckpt = load_checkpoint(path)
    assert isinstance(ckpt, Checkpoint)
    assert ckpt.config == model.config and ckpt.history == history
    assert ckpt.extra.keys() == extra.keys() and torch.equal(ckpt.extra["ids"], extra["ids"])
    assert {k: v for k, v in ckpt.extra.items() if k != "ids"} == {k: v for k, v in extra.items() if k != "ids"}
    expected = model.state_dict()
    assert ckpt.state_dict.keys() == expected.keys()
    for key, value in expected.items():
        assert ckpt.state_dict[key].dtype == value.dtype and torch.equal(ckpt.state_dict[key], value), key
    rebuilt = ckpt.build()
    for key, value in expected.items():
        assert torch.equal(rebuilt.state_dict()[key], value), key
    assert (rebuilt.generator.weight is rebuilt.src_embed.weight) == tie
    src, tgt = torch.tensor([[3, 4, 5]]), torch.tensor([[1, 3, 4]])
    assert torch.equal(rebuilt.eval()(src, tgt).log_probs, model.eval()(src, tgt).log_probs)


def test_atomic_write_leaves_only_the_file(saved, tmp_path):
    _, path = saved
    save_checkpoint(path, build_model(CONFIG, seed=2))  # overwrite in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("serialisation broke")])
def test_failed_write_keeps_the_old_file_and_no_temp_files(saved, tmp_path, monkeypatch, error):
    _, path = saved
    before = path.read_bytes()

    def failing_save(obj, f, *args, **kwargs):
        f.write(b"partial data")
        raise error

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(CheckpointError) as info:  # torch turns a full disk into RuntimeError: caught all the same
        save_checkpoint(path, build_model(CONFIG, seed=3))
    assert str(path) in str(info.value)
    assert ("No space left on device" if isinstance(error, OSError) else "serialisation broke") in str(info.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]
    monkeypatch.undo()
    assert torch.equal(load_checkpoint(path).state_dict["generator.bias"], saved[0].state_dict()["generator.bias"])


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.pt"
    path.write_bytes(random.Random(0).randbytes(4096))
    with pytest.raises(CheckpointError, match=r"noise\.pt is not a readable checkpoint \(corrupt or truncated\)"):
        load_checkpoint(path)


def test_truncated_file(saved):
    _, path = saved
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"model\.pt is not a readable checkpoint \(corrupt or truncated\)"):
        load_checkpoint(path)


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty.pt is not a readable checkpoint"):
        load_checkpoint(tmp_path / "empty.pt")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nothing.pt")
    with pytest.raises(CheckpointError, match=r"is not a file \(it is a folder\)$"):
        load_checkpoint(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.pt")
        with pytest.raises(CheckpointError, match=r"pipe\.pt is not a file \(it is a named pipe \(FIFO\)\)$"):
            load_checkpoint(tmp_path / "pipe.pt")


@pytest.mark.parametrize(
    ("value", "fits"), [(-(2**63), True), (2**63 - 1, True), (-(2**63) - 1, False), (2**63, False)]
)
def test_history_and_extra_data_take_the_same_64_bit_range(saved, tmp_path, value, fits):
    """-2**63 fits a signed 64-bit integer: a number the history takes, the extra data take too, and the reverse."""
    _, path = saved
    payload = payload_of(path)
    changes = {"history": ("history", [{"step": 1, "offset": value}]), "extra": ("extra", {"offset": value})}
    refusals = {
        "history": r"row 0 of its training history has 'offset' = .*, larger than 2\*\*63",
        "extra": r"its extra data holds an integer too large at extra\['offset'\]",
    }
    for where, (key, data) in changes.items():
        torch.save({**payload, key: data}, tmp_path / f"{where}.pt")
        if fits:
            loaded = load_checkpoint(tmp_path / f"{where}.pt")
            assert (loaded.history[0] if where == "history" else loaded.extra)["offset"] == value
        else:
            with pytest.raises(CheckpointError, match=refusals[where]):
                load_checkpoint(tmp_path / f"{where}.pt")


LONG_EVALS = {
    key: [i if key == "steps" else 0.5 for i in range(150_000)]
    for key in ("steps", "loss", "token_accuracy", "exact_match")
}


@pytest.mark.parametrize("extra", [{"notes": "x" * 5 * 2**20}, {"eval_series": LONG_EVALS}], ids=["notes", "evals"])
def test_a_save_the_loader_would_refuse_is_refused_and_the_old_file_kept(saved, tmp_path, extra):
    """The size a checkpoint may hold is checked on the written file before it replaces anything."""
    _, path = saved
    before = path.read_bytes()
    with pytest.raises(CheckpointError) as info:
        save_checkpoint(path, build_model(CONFIG, seed=1), extra=extra)
    assert re.fullmatch(
        rf"not saving {re.escape(str(path))}: its training history and extra data take \d+\.\d MiB, "
        "more than the 4 MiB a checkpoint may hold",
        str(info.value),
    ), str(info.value)
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]
    assert load_checkpoint(path).history == [{"step": 1.0, "loss": 2.5}]


def test_wrong_shape(saved):
    _, path = saved
    payload = payload_of(path)
    payload["state_dict"]["decoder_layers.0.ff.net.0.weight"] = torch.zeros(7, 16)
    torch.save(payload, path)
    with pytest.raises(
        CheckpointError,
        match=r"weight decoder_layers\.0\.ff\.net\.0\.weight has shape \(7, 16\), "
        r"configuration needs \(32, 16\)",
    ):
        load_checkpoint(path)


def test_missing_and_unexpected_weights(saved):
    _, path = saved
    payload = payload_of(path)
    del payload["state_dict"]["generator.bias"]
    payload["state_dict"]["extra_head.weight"] = torch.zeros(2)
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match=r"missing \['generator.bias'\], unexpected \['extra_head.weight'\]"):
        load_checkpoint(path)


def test_build_reports_shape_errors():
    model = build_model(CONFIG, seed=0)
    state = dict(model.state_dict())
    state["generator.bias"] = torch.zeros(5)
    with pytest.raises(CheckpointError, match="weights do not fit the stored configuration"):
        Checkpoint(CONFIG, state).build()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "some-other-tool"}, "is not an Attention Playground checkpoint"),
        ({"version": 99}, "has checkpoint version 99, expected 1"),
        ({"config": {"d_model": 16, "n_heads": 3}}, "has an invalid model configuration"),
        ({"config": {"d_model": 16, "layers": 3}}, r"unknown ModelConfig fields: \['layers'\]"),
        ({"state_dict": [1, 2]}, "has no valid weights"),
    ],
)
def test_bad_payload_fields(saved, change, message):
    _, path = saved
    torch.save(payload_of(path) | change, path)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def test_not_a_dict(tmp_path):
    torch.save([FORMAT, 1], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="is not an Attention Playground checkpoint"):
        load_checkpoint(tmp_path / "list.pt")


def test_pickled_code_is_never_run(saved, tmp_path):
    _, path = saved
    marker = tmp_path / "marker.txt"
    payload = payload_of(path)
    payload["extra"] = {"innocent": Payload(marker)}
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="contains code or objects that are not plain data"):
        load_checkpoint(path)
    assert not marker.exists()
    # the file really was armed: an unsafe load runs the code
    torch.load(path, weights_only=False)
    assert marker.read_text() == "code ran"


def test_temp_files_use_the_target_folder(saved, tmp_path, monkeypatch):
    _, path = saved
    seen: list[str] = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(str(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    save_checkpoint(path, build_model(CONFIG, seed=4))
    assert len(seen) == 1 and Path(seen[0]).parent == tmp_path and seen[0].endswith(".tmp")


# --- the task a checkpoint was trained on ----------------------------------------------------------------------


def task_checkpoint(task: object) -> Checkpoint:
    model = build_model(CONFIG, seed=0)
    extra = {} if task is None else {"task": task}
    return Checkpoint(CONFIG, model.state_dict(), extra=extra)


def test_task_round_trips_through_a_file(tmp_path):
    from core_model.tasks import TaskSpec

    stored = {"task": "reverse", "n_symbols": 5, "min_len": 2, "max_len": 4}
    path = save_checkpoint(tmp_path / "t.pt", build_model(CONFIG, seed=0), extra={"task": dict(stored)})
    task = load_checkpoint(path).task
    assert isinstance(task, TaskSpec)
    assert (task.task, task.n_symbols, task.min_len, task.max_len) == ("reverse", 5, 2, 4)
    assert task_checkpoint(None).task == TaskSpec("copy", 10, 10, 10)  # nothing stored: the default task


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("copy", "must be a dict of TaskSpec fields, got str"),
        ({"task": "copy", "length": 3}, r"unknown fields \['length'\]"),
        ({"task": "shuffle"}, r"task must be one of \['copy', 'reverse', 'sort', .*'dyck_depth'\], got 'shuffle'"),
        ({"n_symbols": "5"}, "n_symbols must be an integer"),
        ({"min_len": 5, "max_len": 3}, "max_len must be an integer >= 5"),
    ],
)
def test_malformed_task_raises_checkpoint_error_naming_the_field(task, message):
    with pytest.raises(CheckpointError, match=message):
        _ = task_checkpoint(task).task


@pytest.mark.parametrize("name", ["copy_rope", "copy_sinusoidal"])
def test_shipped_checkpoints_load_strictly_with_their_task(name):
    path = Path(__file__).resolve().parents[2] / "resources" / f"{name}.pt"
    ckpt = load_checkpoint(path)
    model = ckpt.build()  # strict key matching
    assert list(ckpt.state_dict) == list(model.state_dict())
    assert ckpt.task.vocab_size <= ckpt.config.vocab_size
