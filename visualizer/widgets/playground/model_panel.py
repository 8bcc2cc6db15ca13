"""Architecture controls and the loaded model's own configuration."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QHBoxLayout, QLabel, QPushButton, QSpinBox, QWidget

from core_model import ModelConfig
from visualizer.widgets.common.rich_text import escape

CHOICES = {
    "positional": (("Sinusoidal", "sinusoidal"), ("RoPE", "rope")),
    "norm_position": (("Post-norm (paper)", "post"), ("Pre-norm", "pre")),
    "norm": (("LayerNorm", "layernorm"), ("RMSNorm", "rmsnorm")),
    "activation": (("ReLU", "relu"), ("GELU", "gelu")),
}
TIPS = {
    "positional": "Sinusoidal: fixed sinusoids added to the embeddings (paper §3.5). RoPE: queries and keys rotated "
    "by position inside attention, so scores depend on relative position.",
    "norm_position": "Post-norm: norm(x + sublayer(x)) as in the paper. Pre-norm: x + sublayer(norm(x)).",
    "norm": "LayerNorm centres and scales; RMSNorm only scales by the root mean square.",
    "activation": "Non-linearity inside each feed-forward block.",
    "n_encoder_layers": "Encoder layers",
    "n_decoder_layers": "Decoder layers",
    "n_heads": "Attention heads per layer (d_model must be divisible by it)",
    "d_model": "Width of the model (a multiple of the number of heads)",
    "residual_scale": "A learnable scalar on every sublayer's residual branch, x + s * sublayer(x), initialised to 1 "
    '(the seeds\' "adaptive residual scaling"); the model summary lists the learned values. '
    "Adds weights: a different model, trained from scratch.",
}
SPINS = {"n_encoder_layers": (1, 8), "n_decoder_layers": (1, 8), "n_heads": (1, 16), "d_model": (8, 1024)}


class ModelPanel(QWidget):
    """Edits go out as `config_requested` on Apply; the shown values come back from the loaded model via set_config."""

    config_requested = Signal(object)  # ModelConfig: the user wants a model with this architecture

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._config, self._origin, self._parameters = ModelConfig(), "", 0
        self._scales: dict[str, float] = {}
        self._trained = "unknown"  # the trained source lengths as ModelHub.trained_lengths_text says them
        self.combos: dict[str, QComboBox] = {}
        self.spins: dict[str, QSpinBox] = {}
        form = QFormLayout(self)
        form.setContentsMargins(4, 4, 4, 4)
        titles = {
            "positional": "Positional:",
            "norm_position": "Norm position:",
            "norm": "Norm:",
            "activation": "Activation:",
        }
        for field, options in CHOICES.items():
            box = QComboBox()  # the window makes it deaf to the wheel (wheel_guard)
            for label, value in options:
                box.addItem(label, value)
            box.setToolTip(TIPS[field])
            box.currentIndexChanged.connect(self._sync_buttons)
            self.combos[field] = box
            form.addRow(titles[field], box)
        spin_titles = {
            "n_encoder_layers": "Encoder layers:",
            "n_decoder_layers": "Decoder layers:",
            "n_heads": "Heads:",
            "d_model": "d_model:",
        }
        for field, (lo, hi) in SPINS.items():
            spin = QSpinBox()
            spin.setRange(lo, hi)
            spin.setToolTip(TIPS[field] + ". Apply builds the model.")
            spin.valueChanged.connect(self._sync_buttons)
            self.spins[field] = spin
            form.addRow(spin_titles[field], spin)
        self.residual_check = QCheckBox("Learnable residual scale")
        self.residual_check.setToolTip(TIPS["residual_scale"])
        self.residual_check.toggled.connect(self._sync_buttons)
        form.addRow("Residual:", self.residual_check)
        self.error = QLabel()
        self.error.setStyleSheet("color: #c9302c;")
        self.error.setWordWrap(True)
        self.error.hide()
        form.addRow(self.error)
        self.apply_button = QPushButton("Appl&y")  # Alt+A is the Task field, Alt+I "Cross padd&ing"
        self.apply_button.setToolTip(
            "Build (or load the shipped) model for this architecture; "
            "Model > Undo architecture change brings the current one back"
        )
        self.apply_button.clicked.connect(self._emit)
        self.revert_button = QPushButton("Revert")  # no mnemonic: R, E, V, T all answer elsewhere
        self.revert_button.setToolTip("Show the loaded model's architecture again")
        self.revert_button.clicked.connect(
            lambda: self.set_config(self._config, self._origin, self._parameters, self._scales)
        )
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.apply_button)
        form.addRow(buttons)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.summary)

    def requested_config(self) -> ModelConfig:
        """The config the controls describe (may raise ValueError)."""
        values = {f: box.currentData() for f, box in self.combos.items()}
        values.update({f: spin.value() for f, spin in self.spins.items()})
        values["residual_scale"] = self.residual_check.isChecked()
        return replace(self._config, **values)

    def _sync_buttons(self, *_args) -> None:
        """Apply and Revert are enabled only while the controls differ from the loaded model."""
        try:
            differs = self.requested_config() != self._config
        except ValueError:
            differs = True  # Apply then says why it cannot build
        self.apply_button.setEnabled(differs)
        self.revert_button.setEnabled(differs)

    def _emit(self, *_args) -> None:
        try:
            config = self.requested_config()
        except ValueError as exc:
            self.error.setText(str(exc))
            self.error.show()
            return
        self.error.hide()
        if config != self._config:
            self.config_requested.emit(config)

    def set_config(
        self, config: ModelConfig, origin: str, parameters: int, residual_scales: dict[str, float] | None = None
    ) -> None:
        """Show the loaded model's own configuration (and reset the controls to it) with its learned residual scales
        ({"encoder.0.attn": s, ...}, Seq2SeqTransformer.residual_scales())."""
        self._config, self._origin, self._parameters = config, origin, parameters
        self._scales = dict(residual_scales or {})
        self.residual_check.blockSignals(True)
        self.residual_check.setChecked(config.residual_scale)
        self.residual_check.blockSignals(False)
        for field, box in self.combos.items():
            box.blockSignals(True)
            box.setCurrentIndex(box.findData(getattr(config, field)))
            box.blockSignals(False)
        for field, spin in self.spins.items():
            spin.blockSignals(True)
            spin.setValue(getattr(config, field))
            spin.blockSignals(False)
        self.error.hide()
        self._sync_buttons()
        self._show_summary()

    def set_trained_lengths(self, text: str) -> None:
        """The source lengths the weights were trained on ("1-16", "untrained" or "unknown"), shown in the summary."""
        self._trained = text
        self._show_summary()

    def _show_summary(self) -> None:
        config, origin, parameters = self._config, self._origin, self._parameters
        trained = f"{self._trained} symbols" if self._trained[:1].isdigit() else self._trained
        self.summary.setText(
            f"<b>Loaded model</b>: {escape(origin)}<br><b>Trained lengths</b>: {escape(trained)}<br>"
            f"{_label('positional', config.positional)} PE, "
            f"{_label('norm_position', config.norm_position)}, {_label('norm', config.norm)}, "
            f"{_label('activation', config.activation)}, d_model {config.d_model}, d_ff {config.d_ff}, "
            f"{config.n_heads} heads, "
            f"{config.n_encoder_layers}+{config.n_decoder_layers} layers, vocab {config.vocab_size}, "
            f"{parameters:,} parameters{_scales_text(self._scales)}"
        )


def _label(field: str, value: str) -> str:
    """The human name of a choice, as the combo box shows it."""
    return next((label for label, v in CHOICES[field] if v == value), value)


def _scales_text(scales: dict[str, float]) -> str:
    """The learned residual scales, one line per layer: "enc 0: attn 1.02, ff 0.97"."""
    if not scales:
        return ""
    layers: dict[str, list[str]] = {}
    for name, value in scales.items():
        stack, index, sublayer = name.split(".")
        layers.setdefault(f"{stack[:3]} {index}", []).append(f"{sublayer} {value:.3f}")
    rows = "<br>".join(f"{layer}: {', '.join(parts)}" for layer, parts in layers.items())
    return f"<br><b>Residual scales</b> (learned, start at 1):<br>{rows}"
