"""Start-up: import the tabs' modules on a second core while the loader imports torch.

Only their definitions run here (class bodies, module constants); every widget is still built on the GUI thread in
`Application._build()`, which imports the same modules and so waits for any still loading here.
"""

from __future__ import annotations

import importlib

MODULES = (
    "pyqtgraph",
    *(
        f"visualizer.{m}"
        for m in (
            "widgets.playground.view",
            "widgets.training.tab",
            "widgets.heads.view",
            "widgets.heads.badges",
            "widgets.playground.beam_panel",
            "controllers.architecture",
            "controllers.export",
            "controllers.checkpoints",
            "controllers.preferences",
            "state.heads",
            "state.length_lab",
            "state.causal_patching",
            "state.causal_attribution",
            "analysis_tabs",
            "workers.tasks",
            "workers.training_worker",
        )
    ),
)


def import_gui_modules() -> None:
    """Import what _build() uses; a failure is reported by the caller (the build then imports and raises itself)."""
    for name in MODULES:
        importlib.import_module(name)
