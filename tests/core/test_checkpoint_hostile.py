"""Hostile checkpoint files and failed saves: a clean CheckpointError, bounded memory, no code run, work kept."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core_model import ModelConfig, build_model
from core_model.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from core_model.checkpoint_files import remove_stale_temps
from core_model.config import MAX_LEN, MAX_MODEL_BYTES

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, positional="rope")
LOAD_BUDGET_BYTES = 64 * 2**20  # a loader refusing a small file may not allocate more than this


def write_marker(path: str) -> None:
    Path(path).write_text("code ran")


class Armed:
    """Pickles into a call of write_marker(path): what a malicious checkpoint would run on load."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return write_marker, (self.path,)


def good_payload() -> dict:
    model = build_model(CONFIG, seed=0)
    return {
        "format": "attention-playground-checkpoint",
        "version": 1,
        "config": CONFIG.to_dict(),
        "state_dict": {k: v.clone() for k, v in model.state_dict().items()},
        "history": [{"step": 1, "loss": 2.0}],
        "extra": {"task": {"task": "copy"}},
    }


@pytest.fixture(scope="module", autouse=True)
def _warm(tmp_path_factory):
    """Load one good file first: imports and torch's lazy set-up are not the loader's allocations."""
    path = tmp_path_factory.mktemp("warm") / "warm.pt"
    torch.save(good_payload(), path)
    load_checkpoint(path)
    build_model(ModelConfig(positional="sinusoidal"))


def load_measured(path: Path) -> tuple[BaseException | None, int]:
    """(exception raised, peak bytes) of load_checkpoint: tracemalloc's peak plus torch's CPU allocations."""
    tracemalloc.start()
    try:
        load_checkpoint(path)
        error = None
    except BaseException as exc:  # noqa: BLE001 - the point is to see anything that escapes
        error = exc
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return error, peak


# --- generated payloads --------------------------------------------------------------------------------------------

HUGE = st.sampled_from([0, -1, 10**6, 10**9, 16384, 2**63, 10**30, MAX_LEN + 1])
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    HUGE,
)
FIELDS = [
    "vocab_size",
    "d_model",
    "n_heads",
    "n_encoder_layers",
    "n_decoder_layers",
    "d_ff",
    "max_len",
    "dropout",
    "positional",
    "pe_base",
    "norm_position",
    "norm",
    "activation",
    "tie_embeddings",
]


