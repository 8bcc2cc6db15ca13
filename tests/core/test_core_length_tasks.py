"""The length evaluation on every task: only the lengths a task takes are swept, each source is decoded for its task's
longest target plus <eos>, and the fixed source sets (repeated, exhaustive, the lab's probe) hold only sources the
task takes. Figures are checked against the test's own greedy loop on targets of varying length."""

from __future__ import annotations

import itertools

import pytest
import torch
from task_references import REFERENCES

from core_model import ModelConfig, build_model
from core_model.length_curves import length_curve
from core_model.length_eval import (
    evaluate_lengths,
    exhaustive_sources,
    greedy_outputs,
    repeated_symbol_sources,
    task_lengths,
)
from core_model.length_probe import probe_source, run_probe
from core_model.tasks import TASK_NAMES, TaskSpec, default_spec, make_batch
from core_model.vocab import BOS, EOS, N_SPECIALS, PAD

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def _tiny(task: TaskSpec, seed: int = 0) -> torch.nn.Module:
    config = ModelConfig(vocab_size=max(8, task.vocab_size), d_model=16, n_heads=2, d_ff=32, max_len=24)
    return build_model(config, seed=seed).eval()


def _never_ending(task: TaskSpec) -> torch.nn.Module:
    """A tiny model whose output layer never picks <eos>: every decoding runs to its budget."""
    model = _tiny(task)
    with torch.no_grad():
        model.generator.bias[EOS] = -1e4
    return model


def _own_greedy(model, src: list[int], steps: int, n_tokens: int) -> list[int]:
    """Argmax over <eos> and the task's symbols, recomputing the whole decoder each step; stops after <eos>."""
    out = [BOS]
    with torch.no_grad():
        for _ in range(steps):
            scores = model(torch.tensor([src]), torch.tensor([out])).log_probs[0, -1].clone()
            scores[[PAD, BOS]] = float("-inf")
            scores[n_tokens:] = float("-inf")
            out.append(int(scores.argmax()))
            if out[-1] == EOS:
                break
    return out[1:]


def _own_figures(model, task: TaskSpec, length: int, n: int, seed: int) -> tuple[float, float]:
    """Exact match and token accuracy by a loop: each row's expected output and <eos>, nothing after it."""
    batch = make_batch(task, n, torch.Generator().manual_seed(seed), length)
    longest = task.definition.longest_target(length, task.n_symbols)
    exact = correct = labels = 0
    for src, want in zip(batch.src.tolist(), batch.tgt_out.tolist()):
        want = want[: want.index(EOS) + 1]
        got = _own_greedy(model, src, longest + 1, len(task.vocabulary))
        got = (got + [PAD] * len(want))[: len(want)]
        exact += got == want
        correct += sum(g == w for g, w in zip(got, want))
        labels += len(want)
    return exact / n, correct / labels


SHORT = {"addition": (3, 7, 3), "copy_memory": (2, 6, 4), "dedupe": (1, 6, 4), "recall": (4, 8, 4)}


@pytest.fixture(scope="module")
def trained() -> dict[str, tuple[torch.nn.Module, TaskSpec]]:
    """A tiny model per task trained briefly on short sources: right on some, wrong on longer ones."""
    from core_model.training import TrainConfig, Trainer

    torch.set_num_threads(1)
    out = {}
    for name, (low, high, n_symbols) in SHORT.items():
        task = default_spec(name, anchored=True, min_len=low, max_len=high, n_symbols=n_symbols)
        model = _tiny(task, seed=1)
        for _ in Trainer(model, task, TrainConfig(steps=120, batch_size=32, lr=5e-3, device="cpu")).train_steps():
            pass
        out[name] = (model.eval(), task)
    return out


@pytest.mark.parametrize("task_name", list(SHORT))
def test_only_the_lengths_a_task_takes_are_swept_and_the_figures_equal_an_own_loop(trained, task_name):
    """Addition and recall take every other length; copy_memory and dedupe have targets of many lengths at one
    source length, so the batch's labels are padded and only the real ones count."""
    model, task = trained[task_name]
    asked = range(1, 9)
    sweep = evaluate_lengths(model, task, asked, n=12, seed=4, batch_size=5)
    assert sweep.lengths == tuple(n for n in asked if task.definition.length_problem(n, task.n_symbols) is None)
    assert sweep.lengths == task_lengths(task, asked) and sweep.lengths
    for length, result in sweep.per_length.items():
        exact, accuracy = _own_figures(model, task, length, 12, 4)
        assert result.exact_match == exact and result.token_accuracy == pytest.approx(accuracy, abs=1e-12)
    assert 0 < sum(r.exact_match for r in sweep.per_length.values()) < len(sweep.lengths)  # informative figures
    curve = length_curve(model, task, asked, n=12, seed=4)
    assert curve == tuple(sweep.per_length.values())


