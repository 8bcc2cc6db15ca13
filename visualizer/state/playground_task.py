"""The task a person picks in the Playground against the model it runs on: whether the model can read that task's
sources, the task's own recipe when it cannot, the source to start from, and the one line that says where the
trained model for it stands. No Qt: the session, the architecture controller and the Trainer ask the same questions.
"""

from __future__ import annotations

from core_model.recipe import recipe_task
from core_model.tasks import TaskSpec, task_named

RECIPE_READY = "train one in the Trainer tab (its recipe is ready)"


def task_on_model(model_task: TaskSpec, picked: str, vocab_size: int) -> TaskSpec | None:
    """The picked task at the model's size, when the model can read its sources; None when it cannot.

    A model reads another task when that task takes its number of symbols and every symbol both vocabularies hold
    keeps its id (copy's digits are reverse's and rotate1's), and the task's vocabulary fits the model's. A task
    of other symbols (histogram's letters, dyck_depth's brackets) or of more (addition's '+' past a digit model's
    ids) needs a model of its own.
    """
    if picked == model_task.task:
        return model_task
    definition = task_named(picked)
    m = model_task
    for low, high in ((m.min_len, m.max_len), definition.training_lengths):
        try:
            spec = TaskSpec(picked, m.n_symbols, low, high, runs=m.runs, anchored=m.anchored)
        except ValueError:  # a size or lengths the task does not take
            continue
        ours, theirs = m.vocabulary.symbols, spec.vocabulary.symbols
        shared = ours.startswith(theirs) or theirs.startswith(ours)
        return spec if shared and spec.vocab_size <= vocab_size else None
    return None


def fresh_task(picked: str, positional: str, model_max_len: int) -> TaskSpec | None:
    """The picked task's own recipe on a model of these positions (what a new model for it trains on), or None when
    no length the task takes fits them."""
    try:
        spec = recipe_task(picked, positional, model_max_len=model_max_len)
        spec.check_fits(model_max_len)
    except ValueError:
        return None
    return spec


def example_source(spec: TaskSpec, limit: int) -> str:
    """The task's example at the longest of its lengths that fits `limit` symbols ("" when none does)."""
    definition, n = spec.definition, spec.n_symbols
    fitting = [length for length in spec.lengths() if length <= limit]
    if not fitting:
        fitting = list(definition.valid_lengths(1, limit, n))
    return definition.example(n, fitting[-1]) if fitting else ""


def task_note(picked: str, model_task: str, readable: bool, untrained: bool, shipped: bool) -> str:
    """Where the model for the picked task stands, in one or two short lines ("" when the model is the task's own
    trained one, or a shipped one is on its way).

    readable: the model can read the picked task's sources; untrained: it was never trained; shipped: a trained
    model for the picked task is in resources/.
    """
    none_ships = f"No trained model ships for {picked} yet"
    if not readable:
        if shipped:
            return (
                f"This {model_task} model cannot read {picked}'s symbols: the shipped {picked} model takes its place "
                f"when the architecture matches it; else {RECIPE_READY}"
            )
        return f"{none_ships}, and this {model_task} model cannot read its symbols: {RECIPE_READY}"
    if picked != model_task:
        if shipped:
            return f"The model shown was trained on {model_task}: these are its answers for {picked}"
        return f"{none_ships}: the maps show this {model_task} model on it; {RECIPE_READY}"
    if untrained and not shipped:
        return f"{none_ships}: this one is untrained (its maps mean nothing); {RECIPE_READY}"
    if untrained:  # a shipped one exists for another architecture, or this one was built on purpose
        return (
            f"This {picked} model is untrained (its maps mean nothing): train it in the Trainer tab "
            "(its recipe is ready)"
        )
    return ""
