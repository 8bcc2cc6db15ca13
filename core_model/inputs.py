"""The model's two inputs for one example, built here only, so every front end feeds the model the same tokens.

The CLI verbs, the Playground, beam search, Compare and the task's own batches all show or score one example: the
encoder reads the source (anchored tasks: <bos> symbols <eos>) followed by optional <pad>s, and the decoder is
teacher-forced with <bos> + the target followed by the same <pad>s. Plain lists of ids, no torch: callers make the
tensor on their own device.
"""

from __future__ import annotations

from collections.abc import Sequence

from .vocab import BOS, EOS, PAD


def _check_pads(pads: int) -> None:
    if pads < 0:
        raise ValueError(f"pads must be >= 0, got {pads}")


def encoder_input(ids: Sequence[int], pads: int = 0, *, anchored: bool = False) -> list[int]:
    """Encoder ids for source symbol ids: anchors make a RoPE model tell 00 from 0000; pads show padding's effect.

    Returns `<bos> ids <eos>` when `anchored`, else `ids`, then `pads` <pad> ids. A negative `pads` is a ValueError.
    """
    _check_pads(pads)
    body = [BOS, *ids, EOS] if anchored else list(ids)
    return body + [PAD] * pads


def decoder_input(target: Sequence[int], pads: int = 0) -> list[int]:
    """Teacher-forced decoder ids: <bos> then `target` (what the decoder has read so far), then `pads` <pad> ids.

    The model predicts token i+1 of `target` at position i, so scoring an output feeds `output[:-1]` here.
    """
    _check_pads(pads)
    return [BOS, *target] + [PAD] * pads