@pytest.mark.parametrize("task_name", TASK_NAMES)
def test_the_fixed_source_sets_hold_only_sources_the_task_takes(task_name):
    task = default_spec(task_name)
    definition, n, vocab = task.definition, task.n_symbols, task.vocabulary
    lengths = list(range(1, 9))
    repeated = repeated_symbol_sources(task, lengths)
    assert repeated and all(definition.problem(vocab.decode(s), n) is None for s in repeated)
    assert {len(s) for s in repeated} == set(task_lengths(task, lengths))
    for length in task_lengths(task, lengths):
        alike = [
            vocab.encode(c * length) for c in definition.source_alphabet(n) if definition.problem(c * length, n) is None
        ]
        of_length = [s for s in repeated if len(s) == length]
        assert of_length == (alike or [vocab.encode(s) for s in dict.fromkeys(definition.adversarial(n, length))])
    reference = REFERENCES[task_name]
    every = exhaustive_sources(task, 4)
    own = [
        vocab.encode("".join(p))
        for size in range(1, 5)
        for p in itertools.product(reference.alphabet(n), repeat=size)
        if reference.valid("".join(p), n)
    ]
    assert sorted(every) == sorted(own) and len(every) == len({tuple(s) for s in every})


@pytest.mark.parametrize("task_name", ["copy", "reverse", "sort"])
def test_copy_reverse_and_sort_keep_every_one_symbol_source_and_every_string(task_name):
    task = TaskSpec(task_name, n_symbols=3)
    assert repeated_symbol_sources(task, [1, 3]) == [[3], [4], [5], [3, 3, 3], [4, 4, 4], [5, 5, 5]]
    own = [list(p) for size in (1, 2, 3) for p in itertools.product([3, 4, 5], repeat=size)]
    assert exhaustive_sources(task, 3) == own


@pytest.mark.parametrize("task_name", ["addition", "copy_memory", "recall", "histogram", "dyck_depth", "sort"])
def test_a_source_is_decoded_for_its_tasks_longest_target_and_eos(task_name):
    task = default_spec(task_name)
    model = _never_ending(task)
    sources = repeated_symbol_sources(task, task.lengths()[:3])
    for source, output in zip(sources, greedy_outputs(model, task, sources)):
        steps = task.definition.longest_target(len(source), task.n_symbols) + 1
        assert len(output) == steps + 1 and output[-1] == PAD  # no <eos> within the budget: marked never right


@pytest.mark.parametrize("kind", ["random", "repeated"])
@pytest.mark.parametrize("task_name", TASK_NAMES)
def test_the_lab_probe_draws_a_valid_source_of_the_task(task_name, kind):
    task = default_spec(task_name, anchored=True)
    definition, n = task.definition, task.n_symbols
    for length in task.lengths()[:4]:
        source = probe_source(task, length, seed=3, kind=kind)
        assert len(source) == length and definition.problem(task.vocabulary.decode(source), n) is None
        assert source == probe_source(task, length, seed=3, kind=kind)
        if kind == "random":  # the first row the length evaluation draws with that seed
            batch = make_batch(task, 1, torch.Generator().manual_seed(3), length)
            assert source == [t for t in batch.src[0].tolist() if t >= N_SPECIALS]
        else:
            assert source == repeated_symbol_sources(task, [length])[0]
    probe = run_probe(_never_ending(task), task, probe_source(task, task.lengths()[0], seed=3, kind=kind))
    assert len(probe.output) == definition.longest_target(task.lengths()[0], n) + 1 and not probe.correct


def test_the_probe_of_copy_is_the_draw_it_always_was():
    task = TaskSpec("copy", n_symbols=5, min_len=1, max_len=4)
    draw = torch.randint(N_SPECIALS, N_SPECIALS + 5, (6,), generator=torch.Generator().manual_seed(2))
    assert probe_source(task, 6, seed=2) == draw.tolist()
    assert probe_source(task, 6, seed=2, kind="repeated") == [N_SPECIALS] * 6


def test_a_length_the_task_does_not_take_has_no_probe():
    with pytest.raises(ValueError, match="an addition needs one '\\+' between two numbers of equal length"):
        probe_source(default_spec("addition"), 4, seed=0)