@st.composite
def hostile_payloads(draw) -> object:
    """A valid payload with one to three fields replaced by something generated, or a non-dict."""
    payload = good_payload()
    if draw(st.integers(0, 20)) == 0:
        return draw(ODD)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["config", "top", "weight_shape", "weight_value", "weight_type", "history", "extra", "drop_weight"]
            )
        )
        if kind == "config":
            payload["config"] = dict(payload["config"]) if isinstance(payload["config"], dict) else {}
            payload["config"][draw(st.sampled_from(FIELDS))] = draw(st.one_of(HUGE, ODD))
        elif kind == "top":
            payload[draw(st.sampled_from(list(payload) + ["bonus"]))] = draw(ODD)
        elif kind == "weight_shape":
            key = draw(st.sampled_from(sorted(good_payload()["state_dict"])))
            shape = draw(st.lists(st.integers(0, 40), min_size=0, max_size=3))
            payload["state_dict"] = (
                {**payload.get("state_dict", {}), key: torch.zeros(shape)}
                if isinstance(payload.get("state_dict"), dict)
                else payload.get("state_dict")
            )
        elif kind == "weight_value" and isinstance(payload.get("state_dict"), dict) and payload["state_dict"]:
            key = draw(st.sampled_from(sorted(payload["state_dict"])))
            value = payload["state_dict"][key]
            if not isinstance(value, torch.Tensor) or value.layout != torch.strided or value.numel() == 0:
                continue  # a sparse weight (an earlier "weight_type" draw) has no flat view to poison
            tensor = value.clone().float()
            tensor.view(-1)[0] = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
            payload["state_dict"][key] = tensor
        elif kind == "weight_type" and isinstance(payload.get("state_dict"), dict) and payload["state_dict"]:
            key = draw(st.sampled_from(sorted(payload["state_dict"])))
            if (
                not isinstance(payload["state_dict"][key], torch.Tensor)
                or payload["state_dict"][key].layout != torch.strided
            ):
                continue
            payload["state_dict"][key] = draw(
                st.sampled_from(
                    [
                        payload["state_dict"][key].to(torch.int64),
                        "weights",
                        [1.0],
                        torch.zeros(1).expand(10**6),
                        payload["state_dict"][key].to_sparse() if payload["state_dict"][key].dim() == 2 else None,
                    ]
                )
            )
        elif kind == "history":
            payload["history"] = draw(st.one_of(ODD, st.lists(ODD, max_size=3)))
        elif kind == "extra":
            payload["extra"] = draw(
                st.one_of(ODD, st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), ODD, max_size=3))
            )
        elif kind == "drop_weight" and isinstance(payload.get("state_dict"), dict) and payload["state_dict"]:
            payload["state_dict"].pop(draw(st.sampled_from(sorted(payload["state_dict"]))))
    return payload


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(payload=hostile_payloads(), cut=st.one_of(st.none(), st.floats(0.0, 0.999)))
def test_fuzzed_payloads_raise_only_checkpoint_error_in_bounded_memory(tmp_path, payload, cut):
    path = tmp_path / "fuzz.pt"
    torch.save(payload, path)
    if cut is not None:  # a truncation of the same file
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * cut)])
    error, peak = load_measured(path)
    assert error is None or isinstance(error, CheckpointError), repr(error)
    if error is not None:
        assert "fuzz.pt" in str(error) and "\n" not in str(error) and len(str(error)) < 600
    assert peak < LOAD_BUDGET_BYTES


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(["extra", "history", "config", "state_dict", "top"]))
def test_pickled_code_never_runs_wherever_it_hides(tmp_path, where):
    marker = tmp_path / f"marker-{where}.txt"
    marker.unlink(missing_ok=True)
    payload = good_payload()
    armed = Armed(marker)
    if where == "top":
        payload = armed
    elif where in ("extra", "config"):
        payload[where] = {**payload[where], "x": armed}
    elif where == "history":
        payload["history"] = [armed]
    else:
        payload["state_dict"]["generator.bias"] = armed
    path = tmp_path / "armed.pt"
    torch.save(payload, path)
    with pytest.raises(CheckpointError, match="contains code or objects that are not plain data"):
        load_checkpoint(path)
    assert not marker.exists()


# --- each issue point, one test ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"n_encoder_layers": 10**6}, r"n_encoder_layers must be an integer in \[1, 24\]"),
        ({"d_model": 16384, "n_heads": 2}, r"d_model must be an integer in \[1, 2048\]"),
        ({"max_len": 10**9}, r"max_len must be an integer in \[1, 4096\]"),
        ({"d_model": 10**9, "n_heads": 2}, r"d_model must be an integer in \[1, 2048\]"),
        ({"d_model": 2048, "d_ff": 8192, "n_heads": 8, "n_encoder_layers": 24}, "needs about .* MiB of weights"),
    ],
)
def test_oversized_configs_are_refused_before_any_allocation(tmp_path, change, message):
    payload = good_payload()
    payload["config"] = {**payload["config"], **change}
    path = tmp_path / "big.pt"
    torch.save(payload, path)
    start = time.perf_counter()
    error, peak = load_measured(path)
    assert isinstance(error, CheckpointError) and "big.pt has an invalid model configuration" in str(error)
    assert pytest.raises(CheckpointError, load_checkpoint, path).match(message)
    assert peak < LOAD_BUDGET_BYTES and time.perf_counter() - start < 5


def test_limits_admit_every_model_the_app_builds():
    bench = ModelConfig(
        d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, max_len=512, positional="sinusoidal"
    )
    assert bench.estimated_bytes < MAX_MODEL_BYTES / 2
    ModelConfig(vocab_size=42, max_len=4096)
    for config in (ModelConfig(), bench, CONFIG):  # the estimate is an upper bound within a few percent
        model = build_model(config) if config is not bench else None
        if model is not None:
            actual = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
            assert actual <= config.estimated_bytes < actual * 1.1


