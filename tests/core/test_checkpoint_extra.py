"""A checkpoint's extra data as one typed record (written and read in one place), and load failures named from the
file itself rather than from the words of torch's exceptions."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import CheckpointError, CheckpointExtra, load_checkpoint, save_checkpoint
from core_model.checkpoint_records import extra_to_plain, read_extra
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig

CONFIG = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, positional="rope")
ROOT = Path(__file__).resolve().parents[2]
RECORD = CheckpointExtra(
    task=TaskSpec("reverse", 5, 2, 4),
    train_config=TrainConfig(steps=40).to_dict(),
    eval_series={"steps": [10, 20], "loss": [1.5, None], "token_accuracy": [0.5, 0.75], "exact_match": [0.0, 0.25]},
    final_metrics={"exact_match": 0.25, "seconds": 1.5},
    recovery={"saved_at": 12.5, "step": 20, "path": "", "origin": "trained here"},
    other={"notes": "kept as it is", "ids": [1, 2, 3]},
)


def test_the_record_round_trips_through_a_file(tmp_path):
    path = save_checkpoint(tmp_path / "r.pt", build_model(CONFIG, seed=0), extra=RECORD)
    loaded = load_checkpoint(path).extra
    assert loaded == RECORD and loaded.task == TaskSpec("reverse", 5, 2, 4)
    assert torch.load(path, weights_only=True)["extra"] == extra_to_plain(RECORD)  # the stored dict, key by key
    assert extra_to_plain(RECORD)["task"] == {
        "task": "reverse",
        "n_symbols": 5,
        "min_len": 2,
        "max_len": 4,
        "runs": TaskSpec().runs,
        "anchored": TaskSpec().anchored,
    }


def test_the_stored_dict_reads_back_as_the_same_record():
    plain = extra_to_plain(RECORD)
    assert read_extra(plain, CONFIG, "x.pt") == RECORD == CheckpointExtra.from_plain(plain)
    assert dict(RECORD) == plain and RECORD["recovery"]["step"] == 20  # the mapping view is the stored dict


def test_a_training_record_merges_over_a_files_record():
    file_record = CheckpointExtra(task=TaskSpec("copy"), train_config={"steps": 5}, other={"notes": "a"})
    training = CheckpointExtra(train_config={"steps": 9}, eval_series=RECORD.eval_series)
    merged = file_record.merged(training)
    assert merged.task == TaskSpec("copy") and merged.train_config == {"steps": 9}
    assert merged.eval_series == RECORD.eval_series and merged.other == {"notes": "a"}


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"task": {"task": "copy", "length": 3}}, r"x\.pt: the checkpoint's task has unknown fields \['length'\]"),
        ({"task": "copy"}, r"x\.pt: the checkpoint's task must be a dict of TaskSpec fields, got str"),
        ({"eval_series": {"steps": [1]}}, r"x\.pt: its evaluation curves must be a dict of the lists"),
        ({"probe_snapshots": [1]}, r"x\.pt: its attention movie must be a dict"),
        ({"notes": {1: "x"}}, r"x\.pt: its extra data has a key of type int"),
        ([("task", "copy")], r"x\.pt: its extra data must be a dict, got list"),
    ],
)
def test_an_unknown_or_malformed_field_is_a_checkpoint_error(stored, message):
    with pytest.raises(CheckpointError, match=message):
        read_extra(stored, CONFIG, "x.pt")


def test_a_malformed_field_in_a_file_names_the_file(tmp_path):
    payload = torch.load(save_checkpoint(tmp_path / "m.pt", build_model(CONFIG, seed=0)), weights_only=True)
    payload["extra"] = {"eval_series": "rising"}
    torch.save(payload, tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match=r"m\.pt: its evaluation curves must be a dict of the lists"):
        load_checkpoint(tmp_path / "m.pt")


@pytest.mark.parametrize("name", ["copy_rope", "sort_sinusoidal"])
def test_shipped_checkpoints_read_into_the_record(name):
    extra = load_checkpoint(ROOT / "resources" / f"{name}.pt").extra
    assert isinstance(extra, CheckpointExtra) and extra.task is not None and extra.task.task == name.split("_")[0]
    assert extra.train_config is not None and extra.final_metrics is not None
    assert (extra.polish_config is not None) == (name.startswith("sort"))


# --- load failures named from the file, whatever torch's exception says ----------------------------------------------


def _rewording(exc_type: type[Exception], words: str, monkeypatch) -> None:
    """torch.load raising its usual exception type with other words (torch's messages change between versions)."""
    real_load = torch.load

    def load(*args, **kwargs):
        try:
            return real_load(*args, **kwargs)
        except exc_type as exc:
            raise exc_type(words) from exc

    monkeypatch.setattr(torch, "load", load)


class Armed:
    def __reduce__(self):
        return print, ("code ran",)


def test_pickled_code_is_named_as_such_whatever_torchs_words(tmp_path, monkeypatch):
    payload = torch.load(save_checkpoint(tmp_path / "a.pt", build_model(CONFIG, seed=0)), weights_only=True)
    payload["extra"] = {"x": Armed()}
    torch.save(payload, tmp_path / "a.pt")
    _rewording(pickle.UnpicklingError, "load failed", monkeypatch)
    with pytest.raises(CheckpointError, match=r"a\.pt contains code or objects that are not plain data"):
        load_checkpoint(tmp_path / "a.pt")


def test_malformed_pickled_data_is_not_called_code_whatever_torchs_words(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "b.pt", build_model(CONFIG, seed=0))

    def refuse(*args, **kwargs):  # the weights-only loader refusing a file whose pickle holds only plain data
        raise pickle.UnpicklingError("Unsupported global: GLOBAL os.system was not an allowed global")

    monkeypatch.setattr(torch, "load", refuse)
    with pytest.raises(
        CheckpointError, match=r"b\.pt is not a readable checkpoint \(corrupt or truncated\): its pickled"
    ):
        load_checkpoint(path)


def test_damaged_records_are_named_from_the_exception_type(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "c.pt", build_model(CONFIG, seed=0))

    def unreadable(*args, **kwargs):
        raise RuntimeError("a reader error in words no check knows")

    monkeypatch.setattr(torch, "load", unreadable)
    with pytest.raises(
        CheckpointError, match=r"c\.pt is not a readable checkpoint \(corrupt or truncated\): its archive"
    ):
        load_checkpoint(path)


def test_a_failed_write_names_the_likely_full_disk_whatever_torchs_words(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "d.pt", build_model(CONFIG, seed=0))

    def short_write(obj, f, *args, **kwargs):
        f.write(b"half")
        raise RuntimeError("writer stopped")

    monkeypatch.setattr(torch, "save", short_write)
    with pytest.raises(CheckpointError, match=r"could not write .*d\.pt: .*disk is probably full \(writer stopped\)"):
        save_checkpoint(path, build_model(CONFIG, seed=1))
