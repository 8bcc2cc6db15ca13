"""`tasks`: the registry's tasks (name, what each asks, its symbols, its training lengths and recipe, its shipped
models) as a table, or as one JSON object with --json."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from visualizer.cli.common import Verb
from visualizer.cli.options import deterministic_seed_option, device_option
from visualizer.cli.output import json_line

JSON_HELP = "print one JSON object on one line instead of the table"
COLUMNS = ("task", "source", "target", "lengths", "recipe", "shipped", "description")


def add_options(p: argparse.ArgumentParser) -> None:
    """The `tasks` subcommand's options: only the ones every verb takes (it reads no file and runs no model)."""
    deterministic_seed_option(p, "tasks")
    device_option(p, "unused: tasks runs no model")


def listing() -> dict[str, Any]:
    """{"tasks": [...]}: each task at its default size; min_len and max_len are its default training lengths, and
    "training" the steps, peak rate and batch the Trainer and `train` use for it on a RoPE model by default."""
    from core_model.recipe import task_train_config
    from core_model.shipped import shipped_for
    from core_model.tasks import TASK_NAMES, default_spec, task_named

    rows = []
    for name in TASK_NAMES:
        task, spec, recipe = task_named(name), default_spec(name), task_train_config(name, "rope")
        rows.append(
            {
                "name": name,
                "description": task.description,
                "source_tokens": list(task.source_alphabet(spec.n_symbols)),
                "target_tokens": list(task.target_alphabet(spec.n_symbols)),
                "min_len": spec.min_len,
                "max_len": spec.max_len,
                "training": {key: getattr(recipe, key) for key in ("steps", "lr", "batch_size")},
                "shipped": list(shipped_for(name)),
            }
        )
    return {"tasks": rows}


def table(data: dict[str, Any]) -> str:
    """The listing as aligned columns, one task a line, the description last (it is the only long one)."""
    lines = [
        (
            row["name"],
            "".join(row["source_tokens"]),
            "".join(row["target_tokens"]),
            f"{row['min_len']}-{row['max_len']}",
            "{steps} steps at {lr:g}".format(**row["training"]),
            " ".join(row["shipped"]) or "-",
            row["description"],
        )
        for row in data["tasks"]
    ]
    widths = [max(len(cells[i]) for cells in [COLUMNS, *lines]) for i in range(len(COLUMNS) - 1)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)) + "  " + cells[-1] + "\n"
        for cells in [COLUMNS, *lines]
    )


def run(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Print the registry: a table, or one JSON line with --json."""
    data = listing()
    sys.stdout.write(json_line(data) if ns.json else table(data))
    return 0


VERB = Verb(
    "tasks",
    "[--json] [options]",
    "the tasks a model can learn: symbols, training lengths and recipe, shipped models (a table, or JSON)",
    add_options,
    run,
    json_help=JSON_HELP,
)
