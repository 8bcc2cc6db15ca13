"""Saving a checkpoint replaces only a regular, writable file: links are followed, pipes, devices and read-only files
refused, modes kept, the file and its folder flushed to disk, and only the writer's own leftovers cleaned."""

from __future__ import annotations

import errno
import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest
import torch
from full_disk import NO_ROOM, room_for

from core_model import ModelConfig, build_model
from core_model.atomic_files import write_bytes_atomically
from core_model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from core_model.checkpoint_files import remove_stale_temps
from visualizer.cli import main

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(os.name != "posix", reason="symlinks, FIFOs and modes as POSIX has them"),
]
CONFIG = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
TRAIN = ["train", "--task", "copy", "--steps", "3", "--batch-size", "4", "--max-len", "3", "--device", "cpu"]


def _same_weights(path: Path, seed: int) -> bool:
    expected = build_model(CONFIG, seed=seed).state_dict()
    return all(torch.equal(v, expected[k]) for k, v in load_checkpoint(path).state_dict.items())


def _save_in_thread(path: Path) -> BaseException | None:
    """Save from a thread that must finish: a save that opened a FIFO would wait for a reader forever."""
    outcome: list[BaseException | None] = []

    def save() -> None:
        try:
            save_checkpoint(path, build_model(CONFIG, seed=1))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test to inspect
            outcome.append(exc)

    worker = threading.Thread(target=save, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the save blocked on the target"
    return outcome[0]


def test_a_save_through_a_symlink_updates_the_real_file_and_keeps_the_link(tmp_path):
    real_dir, link_dir = tmp_path / "store", tmp_path / "work"
    real_dir.mkdir()
    link_dir.mkdir()
    real = save_checkpoint(real_dir / "model.pt", build_model(CONFIG, seed=0))
    link = link_dir / "current.pt"
    link.symlink_to(Path("..") / "store" / "model.pt")
    save_checkpoint(link, build_model(CONFIG, seed=1))
    assert link.is_symlink() and os.readlink(link) == str(Path("..") / "store" / "model.pt")
    assert _same_weights(real, seed=1) and _same_weights(link, seed=1)
    assert sorted(p.name for p in real_dir.iterdir()) == ["model.pt"]  # the temporary was next to the real file
    assert sorted(p.name for p in link_dir.iterdir()) == ["current.pt"]


def test_a_dangling_symlink_gets_its_file_created_where_it_points(tmp_path):
    link = tmp_path / "link.pt"
    link.symlink_to("new.pt")
    save_checkpoint(link, build_model(CONFIG, seed=2))
    assert link.is_symlink() and (tmp_path / "new.pt").is_file() and _same_weights(tmp_path / "new.pt", seed=2)


def _make_fifo(path: Path) -> None:
    os.mkfifo(path)


def _make_socket(path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays


def _make_folder(path: Path) -> None:
    path.mkdir()


def _make_char_device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a twin of /dev/null inside tmp_path
    except PermissionError:
        pytest.skip("creating a device node needs privileges; the FIFO, socket and folder cases cover the rule")


KINDS = {
    "fifo": (_make_fifo, stat.S_ISFIFO, "a named pipe"),
    "socket": (_make_socket, stat.S_ISSOCK, "a socket"),
    "folder": (_make_folder, stat.S_ISDIR, "a folder"),
    "char device": (_make_char_device, stat.S_ISCHR, "a character device"),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("via_link", [False, True])
def test_a_target_that_is_not_a_regular_file_is_refused_and_left_alone(tmp_path, kind, via_link):
    make, still, words = KINDS[kind]
    special = tmp_path / "special"
    make(special)
    target = tmp_path / "link.pt" if via_link else special
    if via_link:
        target.symlink_to(special)
    error = _save_in_thread(target)
    assert isinstance(error, CheckpointError)
    assert str(error).startswith(f"refusing to write {target}") and f"it is {words}" in str(error)
    assert "\n" not in str(error) and (f"a link to {special}" in str(error)) == via_link
    assert still(os.lstat(special).st_mode) and target.is_symlink() == via_link
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"special", target.name})


@pytest.mark.parametrize("kind", list(KINDS))
def test_saving_loading_and_the_settings_check_name_a_special_file_alike(tmp_path, kind):
    """One table of file kinds (atomic_files.file_kind) serves the writer, the loader and the settings check."""
    from core_model.atomic_files import file_kind
    from visualizer.controllers.settings_file import unusable_kind

    make, _, _ = KINDS[kind]
    special = tmp_path / "special"
    make(special)
    words = file_kind(os.stat(special).st_mode)
    assert words is not None and file_kind(os.stat(__file__).st_mode) is None
    with pytest.raises(CheckpointError) as loading:
        load_checkpoint(special)
    assert str(loading.value) == f"{special} is not a file (it is {words})"
    assert f"it is {words}, not a regular file" in str(_save_in_thread(special)) and unusable_kind(special) == words


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664])
def test_a_save_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path, mode):
    path = save_checkpoint(tmp_path / "private.pt", build_model(CONFIG, seed=0))
    os.chmod(path, mode)
    save_checkpoint(path, build_model(CONFIG, seed=1))
    assert stat.S_IMODE(os.stat(path).st_mode) == mode and _same_weights(path, seed=1)


