"""The user's settings files, checked before Qt opens them: QSettings reads its files as it is constructed, and
opening a named pipe (FIFO) waits for a writer forever, so one at the settings path would freeze start-up.

When a file is not a regular file, the app's preferences go to an empty temporary folder for this run instead: the
defaults are used, nothing is written at the real path, and every `QSettings()` in the app keeps working.
"""
from __future__ import annotations

import logging
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings

log = logging.getLogger(__name__)
PROBE_ORG, PROBE_APP = "attention-playground-probe", "settings-path-probe"  # names no settings file has
FILE_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISDIR, "a folder"), (stat.S_ISSOCK, "a socket"),
              (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


@dataclass(frozen=True)
class SettingsRedirect:
    """Why the preferences are not read this run, and the temporary folder they go to instead (removed on exit)."""

    path: Path
    what: str
    folder: tempfile.TemporaryDirectory

    def message(self) -> str:
        return (f"Preferences could not be read from {printable(str(self.path))} ({self.what}): the defaults are used "
                "and nothing will be saved there.")


def printable(text: str) -> str:
    """Text with control and other unprintable characters shown as escapes, so a file name stays one plain line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def user_settings_files() -> tuple[Path, ...]:
    """The user's files `QSettings()` reads: the app's own and the organisation's fallback, () when not files.

    Qt computes the folder (honouring `QSettings.setPath`) for names no file has: constructing QSettings for the
    app's own names would already open the files being checked.
    """
    fmt = QSettings.defaultFormat()
    probe = Path(QSettings(fmt, QSettings.Scope.UserScope, PROBE_ORG, PROBE_APP).fileName())
    if probe.parent.name != PROBE_ORG or probe.stem != PROBE_APP:  # not an org/app file layout (e.g. a registry)
        return ()
    folder, ext = probe.parent.parent, probe.suffix
    org, app = QCoreApplication.organizationName(), QCoreApplication.applicationName()
    return folder / org / f"{app}{ext}", folder / f"{org}{ext}"


def unusable_kind(path: Path) -> str | None:
    """What is at `path` when it is neither absent nor a regular file (symbolic links followed), else None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")


def avoid_unusable_settings() -> SettingsRedirect | None:
    """Check the user's settings files; when one is unusable, point QSettings at an empty temporary folder."""
    for path in user_settings_files():
        what = unusable_kind(path)
        if what is None:
            continue
        folder = tempfile.TemporaryDirectory(prefix="attention-playground-settings-")
        QSettings.setPath(QSettings.defaultFormat(), QSettings.Scope.UserScope, folder.name)
        log.warning("settings file %s is %s: using the defaults, not saving preferences this run",
                    printable(str(path)), what)
        return SettingsRedirect(path, what, folder)
    return None
