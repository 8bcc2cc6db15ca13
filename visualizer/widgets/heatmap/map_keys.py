"""The large map view's keys, in a module of their own so the Help list can name them without loading pyqtgraph.

The Help list is built with the window, before the model loads; importing the map tools there would load
pyqtgraph on the GUI thread ahead of `import torch`, which start-up otherwise runs beside it.
"""

from __future__ import annotations

PAINT_KEY, UNDO_KEY, REDO_KEY = "P", "Ctrl+Z", "Ctrl+Shift+Z"