def test_a_read_only_file_is_refused_in_one_line_and_left_as_it_was(tmp_path, capsys):
    """chmod 0444 says "do not change this file"; the rename would need only the folder's permission."""
    path = save_checkpoint(tmp_path / "kept.pt", build_model(CONFIG, seed=0))
    os.chmod(path, 0o444)
    before = path.read_bytes()
    with pytest.raises(CheckpointError) as info:
        save_checkpoint(path, build_model(CONFIG, seed=1))
    assert str(info.value) == f"{path} is read-only; make it writable or save under another name"
    link = tmp_path / "link.pt"
    link.symlink_to("kept.pt")
    assert main([*TRAIN, "--out", str(link)]) == 2  # refused before training, as a folder or a pipe is
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out: {link} (a link to {path}) is read-only; make it writable" in err
    assert path.read_bytes() == before and stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.pt", "link.pt"]


def test_a_file_the_user_may_not_write_is_refused_though_it_has_write_bits(tmp_path, monkeypatch):
    """Another user's 0644 file in the user's own folder: os.access says no (root, who runs CI, may write any)."""
    path = save_checkpoint(tmp_path / "theirs.pt", build_model(CONFIG, seed=0))
    before = path.read_bytes()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: mode != os.W_OK and real_access(p, mode, **kw))
    with pytest.raises(CheckpointError, match=r"theirs\.pt is read-only; make it writable or save under another"):
        save_checkpoint(path, build_model(CONFIG, seed=1))
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]


def test_the_written_file_is_flushed_once_and_its_folder_after_the_rename(tmp_path, monkeypatch):
    """Without the folder's fsync a power cut can lose the rename; a second fsync of the same file buys nothing."""
    flushed: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        flushed.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("names open files through /proc")
    monkeypatch.setattr(os, "fsync", fsync)
    path = save_checkpoint(tmp_path / "m.pt", build_model(CONFIG, seed=0))
    assert len(flushed) == 2 and Path(flushed[0]).parent == tmp_path and Path(flushed[0]).name.startswith("m.pt.")
    assert flushed[1] == str(tmp_path) and path.exists() and not Path(flushed[0]).exists()


@pytest.fixture
def umask():
    """Set the process umask for one test and put the previous one back."""
    before = os.umask(0o022)
    yield lambda value: os.umask(value)
    os.umask(before)


@pytest.mark.parametrize("mask", [0o077, 0o027, 0o002])
def test_a_new_file_gets_what_the_umask_allows(tmp_path, umask, mask):
    umask(mask)
    path = save_checkpoint(tmp_path / "new.pt", build_model(CONFIG, seed=0))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~mask


def test_a_failed_write_leaves_the_previous_file_and_no_temporary(tmp_path):
    from core_model.atomic_files import atomic_path

    path = tmp_path / "plot.png"
    path.write_bytes(b"the previous export")
    with pytest.raises(OSError, match="No space left"), atomic_path(path, keep_suffix=True) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(f"plot.png.saving-{os.getpid()}-")
        assert tmp.name.endswith(".tmp.png")
        tmp.write_bytes(b"half a pl")
        raise OSError(28, "No space left on device")
    assert path.read_bytes() == b"the previous export" and sorted(tmp_path.iterdir()) == [path]


