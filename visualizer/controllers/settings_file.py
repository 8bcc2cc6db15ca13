"""The settings files QSettings reads, checked before Qt opens them: QSettings reads its files as it is constructed,
and opening a named pipe (FIFO) waits for a writer forever, so one at a settings path would freeze start-up.

Qt reads the user's files (the app's own and the organisation's fallback) and then the system-wide ones (the same
two names in each system folder, /etc/xdg on Linux). When one of a scope's files is not a regular file, that scope
goes to an empty temporary folder for the rest of the run: its defaults are used, nothing is written at the real
path, and every `QSettings()` in the app keeps working. `QSettings.setPath` lasts as long as the process, so the
folder does too: it is removed when the process exits (atexit), whoever keeps the returned SettingsRedirect.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings, QStandardPaths

from visualizer.state.failures import printable

log = logging.getLogger(__name__)
PROBE_ORG, PROBE_APP = "attention-playground-probe", "settings-path-probe"  # names no settings file has
SCOPES = ((QSettings.Scope.UserScope, "user"), (QSettings.Scope.SystemScope, "system"))


@dataclass(frozen=True)
class SettingsRedirect:
    """The first unusable settings file, and the temporary folder its scope reads and writes this run instead."""

    path: Path
    what: str
    scope: str  # "user" or "system"
    folder: Path  # lives until the process exits: QSettings keeps pointing at it

    def message(self) -> str:
        where = f"from {printable(str(self.path))} ({self.what})"
        if self.scope == "system":
            return f"System-wide preferences could not be read {where}: they are left out this run."
        return f"Preferences could not be read {where}: the defaults are used and nothing will be saved there."


def settings_files(scope: QSettings.Scope) -> tuple[Path, ...]:
    """The files `QSettings()` reads in `scope`: the app's own, then the organisation's fallback, in every folder;
    () when the settings are not files.

    Qt computes the folders (honouring `QSettings.setPath`) for names no file has: constructing QSettings for the
    app's own names would already open the files being checked.
    """
    probe = Path(QSettings(QSettings.defaultFormat(), scope, PROBE_ORG, PROBE_APP).fileName())
    if probe.parent.name != PROBE_ORG or probe.stem != PROBE_APP:  # not an org/app file layout (e.g. a registry)
        return ()
    folders = [probe.parent.parent]
    if scope == QSettings.Scope.SystemScope:
        folders = _system_folders(folders[0])
    org, app, ext = QCoreApplication.organizationName(), QCoreApplication.applicationName(), probe.suffix
    return (*(f / org / f"{app}{ext}" for f in folders), *(f / f"{org}{ext}" for f in folders))


def _system_folders(first: Path) -> list[Path]:
    """Qt reads system-wide files from every XDG config folder but the user's own (the first it lists), unless
    QSettings.setPath named one folder: then the probe's folder is not the first of that list."""
    listed = QStandardPaths.standardLocations(QStandardPaths.StandardLocation.GenericConfigLocation)[1:]
    folders = [Path(folder) for folder in listed]
    return folders if folders and folders[0] == first else [first]


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
    # imported here, for a path that is not a file only: the package imports torch, which start-up must not wait for
    from core_model.atomic_files import file_kind

    return file_kind(mode)


def avoid_unusable_settings() -> SettingsRedirect | None:
    """Check every settings file; point each scope with an unusable one at an empty temporary folder.

    Returns the first unusable file (the user's before the system's), or None when all are usable or absent.
    """
    found = [
        (path, name, what)
        for scope, name in SCOPES
        for path in settings_files(scope)
        if (what := unusable_kind(path)) is not None
    ]
    if not found:
        return None
    folder = Path(tempfile.mkdtemp(prefix="attention-playground-settings-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # not before: QSettings uses it until the end
    for scope, name in SCOPES:
        if any(found_scope == name for _, found_scope, _ in found):
            QSettings.setPath(QSettings.defaultFormat(), scope, str(folder / name))
    for path, name, what in found:
        log.warning(
            "%s settings file %s is %s: leaving it out, not saving there this run", name, printable(str(path)), what
        )
    path, name, what = found[0]
    return SettingsRedirect(path, what, name, folder)
