"""The example scripts run as a user would run them: a fresh interpreter, this checkout, default arguments."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "train_and_inspect.py"
CELL_PX = 24  # the script's scale per attention cell
SOURCE_LEN = 10  # the default copy task: 10 source symbols, so 11 decoder inputs (<bos> + 10)


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR, after checking the signature and the header's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16:29]
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(b"IHDR" + body)
    assert data[-12:] == struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))
    return struct.unpack(">II", body[:8])


def test_train_and_inspect_writes_a_png_and_a_sane_summary(tmp_path: Path) -> None:
    out = tmp_path / "cross.png"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _png_size(out.read_bytes()) == (SOURCE_LEN * CELL_PX, (SOURCE_LEN + 1) * CELL_PX)

    text = proc.stdout
    exact = float(re.search(r"^exact match: ([0-9.]+)", text, re.M).group(1))
    assert 0.9 <= exact <= 1.0, text  # 200 steps learn the copy task (1.000 with seed 0)
    rows = [int(m) for m in re.findall(r"^\s+row\s+\d+ \(.+\) -> source position (\d+)$", text, re.M)]
    assert len(rows) == SOURCE_LEN + 1, text
    assert all(0 <= r < SOURCE_LEN for r in rows)
    on_diagonal = sum(r == i for i, r in enumerate(rows[:SOURCE_LEN]))
    assert on_diagonal >= SOURCE_LEN - 2, text  # a copying decoder reads source i while writing symbol i
    assert f"wrote {out}" in text
