"""Learning-rate schedules, the loss, the Trainer's metrics, divergence handling and the default recipe."""

from __future__ import annotations

import copy
import logging
import math
import time

import pytest
import torch

from core_model import PAD, ModelConfig, build_model
from core_model.device import pick_device
from core_model.tasks import TaskSpec
from core_model.training import (
    StepMetrics,
    TrainConfig,
    Trainer,
    TrainingDiverged,
    evaluate,
    learning_rate,
    sequence_loss,
    uses_autocast,
)

log = logging.getLogger(__name__)
SMALL_TASK = TaskSpec("copy", n_symbols=5, min_len=3, max_len=5)


def small_trainer(seed: int = 0, **train) -> Trainer:
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    options = {"batch_size": 8, "steps": 5, "seed": seed} | train
    return Trainer(build_model(config, seed=seed), SMALL_TASK, TrainConfig(**options))


# paper §5.3 with d_model 512, warmup 4000; values worked out independently (decimal arithmetic)
NOAM = [
    (1, 1.74692810742171070e-07),
    (100, 1.74692810742171070e-05),
    (3999, 6.98596550157942109e-04),
    (4000, 6.98771242968684280e-04),
    (4001, 6.98683912937352979e-04),
    (100000, 1.39754248593736856e-04),
]


@pytest.mark.parametrize(("step", "expected"), NOAM)
def test_noam_schedule_values(step, expected):
    config = TrainConfig(schedule="noam", warmup_steps=4000, lr=0.5)  # lr is ignored by noam
    assert learning_rate(config, step, 512) == pytest.approx(expected, rel=1e-12, abs=0)
    scaled = TrainConfig(schedule="noam", warmup_steps=4000, noam_factor=2.0)
    assert learning_rate(scaled, step, 512) == pytest.approx(2 * expected, rel=1e-12, abs=0)


def test_noam_formula_and_step_zero():
    config = TrainConfig(schedule="noam", warmup_steps=10)
    for step in range(1, 40):
        formula = 64**-0.5 * min(step**-0.5, step * 10**-1.5)
        assert learning_rate(config, step, 64) == pytest.approx(formula, rel=1e-15)
    assert learning_rate(config, 0, 64) == learning_rate(config, 1, 64)


def test_constant_and_warmup_cosine():
    assert learning_rate(TrainConfig(schedule="constant", lr=0.02), 77, 64) == 0.02
    config = TrainConfig(lr=1e-3, warmup_steps=10, steps=110)
    assert learning_rate(config, 5, 64) == pytest.approx(5e-4, rel=1e-15)
    assert learning_rate(config, 10, 64) == pytest.approx(1e-3, rel=1e-15)
    assert learning_rate(config, 60, 64) == pytest.approx(1e-3 * (0.1 + 0.45), rel=1e-12)  # half way down
    assert learning_rate(config, 110, 64) == pytest.approx(1e-4, rel=1e-12)
    assert learning_rate(config, 500, 64) == pytest.approx(1e-4, rel=1e-12)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("batch_size", 0),
        ("steps", 0),
        ("warmup_steps", -1),
        ("seed", -1),
        ("lr", 0.0),
        ("lr", 11.0),
        ("noam_factor", 0.0),
        ("label_smoothing", 1.0),
        ("weight_decay", 2.0),
        ("schedule", "linear"),
        ("grad_clip", 0.0),
    ],
)
def test_train_config_rejects(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{field: value})


def test_noam_needs_warmup():
    with pytest.raises(ValueError, match="warmup_steps"):
        TrainConfig(schedule="noam", warmup_steps=0)


def test_sequence_loss_with_label_smoothing_matches_formula():
    gen = torch.Generator().manual_seed(0)
    log_probs = torch.log_softmax(torch.randn(3, 4, 9, generator=gen, dtype=torch.float64), -1)
    labels = torch.tensor([[3, 4, 2, PAD], [5, 2, PAD, PAD], [6, 7, 8, 2]])
    keep = labels != PAD
    nll = -log_probs.gather(-1, labels[..., None]).squeeze(-1)
    assert abs(float(sequence_loss(log_probs, labels)) - float(nll[keep].mean())) <= 1e-12
    eps = 0.1
    smoothed = ((1 - eps) * nll - eps * log_probs.mean(-1))[keep].mean()
    loss = sequence_loss(log_probs, labels, eps)
    assert abs(float(loss) - float(smoothed)) <= 1e-12
    assert abs(float(loss) - float(nll[keep].mean())) > 1e-3


def test_label_smoothing_changes_training_loss():
    plain = next(small_trainer().train_steps(1))
    smooth = next(small_trainer(label_smoothing=0.1).train_steps(1))
    assert abs(plain.loss - smooth.loss) > 1e-3


def test_train_steps_yields_metrics():
    trainer = small_trainer(steps=6)
    first = list(trainer.train_steps(2))
    rest = list(trainer.train_steps())  # resumes up to config.steps
    metrics = first + rest
    assert [m.step for m in metrics] == [1, 2, 3, 4, 5, 6] and trainer.step == 6
    assert trainer.history == metrics
    for m in metrics:
        assert isinstance(m, StepMetrics)
        values = (m.loss, m.token_accuracy, m.lr, m.tokens_per_s, m.grad_norm, m.elapsed_s)
        assert all(math.isfinite(v) for v in values)
        assert 0 <= m.token_accuracy <= 1 and m.tokens_per_s > 0 and m.tokens > 0
        assert m.lr == learning_rate(trainer.config, m.step, 16)
    assert [m.elapsed_s for m in metrics] == sorted(m.elapsed_s for m in metrics)
    assert list(trainer.train_steps()) == []


