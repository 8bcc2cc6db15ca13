"""Every verb on every task of the registry: a tiny untrained model of each task runs each verb to one JSON line that
names the task's own tokens; a source a task's grammar refuses is one line naming the rule, exit 2, in every verb
that reads a source."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TASK_NAMES, TaskSpec, default_spec
from visualizer.cli import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


@dataclass(frozen=True)
class Case:
    """One task's tiny checkpoint and the sources the verbs are given."""

    task: TaskSpec
    path: Path
    clean: str  # a valid source of a short length the task takes
    corrupt: str  # a valid source of the same length whose expected output differs

    @property
    def name(self) -> str:
        return self.task.task


def _corrupted(task: TaskSpec, clean: str) -> str:
    """A valid source as long as `clean` with another expected output: a hard case, else a random draw."""
    definition, n = task.definition, task.n_symbols
    rng = random.Random(0)
    candidates = [*definition.adversarial(n, len(clean)), *(definition.draw(rng, n, len(clean)) for _ in range(200))]
    want = definition.target(clean, n)
    return next(s for s in candidates if definition.problem(s, n) is None and definition.target(s, n) != want)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict[str, Case]:
    """A tiny untrained model per task, with the vocabulary the task needs, saved with its task (anchored sources,
    a quarter of them hard cases, the task's own size and training lengths)."""
    folder = tmp_path_factory.mktemp("every_task")
    out = {}
    for name in TASK_NAMES:
        task = default_spec(name, anchored=True, runs=0.25)
        config = ModelConfig(
            vocab_size=max(ModelConfig().vocab_size, task.vocab_size),
            d_model=16,
            n_heads=2,
            d_ff=32,
            n_encoder_layers=1,
            n_decoder_layers=1,
            max_len=24,
        )
        path = save_checkpoint(folder / f"{name}.pt", build_model(config, seed=0), extra={"task": asdict(task)})
        length = next(n for n in task.lengths() if n >= 4)
        clean = task.definition.example(task.n_symbols, length)
        out[name] = Case(task, path, clean, _corrupted(task, clean))
    return out


def _json(capsys, args: list[str]) -> dict[str, Any]:
    """Run a verb; it must exit 0 and print exactly one line of JSON."""
    status = main(args)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out.count("\n") == 1, captured.out
    return json.loads(captured.out)


def _anchored(source: str) -> list[str]:
    return ["<bos>", *source, "<eos>"]


# verb -> (its arguments for a case and a scratch folder, what its JSON must hold)
Args = Callable[[Case, Path], list[str]]
Check = Callable[[Case, dict[str, Any]], None]


def _eval_check(case: Case, data: dict[str, Any]) -> None:
    assert data["task"] == case.name and data["lengths"] == [n for n in case.task.lengths() if n <= 22]
    assert set(data["per_length"]) == {str(n) for n in data["lengths"]} and "repeated_per_length" in data


def _tokens_check(key: str, pads: int = 0) -> Check:
    def check(case: Case, data: dict[str, Any]) -> None:
        assert data[key][: len(case.clean) + 2 + pads] == _anchored(case.clean) + ["<pad>"] * pads
        assert data.get("task", case.name) == case.name

    return check


def _train_args(case: Case, folder: Path) -> list[str]:
    lengths = case.task.lengths()[:2]  # the two shortest: the final evaluation stays quick
    shortest, longest = str(lengths[0]), str(lengths[-1])
    return ["train", "--task", case.name, "--steps", "2", "--batch-size", "4", "--eval-n", "1"] + [
        *("--min-len", shortest, "--max-len", longest, "--out", str(folder / "t.pt"), "--device", "cpu")
    ]


def _train_check(case: Case, data: dict[str, Any]) -> None:
    assert data["task"]["task"] == case.name and data["step"] == 2
    assert set(data["per_length"]) == {str(n) for n in case.task.lengths()[:2]}
    assert data["repeated"]["sources"] > 0  # the task's valid hard sources of those lengths


