"""`tasks`: the registry as a table for people and, with --json, as one JSON object, with each task's shipped
checkpoints."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from core_model.shipped import SHIPPED_CHECKPOINTS, resource_path
from core_model.tasks import TASK_NAMES, default_spec, task_named
from visualizer.cli import main

KEYS = ["name", "description", "source_tokens", "target_tokens", "min_len", "max_len", "training", "shipped"]


@pytest.fixture(scope="module")
def listing() -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["tasks", "--json"]) == 0
    assert out.getvalue().count("\n") == 1  # one line
    return json.loads(out.getvalue())


def test_json_lists_every_registry_task_in_order_with_its_fields(listing):
    assert list(listing) == ["tasks"]
    assert [row["name"] for row in listing["tasks"]] == list(TASK_NAMES)
    for row in listing["tasks"]:
        assert list(row) == KEYS
        task, spec = task_named(row["name"]), default_spec(row["name"])
        assert row["description"] == task.description
        assert "".join(row["source_tokens"]) == task.source_alphabet(spec.n_symbols)
        assert "".join(row["target_tokens"]) == task.target_alphabet(spec.n_symbols)
        assert (row["min_len"], row["max_len"]) == task.training_lengths
    rows = {row["name"]: row for row in listing["tasks"]}
    assert "+" in rows["addition"]["source_tokens"] and "+" not in rows["addition"]["target_tokens"]
    assert rows["dyck_depth"]["source_tokens"] == ["(", ")"]


def test_json_gives_the_steps_rate_and_batch_each_task_trains_with_by_default(listing):
    recipes = {row["name"]: row["training"] for row in listing["tasks"]}
    assert recipes["copy"] == {"steps": 300, "lr": 0.006, "batch_size": 32}  # the app's fast default
    assert recipes["recall"] == {"steps": 6000, "lr": 0.001, "batch_size": 64}  # a plateau to wait out
    for name, recipe in recipes.items():
        changed = task_named(name).training
        assert recipe["steps"] == (changed.steps or 300) and recipe["lr"] == (changed.lr or 0.006)


def test_json_names_the_shipped_checkpoints_of_each_task(listing):
    shipped = {row["name"]: row["shipped"] for row in listing["tasks"]}
    assert shipped["copy"] == ["copy_rope.pt", "copy_sinusoidal.pt"]
    assert shipped["sort"] == ["sort_rope.pt", "sort_sinusoidal.pt"]
    assert sorted(name for files in shipped.values() for name in files) == sorted(SHIPPED_CHECKPOINTS)
    assert all(resource_path(name).is_file() for files in shipped.values() for name in files)
    assert shipped["addition"] == ["addition_rope.pt"] and shipped["recall"] == ["recall_rope.pt"]
    assert all(files for files in shipped.values())  # every task of the library ships a model


def test_without_json_it_prints_a_table_a_task_a_line(capsys):
    assert main(["tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["task", "source", "target", "lengths", "recipe", "shipped", "description"]
    assert [line.split()[0] for line in lines[1:]] == list(TASK_NAMES)
    addition = next(line for line in lines if line.startswith("addition "))
    assert "0123456789+" in addition and " 3-15 " in addition and task_named("addition").description in addition
    copy = next(line for line in lines if line.startswith("copy "))
    assert "copy_rope.pt copy_sinusoidal.pt" in copy and " 300 steps at 0.006 " in copy
    assert " 3000 steps at 0.002 " in next(line for line in lines if line.startswith("sort "))


def test_the_table_columns_line_up(capsys):
    assert main(["tasks", "--seed", "3", "--threads", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    column = lines[0].index("description")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines)


def test_the_top_level_help_says_tasks_prints_a_table(capsys):
    from visualizer.__main__ import main as entry_main

    assert entry_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "  tasks " in out and "(tasks: a table unless --json)" in out
