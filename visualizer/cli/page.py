"""`page`: one self-contained interactive HTML page of one input's attention in one view, written atomically.

The page (core_model.page) embeds the numbers `views --json` prints for the same checkpoint, source, view and
--pads; it needs no network to open. The file is written through a temporary renamed over --out, so a failed
write never leaves a partial page or touches a previous one. One JSON line says where it went.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from visualizer.cli.budget import attention_weights, check_budget
from visualizer.cli.common import CliError, Verb, device_arg, load_trained, trained_fields
from visualizer.cli.limits import ranged
from visualizer.cli.options import deterministic_seed_option, device_option
from visualizer.cli.output import check_out_before_work, json_line, kept_if_interrupted
from visualizer.cli.views import MODES


def add_options(p: argparse.ArgumentParser) -> None:
    """The `page` subcommand's options."""
    p.add_argument("path", type=Path)
    p.add_argument("--source", required=True, help="source symbols, e.g. 0123")
    p.add_argument("--view", choices=MODES, default="weights", help="what the maps show (default: weights)")
    p.add_argument("--out", type=Path, required=True, help="the HTML file to write (replaced atomically)")
    p.add_argument(
        "--pads", default=2, **ranged("page", "--pads", "<pad> tokens after source and target (as the playground)")
    )
    device_option(p, "cpu")
    deterministic_seed_option(p, "page")


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Write the page; print {"path", "bytes", "view", "source_tokens", "output_tokens", "expected_tokens", ...}."""
    from core_model import VocabularyError
    from core_model.atomic_files import RefusedTarget
    from core_model.page import render_page, save_page
    from core_model.page_data import page_data

    check_out_before_work(ns.out)
    device = device_arg(ns.device or "cpu")
    model, task, trained = load_trained(ns.path, device)
    try:
        symbols = len(task.vocabulary.encode(ns.source))
    except VocabularyError:
        symbols = 0  # page_data names the unknown symbol below
    length = symbols + ns.pads + 2
    weights = attention_weights(model.config, 1, length, length)
    check_budget(weights, f"{symbols} symbols and --pads {ns.pads}", "use fewer --pads or a shorter --source")
    try:
        data = page_data(model, task, ns.source, ns.view, ns.pads)
    except VocabularyError as exc:
        parser.error(f"--source: {exc.counted_from_one()}")
    except ValueError as exc:
        parser.error(f"--source: {exc}")
    try:
        size = save_page(render_page(data), ns.out)
    except RefusedTarget as exc:
        raise CliError(f"--out: {exc}") from None
    except OSError as exc:
        raise CliError(f"could not write {ns.out}: {exc.strerror or exc}") from None
    with kept_if_interrupted(f"the page was written to {ns.out}"):
        _print_result(data, size, trained, ns, task, device)
    return 0


def _print_result(
    data: dict[str, Any], size: int, trained: Any, ns: argparse.Namespace, task: Any, device: Any
) -> None:
    """The JSON line about the page just written."""
    result: dict[str, Any] = {
        "path": str(ns.out),
        "bytes": size,
        "view": ns.view,
        "task": task.task,
        "source_tokens": data["source_tokens"],
        "output_tokens": data["output_tokens"],
        "expected_tokens": data["expected_tokens"],
        **trained_fields(trained, len(task.vocabulary.encode(ns.source))),
        "device": str(device),
    }
    sys.stdout.write(json_line(result))


VERB = Verb(
    "page",
    "FILE --source TEXT --out PAGE.html [--view weights|scores|norms|rollout] [options]",
    "one self-contained interactive HTML page of one input's attention (no network needed to open it)",
    add_options,
    run,
)
