"""How much of a shipped model's answer travels its last cross layer's direct path, computed here by rerunning that
layer with its output kept out of the residual stream (docs/CIRCUITS.md quotes both accuracies; two tests read it)."""

from __future__ import annotations

import torch

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from core_model.tasks import make_batch
from core_model.vocab import PAD


def direct_path_accuracy(name: str) -> dict[bool, float]:
    """Teacher-forced token accuracy of a shipped model on 200 training-distribution sequences (seed 0), with the last
    cross layer's output kept in the residual stream (True) or kept out of it while the feed-forward layer still
    reads it (False): how much of the answer travels the heads' direct path (docs/CIRCUITS.md quotes both)."""
    ckpt = load_checkpoint(resource_path(name))
    model = ckpt.build().eval()
    batch = make_batch(ckpt.task, 200, torch.Generator().manual_seed(0))
    layer = model.decoder_layers[-1]
    keep_direct = {"on": True}

    def forward(x, memory, self_req, cross_req, *, q_pos=0, cache=None):  # pre-norm DecoderLayer, path switchable
        s1, s2, s3 = layer.sub_self, layer.sub_cross, layer.sub_ff
        out, self_result = layer._sa_block(s1.norm(x), self_req, q_pos, cache)
        x = x + s1.branch(out)
        out, cross_result = layer._ca_block(s2.norm(x), memory, cross_req, q_pos, cache)
        read = x + s2.branch(out)
        x = (read if keep_direct["on"] else x) + s3.branch(layer._ff_block(s3.norm(read)))
        return x, self_result, cross_result

    layer.forward = forward
    accuracy = {}
    for on in (True, False):
        keep_direct["on"] = on
        with torch.no_grad():
            predicted = model(batch.src, batch.tgt_in).log_probs.argmax(-1)
        real = batch.tgt_out != PAD
        accuracy[on] = ((predicted == batch.tgt_out) & real).sum().item() / real.sum().item()
    return accuracy