def _decode_check(case: Case, data: dict[str, Any]) -> None:
    definition, n = case.task.definition, case.task.n_symbols
    assert data["source"] == list(case.clean) and data["task"] == case.name
    assert data["expected"] == [*definition.target(case.clean, n), "<eos>"]
    assert set(definition.source_alphabet(n)) | set(definition.target_alphabet(n)) <= set(data["choices"])


def _heads_check(case: Case, data: dict[str, Any]) -> None:
    assert data["sequences"]["task"] == case.name
    cross = [h["alignment"] for h in data["heads"] if h["kind"] == "cross"]
    assert cross and all(0.0 <= a <= 1.0 + 1e-9 for a in cross)


def _patch_check(case: Case, data: dict[str, Any]) -> None:
    assert data["clean_tokens"] == _anchored(case.clean) and data["corrupt_tokens"] == _anchored(case.corrupt)
    assert data["task"] == case.name and data["heads"]


def _circuits_check(case: Case, data: dict[str, Any]) -> None:
    alphabet = case.task.definition.source_alphabet(case.task.n_symbols)
    assert set(alphabet) <= set(data["tokens"]) and data["task"] == case.name
    assert data["run"]["source_tokens"][: len(case.clean) + 2] == _anchored(case.clean)


def _tasks_check(case: Case, data: dict[str, Any]) -> None:
    row = next(row for row in data["tasks"] if row["name"] == case.name)
    assert "".join(row["source_tokens"]) == case.task.definition.source_alphabet(case.task.n_symbols)


VERB_CASES: dict[str, tuple[Args, Check]] = {
    "train": (_train_args, _train_check),
    "eval": (lambda c, _f: ["eval", str(c.path), "--n", "2", "--repeated", "--device", "cpu"], _eval_check),
    "views": (lambda c, _f: ["views", str(c.path), "--source", c.clean], _tokens_check("source_tokens", 2)),
    "decode": (lambda c, _f: ["decode", str(c.path), c.clean, "--beam", "2", "--device", "cpu"], _decode_check),
    "heads": (lambda c, _f: ["heads", str(c.path), "--n", "3"], _heads_check),
    "cell": (
        lambda c, _f: ["cell", str(c.path), c.clean, "--kind", "cross", "--query", "0", "--key", "1"],
        _tokens_check("source_tokens", 2),
    ),
    "patch": (lambda c, _f: ["patch", str(c.path), "--clean", c.clean, "--corrupt", c.corrupt], _patch_check),
    "lens": (
        lambda c, _f: ["lens", str(c.path), "--source", c.clean, "--device", "cpu"],
        _tokens_check("source_tokens"),
    ),
    "attribute": (
        lambda c, _f: ["attribute", str(c.path), "--source", c.clean, "--ig-steps", "2", "--device", "cpu"],
        _tokens_check("source_tokens"),
    ),
    "circuits": (
        lambda c, _f: ["circuits", str(c.path), "--source", c.clean, "--baseline-samples", "2"],
        _circuits_check,
    ),
    "page": (
        lambda c, f: ["page", str(c.path), "--source", c.clean, "--out", str(f / "p.html")],
        _tokens_check("source_tokens", 2),
    ),
    "tasks": (lambda _c, _f: ["tasks", "--json"], _tasks_check),
}


def test_every_verb_is_driven_here():
    from visualizer.cli import VERBS

    assert set(VERB_CASES) == set(VERBS)


@pytest.mark.parametrize("task_name", TASK_NAMES)
@pytest.mark.parametrize("verb", list(VERB_CASES))
def test_every_verb_runs_on_every_task(cases, verb, task_name, tmp_path, capsys):
    case = cases[task_name]
    args, check = VERB_CASES[verb]
    check(case, _json(capsys, args(case, tmp_path)))


