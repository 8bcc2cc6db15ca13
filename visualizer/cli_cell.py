"""`cell`: one attention cell taken apart (q, k, their product, scaling, mask, softmax, weighted values), as JSON.

The inputs are the playground's defaults: the source plus --pads <pad> tokens, and the decoder teacher-forced with
<bos> + the task's expected output + the same pads. Indices are 0-based (the GUI's "L1 H1" is layer 0, head 0).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli_common import device_arg, load_trained, trained_fields
from visualizer.cli_limits import device_option, limit, ranged, threads_option
from visualizer.cli_output import json_line

KINDS = ("encoder_self", "decoder_self", "cross")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The `cell` subcommand's options."""
    p = sub.add_parser("cell", help="take one attention cell apart: every number from q and k to the weight")
    p.add_argument("path", type=Path, help="checkpoint file")
    p.add_argument("source", help="source symbols, e.g. 3141592")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--layer", default=0, **ranged("cell", "--layer", "0-based layer (default 0)"))
    p.add_argument("--head", default=0, **ranged("cell", "--head", "0-based head (default 0)"))
    p.add_argument("--query", required=True, **ranged("cell", "--query", "0-based query row of the map"))
    p.add_argument("--key", required=True, **ranged("cell", "--key", "0-based key column of the map"))
    p.add_argument("--pads", default=2, **ranged(
        "cell", "--pads", "<pad> tokens after source and target (the GUI's default 2)"))
    p.add_argument("--paint", action="append", default=[], metavar="KIND:Q,K",
                   help="hide key K from query Q in KIND (repeatable), like Paint mask in the large view")
    p.add_argument("--json", action="store_true", help="print JSON (the only format; accepted for symmetry)")
    device_option(p)
    threads_option(p, "cell")
    return p


def parse_paint(items: list[str], parser: argparse.ArgumentParser) -> dict[str, set[tuple[int, int]]]:
    """["cross:1,2", ...] -> {"cross": {(1, 2)}}; a malformed item is a usage error naming it."""
    out: dict[str, set[tuple[int, int]]] = {}
    index = limit("cell", "--query")  # the range of --query and --key
    for item in items:
        kind, _, cell = item.partition(":")
        parts = cell.split(",")
        if kind not in KINDS or len(parts) != 2:
            parser.error(f"--paint {item!r}: expected KIND:QUERY,KEY with KIND one of {', '.join(KINDS)}")
        try:
            query, key = index.parse(parts[0]), index.parse(parts[1])
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--paint {item!r}: QUERY and KEY {exc}")
        out.setdefault(kind, set()).add((query, key))
    return out


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Decompose the cell and print one JSON line; bad indices exit 2 with the field named."""
    import torch

    from core_model import BOS, PAD, MaskSpec, VocabularyError
    from core_model.cell_decomposition import decompose_cell
    from core_model.masks import PAINTED_FIELDS
    from core_model.tasks import expected_output

    painted = parse_paint(ns.paint, parser)
    device = device_arg(ns.device)
    model, task, trained = load_trained(ns.path, device)
    vocab = task.vocabulary
    try:
        ids = vocab.encode(ns.source)
    except VocabularyError as exc:
        parser.error(f"unknown symbol {exc.symbol!r} at position {exc.position + 1}; allowed: {' '.join(exc.allowed)}")
    if not ids:
        parser.error("the source is empty")
    src_ids = task.source_ids(ids) + [PAD] * ns.pads  # anchored tasks: <bos> ids <eos>
    tgt_ids = [BOS] + expected_output(task.task, ids) + [PAD] * ns.pads
    if max(len(src_ids), len(tgt_ids)) > model.config.max_len:
        parser.error(f"source and pads need {len(tgt_ids)} positions; the model has {model.config.max_len}")
    masks = MaskSpec(**{PAINTED_FIELDS[k]: frozenset(v) for k, v in painted.items()})
    src, tgt = torch.tensor([src_ids], device=device), torch.tensor([tgt_ids], device=device)
    try:
        cell = decompose_cell(model, src, tgt, ns.kind, ns.layer, ns.head, ns.query, ns.key, masks=masks)
    except ValueError as exc:
        parser.error(str(exc))
    queries = src_ids if ns.kind == "encoder_self" else tgt_ids
    keys = tgt_ids if ns.kind == "decoder_self" else src_ids
    out = cell.to_json() | {"query_token": vocab.token(queries[ns.query]), "key_token": vocab.token(keys[ns.key]),
                            "source_tokens": vocab.tokens(src_ids), "target_tokens": vocab.tokens(tgt_ids),
                            **trained_fields(trained, len(ids)), "path": str(ns.path)}
    sys.stdout.write(json_line(out))
    return 0
