"""Architecture controls and the loaded model's own configuration."""
from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QSpinBox, QWidget

from core_model import ModelConfig

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
    "n_encoder_layers": "Encoder layers", "n_decoder_layers": "Decoder layers",
    "n_heads": "Attention heads per layer (d_model must be divisible by it)",
    "d_model": "Width of the model (a multiple of the number of heads)",
}
SPINS = {"n_encoder_layers": (1, 8), "n_decoder_layers": (1, 8), "n_heads": (1, 16), "d_model": (8, 1024)}


class ModelPanel(QWidget):
    """Edits go out as `config_requested`; the shown values always come back from the loaded model via set_config."""

    config_requested = Signal(object)  # ModelConfig: the user wants a model with this architecture

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._config = ModelConfig()
        self.combos: dict[str, QComboBox] = {}
        self.spins: dict[str, QSpinBox] = {}
        form = QFormLayout(self)
        form.setContentsMargins(4, 4, 4, 4)
        titles = {"positional": "&Positional:", "norm_position": "Norm position:", "norm": "Norm:",
                  "activation": "Activation:"}
        for field, options in CHOICES.items():
            box = QComboBox()
            for label, value in options:
                box.addItem(label, value)
            box.setToolTip(TIPS[field])
            box.activated.connect(self._emit)
            self.combos[field] = box
            form.addRow(titles[field], box)
        spin_titles = {"n_encoder_layers": "Encoder layers:", "n_decoder_layers": "Decoder layers:",
                       "n_heads": "Heads:", "d_model": "d_model:"}
        for field, (lo, hi) in SPINS.items():
            spin = QSpinBox()
            spin.setRange(lo, hi)
            spin.setToolTip(TIPS[field] + ". Press Enter to build.")
            spin.setKeyboardTracking(False)
            spin.editingFinished.connect(self._emit)
            self.spins[field] = spin
            form.addRow(spin_titles[field], spin)
        self.error = QLabel()
        self.error.setStyleSheet("color: #c9302c;")
        self.error.setWordWrap(True)
        self.error.hide()
        form.addRow(self.error)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.summary)

    def requested_config(self) -> ModelConfig:
        """The config the controls describe (may raise ValueError)."""
        values = {f: box.currentData() for f, box in self.combos.items()}
        values.update({f: spin.value() for f, spin in self.spins.items()})
        return replace(self._config, **values)

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

    def set_config(self, config: ModelConfig, origin: str, parameters: int) -> None:
        """Show the loaded model's own configuration (and reset the controls to it)."""
        self._config = config
        for field, box in self.combos.items():
            box.setCurrentIndex(box.findData(getattr(config, field)))
        for field, spin in self.spins.items():
            spin.blockSignals(True)
            spin.setValue(getattr(config, field))
            spin.blockSignals(False)
        self.error.hide()
        self.summary.setText(
            f"<b>Loaded model</b>: {origin}<br>{_label('positional', config.positional)} PE, "
            f"{_label('norm_position', config.norm_position)}, {_label('norm', config.norm)}, "
            f"{_label('activation', config.activation)}, d_model {config.d_model}, d_ff {config.d_ff}, {config.n_heads} heads, "
            f"{config.n_encoder_layers}+{config.n_decoder_layers} layers, vocab {config.vocab_size}, "
            f"{parameters:,} parameters"
        )


def _label(field: str, value: str) -> str:
    """The human name of a choice, as the combo box shows it."""
    return next((label for label, v in CHOICES[field] if v == value), value)