def test_bf16_autocast_only_on_cuda():
    assert uses_autocast(TrainConfig(), torch.device("cuda"))
    assert not uses_autocast(TrainConfig(mixed_precision=False), torch.device("cuda"))
    assert not uses_autocast(TrainConfig(), torch.device("cpu"))
    assert not uses_autocast(TrainConfig(), torch.device("mps"))


def test_cpu_training_step_computes_in_float32():
    """mixed_precision is on by default, yet a CPU step must not fall into bf16 (its maps are fp32 too)."""
    trainer = small_trainer(steps=1)
    dtypes = []
    hooks = [
        m.register_forward_hook(lambda _m, _i, out: dtypes.append(out.dtype))
        for m in trainer.model.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    try:
        next(trainer.train_steps(1))
    finally:
        for hook in hooks:
            hook.remove()
    assert dtypes and set(dtypes) == {torch.float32}


def test_same_seed_same_run():
    a, b = small_trainer(seed=3), small_trainer(seed=3)
    run_a, run_b = list(a.train_steps()), list(b.train_steps())
    assert [(m.loss, m.token_accuracy, m.grad_norm) for m in run_a] == [
        (m.loss, m.token_accuracy, m.grad_norm) for m in run_b
    ]
    for (name, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(x, y), name
    other = list(small_trainer(seed=4).train_steps())
    assert [m.loss for m in other] != [m.loss for m in run_a]


def snapshot(trainer: Trainer) -> tuple[dict, dict]:
    return (
        {k: v.clone() for k, v in trainer.model.state_dict().items()},
        copy.deepcopy(trainer.optimizer.state_dict()),
    )


def assert_unchanged(trainer: Trainer, before: tuple[dict, dict]) -> None:
    weights, optimizer = before
    for key, value in trainer.model.state_dict().items():
        torch.testing.assert_close(value, weights[key], rtol=0, atol=0, equal_nan=True, msg=key)
    now = trainer.optimizer.state_dict()["state"]
    for index, state in optimizer["state"].items():
        for name, value in state.items():
            torch.testing.assert_close(now[index][name], value, rtol=0, atol=0, msg=f"{index}.{name}")


def test_nan_loss_raises_and_keeps_weights():
    trainer = small_trainer()
    next(trainer.train_steps(1))  # the optimizer has moments to lose
    with torch.no_grad():
        trainer.model.generator.bias[4] = float("nan")  # every log-prob, hence the loss, becomes NaN
    before = snapshot(trainer)
    with pytest.raises(TrainingDiverged, match="loss became nan at step 2"):
        next(trainer.train_steps(1))
    assert_unchanged(trainer, before)
    assert trainer.step == 1 and len(trainer.history) == 1


def test_nan_gradient_raises_keeps_weights_and_training_can_go_on():
    trainer = small_trainer()
    next(trainer.train_steps(1))
    weight = trainer.model.encoder_layers[0].ff.net[0].weight
    handle = weight.register_hook(lambda grad: torch.full_like(grad, float("nan")))
    before = snapshot(trainer)
    with pytest.raises(TrainingDiverged, match="gradient norm became nan at step 2"):
        next(trainer.train_steps(1))
    assert_unchanged(trainer, before)
    handle.remove()
    assert next(trainer.train_steps(1)).step == 2


def test_trainer_refuses_a_task_too_big_for_the_vocabulary():
    model = build_model(ModelConfig(d_model=16, n_heads=2))
    with pytest.raises(ValueError, match="vocab_size >= 23"):
        Trainer(model, TaskSpec(n_symbols=20), TrainConfig())


def test_evaluate_untrained_model():
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=0).train()
    result = evaluate(model, SMALL_TASK, n=30, batch_size=16)
    assert result.n == 30 and 0 <= result.exact_match <= 1 and 0 <= result.token_accuracy <= 1
    assert math.isfinite(result.loss) and result.loss > 0
    assert model.training  # evaluate puts the mode back
    assert evaluate(model, SMALL_TASK, n=30, batch_size=16) == result  # its own seed: same sequences
    with pytest.raises(ValueError, match="n must be"):
        evaluate(model, SMALL_TASK, n=0)


@pytest.mark.slow
@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_default_recipe_learns_to_copy(positional):
    """The defaults (ModelConfig(), TrainConfig(), TaskSpec('copy'), seed 0) must reach >= 99% exact match."""
    config = TrainConfig()
    start = time.perf_counter()
    trainer = Trainer(
        build_model(ModelConfig(positional=positional), seed=config.seed),
        TaskSpec("copy"),
        config,
        device=pick_device(config.device),
    )
    for metrics in trainer.train_steps():
        if metrics.step % 50 == 0 and trainer.evaluate(n=1000, length=10).exact_match >= 0.99:
            break  # converged: no need to run every step
    result = trainer.evaluate(n=1000, length=10)
    log.info(
        "%s: %d steps, %.1f s, exact match %.4f",
        positional,
        trainer.step,
        time.perf_counter() - start,
        result.exact_match,
    )
    assert result.n == 1000
    assert result.exact_match >= 0.99, f"{positional}: exact match {result.exact_match} after {trainer.step} steps"
