"""`cell`: one attention cell taken apart (q, k, their product, scaling, mask, softmax, weighted values), as JSON.

The inputs are the playground's defaults: the source plus --pads <pad> tokens, and the decoder teacher-forced with
<bos> + the task's expected output + the same pads (core_model.inputs). No sampling: --seed is accepted like
every verb's and changes nothing. Indices are 0-based (the GUI's "L1 H1" is layer 0, head 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from visualizer.cli.common import Verb, checked_source, device_arg, load_trained, trained_fields
from visualizer.cli.limits import limit, ranged
from visualizer.cli.options import deterministic_seed_option, device_option
from visualizer.cli.output import json_line

KINDS = ("encoder_self", "decoder_self", "cross")


def add_options(p: argparse.ArgumentParser) -> None:
    """The `cell` subcommand's options."""
    p.add_argument("path", type=Path, help="checkpoint file")
    p.add_argument("source", help="source symbols, e.g. 3141592")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--layer", default=0, **ranged("cell", "--layer", "0-based layer (default 0)"))
    p.add_argument("--head", default=0, **ranged("cell", "--head", "0-based head (default 0)"))
    p.add_argument("--query", required=True, **ranged("cell", "--query", "0-based query row of the map"))
    p.add_argument("--key", required=True, **ranged("cell", "--key", "0-based key column of the map"))
    p.add_argument(
        "--pads", default=2, **ranged("cell", "--pads", "<pad> tokens after source and target (the GUI's default 2)")
    )
    p.add_argument(
        "--paint",
        action="append",
        default=[],
        metavar="KIND:Q,K",
        help="hide key K from query Q in KIND (repeatable), like Paint mask in the large view",
    )
    device_option(p)
    deterministic_seed_option(p, "cell")


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
            query, key = int(index.parse(parts[0])), int(index.parse(parts[1]))  # an integer range parses ints
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--paint {item!r}: QUERY and KEY {exc}")
        out.setdefault(kind, set()).add((query, key))
    return out


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Decompose the cell and print one JSON line; bad indices exit 2 with the field named."""
    import torch

    from core_model import MaskSpec, VocabularyError
    from core_model.cell_decomposition import decompose_cell
    from core_model.inputs import decoder_input, encoder_input
    from core_model.tasks import expected_output

    painted = parse_paint(ns.paint, parser)
    device = device_arg(ns.device)
    model, task, trained = load_trained(ns.path, device)
    vocab = task.vocabulary
    try:
        ids = vocab.encode(ns.source)
    except VocabularyError as exc:
        parser.error(exc.counted_from_one())
    if not ids:
        parser.error("the source is empty")
    checked_source(task, ids, "SOURCE")
    src_ids = encoder_input(ids, ns.pads, anchored=task.anchored)
    tgt_ids = decoder_input(expected_output(task, ids), ns.pads)
    if max(len(src_ids), len(tgt_ids)) > model.config.max_len:
        parser.error(f"source and pads need {len(tgt_ids)} positions; the model has {model.config.max_len}")
    sides = {"encoder_self": (src_ids, src_ids), "decoder_self": (tgt_ids, tgt_ids), "cross": (tgt_ids, src_ids)}
    for kind, cells in painted.items():  # a cell outside its map would be painted nowhere, silently
        rows, columns = (len(side) for side in sides[kind])
        for query, key in sorted(cells):
            if query >= rows or key >= columns:
                parser.error(f"--paint {kind}:{query},{key}: the {kind} map has {rows} queries and {columns} keys")
    masks = MaskSpec()
    for kind, cells in painted.items():
        masks = masks.with_painted(kind, cells)
    src, tgt = torch.tensor([src_ids], device=device), torch.tensor([tgt_ids], device=device)
    try:
        cell = decompose_cell(model, src, tgt, ns.kind, ns.layer, ns.head, ns.query, ns.key, masks=masks)
    except ValueError as exc:
        parser.error(str(exc))
    queries = src_ids if ns.kind == "encoder_self" else tgt_ids
    keys = tgt_ids if ns.kind == "decoder_self" else src_ids
    out = cell.to_json() | {
        "query_token": vocab.token(queries[ns.query]),
        "key_token": vocab.token(keys[ns.key]),
        "source_tokens": vocab.tokens(src_ids),
        "target_tokens": vocab.tokens(tgt_ids),
        **trained_fields(trained, len(ids)),
        "path": str(ns.path),
    }
    sys.stdout.write(json_line(out))
    return 0


VERB = Verb(
    "cell",
    "FILE SOURCE --kind KIND --query I --key J [options]",
    "one attention cell taken apart: q, k, q*k, scaling, mask, softmax, weighted values",
    add_options,
    run,
)