@pytest.mark.parametrize(
    ("history", "extra", "message"),
    [
        (5, {}, "training history must be a list of rows, got int"),
        ([1, 2], {}, "row 0 of its training history must be a dict, got int"),
        ([{"loss": "low"}], {}, "non-numeric entry 'loss': str"),
        ([], [1, 2], "extra data must be a dict, got list"),
        ([], {"task": 3}, "must be a dict of TaskSpec fields, got int"),
        ([], {1: "a"}, "has a key of type int"),
    ],
)
def test_badly_typed_history_and_extra_are_named(tmp_path, history, extra, message):
    payload = good_payload() | {"history": history, "extra": extra}
    torch.save(payload, tmp_path / "typed.pt")
    with pytest.raises(CheckpointError, match=message) as info:
        load_checkpoint(tmp_path / "typed.pt")
    assert "typed.pt" in str(info.value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_weights_are_refused_with_a_count(tmp_path, value):
    payload = good_payload()
    payload["state_dict"]["generator.weight"][:3, 0] = value
    torch.save(payload, tmp_path / "nan.pt")
    with pytest.raises(CheckpointError, match=r"nan\.pt: weight generator\.weight has 3 non-finite values"):
        load_checkpoint(tmp_path / "nan.pt")


def test_crafted_views_are_refused_without_materialising_them(tmp_path):
    payload = good_payload()
    payload["extra"] = {"movie": torch.zeros(1).expand(10**5, 10**5)}  # 4e10 bytes claimed, 4 stored
    torch.save(payload, tmp_path / "view.pt")
    error, peak = load_measured(tmp_path / "view.pt")
    assert isinstance(error, CheckpointError) and "stores fewer" in str(error) and peak < LOAD_BUDGET_BYTES


def _plain_zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "hello")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b""), r"x\.pt is not a readable checkpoint: the file is empty"),
        (_plain_zip, r"x\.pt is not a checkpoint: it is a zip archive without checkpoint data"),
        (
            lambda p: torch.save({"format": "other"}, p),
            r"x\.pt is not an Attention Playground checkpoint \(wrong format",
        ),
        (
            lambda p: torch.save({"version": 1}, p),
            r"x\.pt is not an Attention Playground checkpoint \(it has no format",
        ),
        (lambda p: torch.save(good_payload() | {"version": 7}, p), "written by a newer version"),
        (
            lambda p: p.write_bytes(Path(ROOT / "resources" / "copy_rope.pt").read_bytes()[:5000]),
            r"corrupt or truncated",
        ),
    ],
)
def test_messages_name_the_file_and_the_cause_in_words(tmp_path, make, message):
    path = tmp_path / "x.pt"
    make(path)
    with pytest.raises(CheckpointError, match=message) as info:
        load_checkpoint(path)
    assert "enforce fail" not in str(info.value) and "EOFError" not in str(info.value)


def test_permission_error_while_reading_is_not_called_corrupt(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "locked.pt", build_model(CONFIG, seed=0))

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", denied)
    with pytest.raises(CheckpointError, match=r"locked\.pt is not readable: permission denied"):
        load_checkpoint(path)


# --- failed saves keep the work and the previous file --------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 64"),
        OSError(28, "No space left on device"),
    ],
)
def test_full_disk_is_a_checkpoint_error_and_keeps_the_old_file(tmp_path, monkeypatch, error):
    path = save_checkpoint(tmp_path / "m.pt", build_model(CONFIG, seed=0))
    before = path.read_bytes()

    def full_disk(obj, f, *args, **kwargs):
        f.write(b"half a file")
        raise error

    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(CheckpointError, match=r"could not write .*m\.pt: .*(full|No space)"):
        save_checkpoint(path, build_model(CONFIG, seed=1))
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


def test_read_only_folder_is_a_checkpoint_error_and_keeps_the_old_file(tmp_path, monkeypatch):
    """The folder refuses the temporary file (as a read-only folder does for any user but root, who runs CI)."""
    path = save_checkpoint(tmp_path / "ro" / "m.pt", build_model(CONFIG, seed=0))
    before = path.read_bytes()

    def read_only_folder(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path.parent))

    monkeypatch.setattr(tempfile, "mkstemp", read_only_folder)
    with pytest.raises(CheckpointError, match="permission denied"):
        save_checkpoint(path, build_model(CONFIG, seed=1))
    assert path.read_bytes() == before and sorted(p.name for p in path.parent.iterdir()) == ["m.pt"]


