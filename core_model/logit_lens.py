"""The logit lens for the decoder: what each decoder layer would output if the model stopped there.

The residual stream after decoder layer l goes through the final norm and the output layer, as the last layer's
does. The norm is recomputed on each layer's own stream: reusing the last layer's statistics would scale the early
layers' streams by the wrong amount and make their predictions look uniform. The decoder is teacher-forced with the
model's own output, so the last layer's row is exactly what greedy decoding wrote, and every earlier row shows at
which depth that answer appears.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from .decoding import choosable
from .inputs import decoder_input
from .masks import MaskSpec
from .model import HeadGates, Seq2SeqTransformer


@dataclass(frozen=True)
class LogitLens:
    """Per decoder layer (rows) and output position (columns): the top token and the output token's log p."""

    output: tuple[int, ...]  # the tokens the decoder is teacher-forced to write (the model's own output)
    top_tokens: np.ndarray  # (layers, T) int: the most likely choosable token after each layer
    top_log_probs: np.ndarray  # (layers, T): its log-probability
    output_log_probs: np.ndarray  # (layers, T): log p(output[t]) after each layer

    def most_common(self, layer: int) -> tuple[int, int]:
        """(token id, count): the top token `layer` writes at most output positions (the lowest id on a tie).

        A layer that writes one token nearly everywhere matches the output wherever the answer happens to be that
        token: its matches there say little about what the layer found.
        """
        ids, counts = np.unique(self.top_tokens[layer], return_counts=True)
        best = int(np.argmax(counts))
        return int(ids[best]), int(counts[best])


def logit_lens(
    model: Seq2SeqTransformer,
    src: Sequence[int],
    output: Sequence[int],
    *,
    n_tokens: int | None = None,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
) -> LogitLens:
    """The lens for one source (encoder ids, core_model.inputs) and the output the decoder writes (with <eos>).

    `n_tokens`: the task vocabulary's size, as greedy decoding takes it: top tokens are chosen among those.
    """
    if not output:
        raise ValueError("the output is empty: the lens needs at least one output token")
    device = next(model.parameters()).device
    streams: list[Tensor] = []
    handles = [
        layer.register_forward_hook(lambda _m, _a, out: streams.append(out[0].detach()))
        for layer in model.decoder_layers
    ]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            tgt = torch.tensor([decoder_input(list(output)[:-1])], device=device)
            model(torch.tensor([list(src)], device=device), tgt, masks, head_gates)
            log_probs = torch.cat([model.log_probs(model.decoder_norm(x)) for x in streams])  # (layers, T, V)
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    top = choosable(log_probs, n_tokens).max(dim=-1)
    targets = torch.tensor(list(output), device=device).expand(log_probs.shape[0], -1)
    chosen = log_probs.gather(-1, targets[..., None])[..., 0]
    return LogitLens(
        tuple(int(t) for t in output),
        top.indices.cpu().numpy(),
        top.values.double().cpu().numpy(),
        chosen.double().cpu().numpy(),
    )
