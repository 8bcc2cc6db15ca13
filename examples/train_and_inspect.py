"""Train the default model on the copy task, then look at where its decoder attends, with core_model alone.

No Qt and no plotting library: the cross-attention map is written as a PNG by the small encoder below.
Run from the repository root:  python examples/train_and_inspect.py --steps 200 --out cross_attention.png
"""

from __future__ import annotations

import argparse
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # use this checkout's core_model

from core_model import ModelConfig, build_model  # noqa: E402
from core_model.tasks import TaskSpec, make_batch  # noqa: E402
from core_model.training import TrainConfig, Trainer  # noqa: E402

CELL_PX = 24  # each attention cell becomes a CELL_PX x CELL_PX square
EVAL_SEQUENCES = 500


def colour_ramp(weights: np.ndarray) -> np.ndarray:
    """(T, S) weights in [0, 1] -> (T, S, 3) uint8, white for 0 through to dark blue for 1."""
    w = np.clip(weights, 0.0, 1.0)[..., None]  # (T, S, 1)
    white, blue = np.array([255.0, 255.0, 255.0]), np.array([8.0, 48.0, 107.0])
    return np.round(white + (blue - white) * w).astype(np.uint8)


def png_bytes(rgb: np.ndarray) -> bytes:
    """(H, W, 3) uint8 -> an 8-bit truecolour PNG (filter 0 on every row, one zlib stream)."""
    height, width, _ = rgb.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # depth 8, RGB, deflate, no filter, no interlace
    rows = np.concatenate((np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)), axis=1)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
        + chunk(b"IEND", b"")
    )


def write_map_png(weights: np.ndarray, path: Path, cell_px: int = CELL_PX) -> tuple[int, int]:
    """Save a (T, S) map with each cell scaled up; returns (width, height) in pixels."""
    big = np.kron(colour_ramp(weights), np.ones((cell_px, cell_px, 1), np.uint8))  # (T*c, S*c, 3)
    path.write_bytes(png_bytes(big))
    return big.shape[1], big.shape[0]


def train(steps: int, seed: int) -> Trainer:
    """The default model trained for `steps` on the default copy task (CPU, reproducible for a seed)."""
    model = build_model(ModelConfig(), seed=seed)
    trainer = Trainer(model, TaskSpec(), TrainConfig(steps=steps, seed=seed), device=torch.device("cpu"))
    for metrics in trainer.train_steps():
        if metrics.step % 50 == 0 or metrics.step == steps:
            print(f"step {metrics.step:4d}  loss {metrics.loss:.4f}  token accuracy {metrics.token_accuracy:.3f}")
    return trainer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="optimisation steps (default 200)")
    parser.add_argument("--out", type=Path, default=Path("cross_attention.png"), help="PNG to write")
    parser.add_argument("--seed", type=int, default=0, help="seed for the weights and the data")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # a toy model gains nothing from more, and on a busy machine threads fight (QT-NOTES)

    trainer = train(args.steps, args.seed)
    result = trainer.evaluate(n=EVAL_SEQUENCES)
    print(f"exact match: {result.exact_match:.3f} over {result.n} sequences")

    batch = make_batch(trainer.task, 1, torch.Generator().manual_seed(args.seed + 1))
    trainer.model.eval()
    with torch.no_grad():
        maps = trainer.model(batch.src, batch.tgt_in, return_attention=True).attention.to_numpy()
    last = len(maps.cross) - 1
    cross = maps.cross[last][0].mean(axis=0)  # (H, T, S) -> (T, S), averaged over heads
    width, height = write_map_png(cross, args.out)

    vocab = trainer.task.vocabulary
    print("source: " + " ".join(vocab.token(int(i)) for i in batch.src[0]))
    print(f"cross-attention argmax per decoder row (layer {last}, mean of heads):")
    for row, (query, weights) in enumerate(zip(batch.tgt_in[0].tolist(), cross)):
        print(f"  row {row:2d} ({vocab.token(query)}) -> source position {int(weights.argmax())}")
    print(f"wrote {args.out} ({width}x{height} px, {cross.shape[0]}x{cross.shape[1]} cells)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