# Sources each task with a grammar refuses, each with words of the rule its refusal must name.
BAD_SOURCES = [
    ("addition", "12+3", "an addition needs one '+' between two numbers of equal length: 2m + 1 symbols"),
    ("addition", "1+234", "an addition needs one '+' between two numbers of equal length"),
    ("recall", "a1a2?a", "the keys of a recall must be distinct"),
    ("recall", "a1?b", "the key after '?' must be one of the pairs' keys"),
    ("dyck_depth", "())(", "brackets must balance: the ')' at position 2 closes nothing"),
    ("dyck_depth", "(()", "balanced brackets come in pairs"),
    ("copy_memory", "12_3", "copy_memory needs symbols first, then a run of at least one blank"),
    ("histogram", "ab1", "symbol '1' at position 2 is not one histogram reads"),  # in its vocabulary, not its sources
    ("interleave", "123", "interleave needs two halves of equal length"),
]


def _valid_like(case: Case, bad: str) -> str:
    """A valid source as long as `bad` (where the task takes that length), for the other side of a patch."""
    definition, n = case.task.definition, case.task.n_symbols
    return definition.example(n, len(bad)) if definition.length_problem(len(bad), n) is None else bad


SOURCE_VERBS: dict[str, Callable[[Case, str, Path], list[str]]] = {
    "views": lambda c, s, _f: ["views", str(c.path), "--source", s],
    "decode": lambda c, s, _f: ["decode", str(c.path), s],
    "cell": lambda c, s, _f: ["cell", str(c.path), s, "--kind", "cross", "--query", "0", "--key", "0"],
    "patch --clean": lambda c, s, _f: ["patch", str(c.path), "--clean", s, "--corrupt", _valid_like(c, s)],
    "patch --corrupt": lambda c, s, _f: ["patch", str(c.path), "--clean", _valid_like(c, s), "--corrupt", s],
    "lens": lambda c, s, _f: ["lens", str(c.path), "--source", s],
    "attribute": lambda c, s, _f: ["attribute", str(c.path), "--source", s],
    "circuits": lambda c, s, _f: ["circuits", str(c.path), "--source", s],
    "page": lambda c, s, f: ["page", str(c.path), "--source", s, "--out", str(f / "p.html")],
}


@pytest.mark.parametrize(("task_name", "source", "rule"), BAD_SOURCES)
@pytest.mark.parametrize("verb", list(SOURCE_VERBS))
def test_a_source_the_task_refuses_is_one_line_naming_the_rule(cases, verb, task_name, source, rule, tmp_path, capsys):
    case = cases[task_name]
    status = main(SOURCE_VERBS[verb](case, source, tmp_path))
    captured = capsys.readouterr()
    assert status == 2 and captured.out == "", captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("attention-playground: error: ")
    assert rule in captured.err and "Traceback" not in captured.err, captured.err
    if verb.startswith("patch") and _valid_like(case, source) != source:  # the option of the bad side is named
        assert verb.split()[1] in captured.err
    assert not (tmp_path / "p.html").exists()


def test_another_task_asked_of_a_checkpoint_takes_its_own_size_and_lengths(cases, capsys):
    """--task builds the chosen task's own TaskSpec (its size, its training lengths within the model's positions),
    read as the checkpoint reads (anchored), not the checkpoint's task renamed."""
    data = _json(capsys, ["eval", str(cases["addition"].path), "--task", "running_sum", "--n", "1", "--device", "cpu"])
    assert data["task"] == "running_sum" and data["lengths"] == list(range(1, 17))  # running_sum's 1-16, not 3-15
    data = _json(capsys, ["heads", str(cases["recall"].path), "--task", "dyck_depth", "--n", "2"])
    assert data["sequences"] | {"description": None} == {
        **{"n": 2, "seed": 1234, "task": "dyck_depth", "min_len": 2, "max_len": 16, "runs": 0.25, "anchored": True},
        "description": None,
    }


def test_a_task_whose_vocabulary_the_model_lacks_is_refused_in_one_line(cases, capsys):
    status = main(["heads", str(cases["copy"].path), "--task", "recall", "--n", "2"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "--task recall: the task needs vocab_size >= 22" in err and "the model has 13" in err