def test_bytes_that_do_not_all_fit_leave_the_previous_file_and_no_temporary(tmp_path):
    """A disk with room for all but the last 2 KB: the write fails where it runs out, and nothing is renamed."""
    path = tmp_path / "plot.png"
    path.write_bytes(b"the previous export")
    data = os.urandom(20_000)
    with pytest.raises(OSError) as raised, room_for(len(data) - 2_000):
        write_bytes_atomically(path, data)
    assert raised.value.errno == errno.EFBIG and raised.value.strerror == NO_ROOM
    assert path.read_bytes() == b"the previous export" and sorted(tmp_path.iterdir()) == [path]
    assert write_bytes_atomically(path, data) == len(data) and path.read_bytes() == data  # with room, it is written


def test_a_write_the_file_system_reports_but_does_not_keep_is_not_published(tmp_path, monkeypatch):
    """os.write says every byte went in, the file holds half: the size checked before the rename catches it."""
    path = tmp_path / "frame.png"
    path.write_bytes(b"the previous frame")
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[: len(data) // 2]) and len(data))
    with pytest.raises(OSError, match=r"only 5000 of 10000 bytes reached the file"):
        write_bytes_atomically(path, bytes(10_000))
    assert path.read_bytes() == b"the previous frame" and sorted(tmp_path.iterdir()) == [path]


def test_stale_temporaries_of_exports_are_recognised_and_nothing_else(tmp_path):
    target = tmp_path / "grid.png"
    pid = os.getpid()
    ours = [tmp_path / f"grid.png.saving-{pid}-abcdefgh.tmp.png", tmp_path / f"grid.png.saving-{pid}-ijklmnop.tmp"]
    innocent = [
        tmp_path / n
        for n in (
            "grid.png.saving-1-abcdefgh.tmp.svg",
            "grid.png.saving-1-abcdefgh.tmp.png.keep",
            "other.png.saving-1-abcdefgh.tmp.png",
            "grid.png.notes.tmp.png",
            "grid.png.backup01.tmp",
            "grid.png.2024.backup01.tmp.png",
            f"grid.png.{pid}.abcdefgh.tmp.png",
            "grid.png.saving-abcdefgh.tmp",
        )
    ]
    old = time.time() - 120
    for path in ours + innocent:
        path.write_bytes(b"partial")
        os.utime(path, (old, old))
    assert sorted(remove_stale_temps(target)) == sorted(ours)
    assert all(p.exists() for p in innocent)


def test_a_users_own_tmp_file_next_to_the_checkpoint_survives_a_save(tmp_path):
    """`model.pt.backup01.tmp` is the user's: the writer's names carry `saving-<pid>-`, whatever their age."""
    path = save_checkpoint(tmp_path / "model.pt", build_model(CONFIG, seed=0))
    mine = [tmp_path / "model.pt.backup01.tmp", tmp_path / "model.pt.2024.backup01.tmp"]
    for other in mine:
        other.write_text("the user's own copy")
        os.utime(other, (time.time() - 3600, time.time() - 3600))
    save_checkpoint(path, build_model(CONFIG, seed=1))
    assert all(p.read_text() == "the user's own copy" for p in mine) and _same_weights(path, seed=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model.pt", *(p.name for p in mine)])


def test_train_refuses_a_fifo_out_before_training(tmp_path, capsys, monkeypatch):
    spare_dir = tmp_path / "spare"
    spare_dir.mkdir()
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(spare_dir))  # where a fallback save would go
    fifo = tmp_path / "pipe.pt"
    os.mkfifo(fifo)
    assert main([*TRAIN, "--out", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"attention-playground: error: --out: refusing to write {fifo}: "
        "it is a named pipe (FIFO), not a regular file (see 'attention-playground train --help')\n"
    )
    # one line, and no progress: nothing trained
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and list(spare_dir.iterdir()) == []


def test_train_refuses_a_link_to_a_device_node_before_training(tmp_path, capsys):
    device = tmp_path / "null"
    _make_char_device(device)
    link = tmp_path / "out.pt"
    link.symlink_to(device)
    assert main([*TRAIN, "--out", str(link)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is a character device, not a regular file" in err and "step" not in err
    assert stat.S_ISCHR(os.lstat(device).st_mode) and link.is_symlink()


def test_train_through_a_symlink_writes_the_real_file(tmp_path, capsys):
    real = save_checkpoint(tmp_path / "real.pt", build_model(CONFIG, seed=0))
    os.chmod(real, 0o600)
    link = tmp_path / "out.pt"
    link.symlink_to("real.pt")
    assert main([*TRAIN, "--out", str(link)]) == 0
    assert link.is_symlink() and [r["step"] for r in load_checkpoint(real).history] == [1, 2, 3]
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.pt", "real.pt"]
