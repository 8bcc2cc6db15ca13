"""The Trainer form shows Adam's beta1 of the recipe it was filled from and trains with the one typed there."""

from __future__ import annotations

from PySide6.QtCore import Qt

from core_model.config import ModelConfig
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig
from visualizer.widgets.training.form import TrainerForm


def test_the_form_shows_a_recipes_beta1_and_trains_with_a_typed_one(qtbot):
    form = TrainerForm()
    qtbot.addWidget(form)
    form.show()
    stored = TrainConfig(lr=2e-3, adam_beta1=0.85, seed=3)
    form.set_values(TaskSpec(), stored, ModelConfig(), "cpu")
    assert form.beta1_spin.text() == "0.850"
    assert form.train_config() == TrainConfig(**{**stored.to_dict(), "device": "cpu"})
    form.beta1_spin.lineEdit().selectAll()
    qtbot.keyClicks(form.beta1_spin, "0.7")
    qtbot.keyClick(form.beta1_spin, Qt.Key.Key_Tab)
    assert form.train_config() == TrainConfig(**{**stored.to_dict(), "adam_beta1": 0.7, "device": "cpu"})
    assert "0.9" in form.beta1_spin.toolTip()  # the paper's value, named where the field is
