"""The exported page's look: its CSS and the app's colour scales, as plain text and hex stops (no Qt here).

The stops are the app's colormaps (visualizer/widgets/heatmap/colours.py: pyqtgraph's "viridis" for weights, norms
and rollout, "CET-CBD1" diverging for scores) sampled at 17 evenly spaced points; the page interpolates between
them. tests/page/test_page.py holds them equal to pyqtgraph's tables. Masked cells take the app's MASK_FILL grey.
"""

from __future__ import annotations

VIRIDIS = (
    "#440154", "#481769", "#472c7a", "#423f85", "#3b518b", "#33628d", "#2c718e", "#26818e", "#21908c",
    "#1f9f88", "#27ad80", "#3dbc73", "#5cc862", "#81d34c", "#aadc31", "#d5e219", "#fde725",
)  # fmt: skip
DIVERGING = (
    "#3a90fe", "#609bfd", "#7ca6fc", "#93b2fa", "#a8bef9", "#bbcaf7", "#cdd6f5", "#dee3f3", "#ededec",
    "#e9e3d4", "#e2d6b9", "#daca9e", "#d1bd84", "#c7b16a", "#bda64f", "#b39a32", "#a89008",
)  # fmt: skip
MASK_GREY = "#8c8c8c"  # visualizer/widgets/heatmap/mask_backdrop.py MASK_FILL (140, 140, 140)
HIGHLIGHT = "#ff3b30"  # the hovered query's and key's rows, columns and tokens

CSS = """
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: #1c1c22; background: #f6f6f3; }
header { padding: 12px 20px; background: #18181c; color: #eee; }
header h1 { margin: 0 0 4px; font-size: 18px; }
main { padding: 12px 20px; max-width: 100%; }
section { margin: 0 0 16px; }
h2 { font-size: 15px; margin: 8px 0; }
.formula { background: #f4f4e8; border: 1px solid #c8c8b0; padding: 6px 8px; max-width: 70em; }
.tokens { display: flex; flex-wrap: wrap; gap: 3px; align-items: center; margin: 2px 0; }
.tokens .name { width: 10.5em; color: #555; }
.note { color: #555; font-size: 12px; margin-top: 4px; }
.tok { font: 13px monospace; padding: 1px 5px; border: 1px solid #bbb; border-radius: 3px; background: #fff; }
.tok.hit { background: HIGHLIGHT; color: #fff; border-color: HIGHLIGHT; }
.tok.differs { border-color: #c00; border-width: 2px; }
.tok.past { color: #aaa; border-style: dashed; }
.kinds { display: flex; flex-wrap: wrap; gap: 20px; }
.grid { display: grid; gap: 6px; align-items: end; }
.grid .label { font-size: 12px; color: #555; text-align: center; align-self: center; }
.map { position: relative; cursor: crosshair; line-height: 0; }
.map canvas { image-rendering: pixelated; border: 1px solid #999; box-sizing: content-box; }
.map canvas.over { position: absolute; left: 0; top: 0; border-color: transparent; pointer-events: none; }
.map.avg canvas { border-color: #18181c; border-width: 2px; }
#readout, .readout { position: sticky; top: 0; z-index: 2; background: #fffbe0; border: 1px solid #d8cf8a;
  padding: 4px 8px; font: 13px monospace; min-height: 2em; white-space: pre-wrap; overflow-wrap: anywhere; }
#large .readout { top: -12px; margin: 0 0 6px; }
.legend { display: flex; align-items: center; gap: 6px; font-size: 12px; color: #444; margin: 4px 0; }
.legend canvas { border: 1px solid #999; }
.swatch { display: inline-block; width: 12px; height: 12px; background: MASK_GREY; border: 1px solid #777; }
#large { position: fixed; inset: 0; background: rgba(0, 0, 0, 0.55); display: none; z-index: 5;
  align-items: center; justify-content: center; }
#large.open { display: flex; }
#large .panel { background: #fff; padding: 12px; border-radius: 6px; max-width: 96vw; max-height: 96vh;
  overflow: auto; }
#large .panel h3 { margin: 0 0 8px; font-size: 15px; }
.labelled { display: grid; grid-template-columns: auto auto; align-items: end; }
.axis { display: flex; font: 11px monospace; color: #333; }
.axis.cols { padding-left: 1px; }
.axis.cols .lab { writing-mode: vertical-rl; transform: rotate(180deg); padding-top: 3px; }
.axis.cols .lab { display: flex; align-items: center; }
.axis.rows { flex-direction: column; padding-top: 1px; align-self: start; }
.axis.rows .lab { display: flex; align-items: center; justify-content: flex-end; padding-right: 4px; }
.axis .lab { overflow: hidden; white-space: nowrap; box-sizing: border-box; }
.lab.hit { color: HIGHLIGHT; font-weight: bold; }
table.summary { border-collapse: collapse; font-size: 13px; }
table.summary td { border: 1px solid #ccc; padding: 2px 8px; }
"""


def page_css() -> str:
    """The page's style sheet with the colour constants filled in."""
    return CSS.replace("MASK_GREY", MASK_GREY).replace("HIGHLIGHT", HIGHLIGHT)
