"""Before Qt starts: is there a display for the window? Without one Qt aborts and blames the xcb-cursor library.

Checked only where Qt's platform plugins need a display server (Linux and other X11/Wayland systems) and only for
the plugins that do (xcb, wayland); `offscreen`, `vnc`, `eglfs` and the like need none. When a display is named but
the plugin still fails (a missing system library), Qt's own message is the right one and is left to Qt.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

NEEDS = {"xcb": ("DISPLAY",), "wayland": ("WAYLAND_DISPLAY",)}  # plugin family -> the variable that names its server
NO_DISPLAY_SERVER = ("darwin", "win32", "cygwin")  # Cocoa and Windows draw without one


def platform_names(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The Qt platform plugins asked for: `-platform NAME` wins over QT_QPA_PLATFORM ("wayland;xcb" tries both)."""
    spec = env.get("QT_QPA_PLATFORM", "")
    for i, arg in enumerate(argv):
        if arg in ("-platform", "--platform") and i + 1 < len(argv):
            spec = argv[i + 1]
    return [name.split(":")[0].strip() for name in spec.split(";") if name.split(":")[0].strip()]


def _server_variables(name: str) -> tuple[str, ...] | None:
    """The variables one of which names a display for plugin `name`; None when it needs no display."""
    family = "wayland" if name.startswith("wayland") else name
    return NEEDS.get(family)


def missing_display(argv: Sequence[str], env: Mapping[str, str], system: str = sys.platform) -> str:
    """A one-line message when the window cannot open for want of a display, else ""."""
    if system.startswith(NO_DISPLAY_SERVER):
        return ""
    names = platform_names(argv, env)
    wanted = [_server_variables(name) for name in names] if names else [("DISPLAY", "WAYLAND_DISPLAY")]
    if any(variables is None or any(env.get(v) for v in variables) for variables in wanted):
        return ""
    unset = sorted({v for variables in wanted for v in variables or ()})
    return (
        f"attention-playground: error: no display found ({' and '.join(unset)} "
        f"{'is' if len(unset) == 1 else 'are'} not set), so the window cannot open. Without a display, use the "
        "headless commands (attention-playground train|eval|views|decode|heads|cell ...; see "
        "'attention-playground --help'), or run the window under a virtual X server: "
        "xvfb-run -a attention-playground"
    )
