"""Copy, reverse and sort batches stay bit-for-bit what they were: shipped models, seeds and benchmarks rest on them.

The digests were taken from the vectorised generator before tasks became registry values; two batches are drawn in a
row from one generator, so the random stream each batch leaves behind is pinned too.
"""

from __future__ import annotations

import hashlib

import pytest
import torch

from core_model.tasks import Batch, TaskSpec, make_batch

SPECS: tuple[dict[str, object], ...] = (
    {},
    {"n_symbols": 7, "min_len": 1, "max_len": 9},
    {"n_symbols": 10, "min_len": 1, "max_len": 16, "runs": 0.25, "anchored": True},
    {"n_symbols": 3, "min_len": 2, "max_len": 5, "runs": 1.0},
)
# (task, index into SPECS, seed, length=) -> the first 16 hex digits of the SHA-256 of both batches
PINNED: dict[tuple[str, int, int, int | None], str] = {
    ("copy", 0, 0, None): "4bcd0efd5e22e0ed",
    ("copy", 0, 1234, None): "c284918d46c3bdc1",
    ("copy", 0, 7, 12): "694784fae0d1299e",
    ("copy", 1, 0, None): "40a61a0565f54741",
    ("copy", 1, 1234, None): "789a9b098b235443",
    ("copy", 1, 7, 12): "5c5af3d64470bb6a",
    ("copy", 2, 0, None): "925f8c0b6286146c",
    ("copy", 2, 1234, None): "4361553c9a804f18",
    ("copy", 2, 7, 12): "a03860c5bc694bda",
    ("copy", 3, 0, None): "76a470afa3bd8a81",
    ("copy", 3, 1234, None): "65e0629dff682b62",
    ("copy", 3, 7, 12): "d843b2e3934c7563",
    ("reverse", 0, 0, None): "149be32ee8af30fd",
    ("reverse", 0, 1234, None): "34e405dc3b00c869",
    ("reverse", 0, 7, 12): "30a83244e1169ec5",
    ("reverse", 1, 0, None): "a0ca1ae1222b2d73",
    ("reverse", 1, 1234, None): "2286891fdbd45b89",
    ("reverse", 1, 7, 12): "17f4d337a1052761",
    ("reverse", 2, 0, None): "623902954368a497",
    ("reverse", 2, 1234, None): "036ad82f29f08d2b",
    ("reverse", 2, 7, 12): "b598adace480cb2e",
    ("reverse", 3, 0, None): "93b1b409a2206254",
    ("reverse", 3, 1234, None): "04e36bde9ae60dfb",
    ("reverse", 3, 7, 12): "9cc48c6805f1b4e3",
    ("sort", 0, 0, None): "926ad5c31b513bdc",
    ("sort", 0, 1234, None): "cbd9229d572e9d7c",
    ("sort", 0, 7, 12): "3eb89c0868ae8b60",
    ("sort", 1, 0, None): "ee74bbe6151b138e",
    ("sort", 1, 1234, None): "8eb0bb7692505387",
    ("sort", 1, 7, 12): "191ada7e99b67634",
    ("sort", 2, 0, None): "f95b2e6ffc9b200c",
    ("sort", 2, 1234, None): "da833071111aaec1",
    ("sort", 2, 7, 12): "7ae3b48833a31592",
    ("sort", 3, 0, None): "133e25bf1b467dfa",
    ("sort", 3, 1234, None): "f52804493102b29f",
    ("sort", 3, 7, 12): "b5d74c21e838356e",
}


def digest(batches: list[Batch]) -> str:
    h = hashlib.sha256()
    for batch in batches:
        for t in (batch.src, batch.tgt_in, batch.tgt_out):
            h.update(str(tuple(t.shape)).encode())
            h.update(t.to(torch.int64).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(("task", "spec", "seed", "length"), list(PINNED))
def test_classic_batches_are_unchanged(task, spec, seed, length):
    gen = torch.Generator().manual_seed(seed)
    task_spec = TaskSpec(task, **SPECS[spec])  # type: ignore[arg-type]
    batches = [make_batch(task_spec, 64, gen, length=length), make_batch(task_spec, 5, gen)]
    assert digest(batches) == PINNED[(task, spec, seed, length)]


def test_a_small_sort_batch_is_exactly_as_before():
    batch = make_batch(
        TaskSpec("sort", n_symbols=5, min_len=2, max_len=4, runs=0.5, anchored=True),
        3,
        torch.Generator().manual_seed(3),
    )
    assert batch.src.tolist() == [[1, 5, 5, 5, 2, 0], [1, 3, 3, 3, 3, 2], [1, 4, 3, 7, 2, 0]]
    assert batch.tgt_in.tolist() == [[1, 5, 5, 5, 0], [1, 3, 3, 3, 3], [1, 3, 4, 7, 0]]
    assert batch.tgt_out.tolist() == [[5, 5, 5, 2, 0], [3, 3, 3, 3, 2], [3, 4, 7, 2, 0]]