def test_saving_non_finite_weights_is_refused_and_keeps_the_old_file(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", build_model(CONFIG, seed=0))
    before = path.read_bytes()
    model = build_model(CONFIG, seed=1)
    with torch.no_grad():
        model.generator.bias[0] = math.nan
    with pytest.raises(CheckpointError, match="generator.bias has 1 non-finite"):
        save_checkpoint(path, model)
    assert path.read_bytes() == before


KILLED_SAVE = """
import os, signal, sys, torch
from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
def killed(obj, f, *a, **k):
    f.write(b"x" * 4096); f.flush(); os.kill(os.getpid(), signal.SIGKILL)
torch.save = killed
save_checkpoint(sys.argv[1], build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                                     n_decoder_layers=1), seed=5))
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_a_save_killed_midway_keeps_the_old_file_and_its_leftover_is_cleaned_next_time(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", build_model(CONFIG, seed=0))
    before = path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_SAVE, str(path)],
        cwd=ROOT,
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "m.pt"]
    assert len(leftovers) == 1 and leftovers[0].startswith("m.pt.saving-") and leftovers[0].endswith(".tmp")
    assert path.read_bytes() == before
    innocent = [
        "m.pt.backup",
        "other.pt.saving-12345-abcdefgh.tmp",
        "m.pt.notes.tmp",
        "m.pt.backup01.tmp",
        "m.pt.saving-1-abcdefgh.tmp.keep",
        "m.pt.12345.abcdefgh.tmp",
    ]
    for name in innocent:
        (tmp_path / name).write_text("not ours")
    save_checkpoint(path, build_model(CONFIG, seed=1))  # the next save removes the dead writer's temporary
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["m.pt", *innocent])


def test_stale_temp_rule_age_or_dead_pid_only(tmp_path):
    target = tmp_path / "m.pt"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    ).stdout.strip()  # a writer that has exited
    live = tmp_path / f"m.pt.saving-{os.getpid()}-abcdefgh.tmp"
    old = tmp_path / f"m.pt.saving-{os.getpid()}-ijklmnop.tmp"
    dead = tmp_path / f"m.pt.saving-{gone}-qrstuvwx.tmp"
    earlier_forms = [tmp_path / "m.pt.qrstuvwx.tmp", tmp_path / f"m.pt.{gone}.abcdefgh.tmp"]  # may be a user's
    for p in (live, old, dead, *earlier_forms):
        p.write_bytes(b"partial")
    for p in (old, *earlier_forms):
        os.utime(p, (time.time() - 120, time.time() - 120))
    assert sorted(remove_stale_temps(target)) == sorted([old, dead])
    assert live.exists() and all(p.exists() for p in earlier_forms)


def test_checkpoint_api_still_builds_and_reports_the_task(tmp_path):
    path = save_checkpoint(tmp_path / "ok.pt", build_model(CONFIG, seed=0), extra={"task": {"task": "sort"}})
    ckpt = load_checkpoint(path)
    assert isinstance(ckpt, Checkpoint) and ckpt.task.task == "sort" and ckpt.build().config == CONFIG


def test_read_only_folder_simulated_keeps_the_old_file(tmp_path, monkeypatch):
    """The same as the chmod test where it cannot run (as root): creating the temporary is refused."""
    import core_model.atomic_files as files

    path = save_checkpoint(tmp_path / "m.pt", build_model(CONFIG, seed=0))
    before = path.read_bytes()

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.tempfile, "mkstemp", refused)
    with pytest.raises(CheckpointError, match=r"could not write .*m\.pt: permission denied"):
        save_checkpoint(path, build_model(CONFIG, seed=1))
    assert path.read_bytes() == before


@pytest.mark.parametrize("entries", [30_000, 70_000])  # below and above 65,535: the plain and the zip64 count
def test_an_archive_listing_too_many_entries_is_refused_before_its_directory_is_read(tmp_path, entries):
    """zipfile parses the whole central directory on opening: 2.5 million empty entries took 42 s and 1.6 GB before
    any check ran. The count in the archive's end records is read first."""
    path = save_checkpoint(tmp_path / "many.pt", build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=0))
    with zipfile.ZipFile(path) as archive:
        entries += len(archive.infolist())  # the weights' own records
    with zipfile.ZipFile(path, "a") as archive:
        for i in range(entries - len(archive.infolist())):
            archive.writestr(f"pad/{i}", b"")
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    took, (_, peak) = time.perf_counter() - start, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert str(info.value) == f"many.pt: its archive lists {entries:,} entries, more than the 20,000 it may hold"
    assert took < 1.0 and peak < 2**20  # the end records only: no directory of tens of thousands of entries
