"""The composition root: the one place that builds the app's objects and connects them.

Only the entry point (`visualizer.app`) imports this module. The window is a shell; state objects, controllers and
views are built here once the model has loaded, and each receives only what it needs (a provider, a sink).
"""

from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QCoreApplication, QObject, QSettings, Signal

from visualizer.controllers.settings_file import avoid_unusable_settings
from visualizer.main_window import MainWindow
from visualizer.menus import MenuActions, build_menus
from visualizer.preload import import_gui_modules
from visualizer.shortcut_list import shortcut_groups
from visualizer.workers.gc_policy import collect_on_gui_thread
from visualizer.workers.loader import StartupModel, load_startup_model
from visualizer.workers.tasks import TaskSlot, run_task, wait_for_tasks

if TYPE_CHECKING:  # the modules themselves load in _build(), after the window's first paint (they import torch)
    from PySide6.QtWidgets import QWidget

    from visualizer.analysis_tabs import AnalysisTabs
    from visualizer.controllers.architecture import ArchitectureController
    from visualizer.controllers.checkpoints import CheckpointActions
    from visualizer.controllers.export import Exporter
    from visualizer.controllers.page_export import PageExport
    from visualizer.controllers.preferences import Preferences
    from visualizer.controllers.recovery import Recovery
    from visualizer.lesson_dock import Lessons
    from visualizer.state.compare import CompareSession
    from visualizer.state.heads import HeadsState
    from visualizer.state.length_lab import LengthLabState
    from visualizer.state.model_hub import ModelHub
    from visualizer.state.pe_lab import PELabState
    from visualizer.state.playground import PlaygroundSession
    from visualizer.state.playground_beam import BeamState
    from visualizer.state.snapshots import ModelInfo
    from visualizer.state.training import TrainingState
    from visualizer.widgets.heads.badges import RoleBadges
    from visualizer.widgets.heads.view import HeadsView
    from visualizer.widgets.length_lab.view import LengthLabTab
    from visualizer.widgets.pe_lab.page import PEPage
    from visualizer.widgets.pe_lab.tab import PETab
    from visualizer.widgets.playground.beam_panel import BeamPanel
    from visualizer.widgets.playground.view import PlaygroundView
    from visualizer.widgets.training.page import TrainerPage
    from visualizer.widgets.training.tab import TrainerTab

log = logging.getLogger(__name__)
QUIT_WAIT_MS = 30_000  # a job still running then (a stuck read) is left to Qt's own wait at exit
TAB_TITLES = ("&Playground", "Positional encoding", "&Trainer")  # Alt+E / D / R pick the grids (view.py)


class Application(QObject):
    """Owns the window and, once the model is ready, every state object, controller and tab."""

    ready = Signal()  # the tabs are built and wired
    failed = Signal(str)  # loading or building failed: the window says why and shows no tabs

    def __init__(self, checkpoint: Path | None = None, device: str | None = None, lessons: Path | None = None) -> None:
        """lessons: the folder of lesson files (None: the shipped resources/lessons)."""
        super().__init__()
        collect_on_gui_thread()  # pool threads never finalize Qt objects left in reference cycles
        self.window = MainWindow()
        self.settings_redirect = avoid_unusable_settings()  # before any QSettings: a FIFO there blocks forever
        if self.settings_redirect is not None:
            self.window.show_message(self.settings_redirect.message(), 30000)
        geometry = QSettings().value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.window.restoreGeometry(geometry)
        self._checkpoint, self._device_name = checkpoint, device  # None: the defaults, resolved by the loader
        self._lessons_folder = lessons
        self.hub: ModelHub | None = None
        self.session: PlaygroundSession | None = None
        self.training: TrainingState | None = None
        self.pe_state: PELabState | None = None
        self.compare: CompareSession | None = None
        self.beam: BeamState | None = None  # beam search / sampling under the stepper, and its panel
        self.beam_panel: BeamPanel | None = None
        self.length_lab: LengthLabState | None = None
        self.playground: PlaygroundView | None = None
        self._pe_page: PEPage | None = None
        self.trainer_page: TrainerPage | None = None  # the window's tab page; the tab is built inside it
        self.checkpoints: CheckpointActions | None = None
        self.exporter: Exporter | None = None
        self.page_export: PageExport | None = None
        self.architecture: ArchitectureController | None = None
        self.preferences: Preferences | None = None
        self.menus: MenuActions | None = None  # the menu entries other code toggles: square cells, undo, device
        self.analysis: AnalysisTabs | None = None  # the Heads, Causal and Circuits tabs
        self.heads: HeadsState | None = None  # the Heads tab's state (in analysis too)
        self.heads_view: HeadsView | None = None
        self.badges: dict[str, RoleBadges] = {}  # the playground's role badges, by attention kind
        self.lessons: Lessons | None = None  # the Lessons dock, its runner and Help > Lessons
        self.loaded_at: float | None = None
        self._loading: TaskSlot | None = None
        self._preloading: TaskSlot | None = None
        qt_app = QCoreApplication.instance()
        if qt_app is not None:
            qt_app.aboutToQuit.connect(self._finish_background_jobs)
        self.recovery: Recovery | None = None  # unsaved training kept on disk; offers what an earlier app left
        self._quitting = False  # a signal is ending the app: nobody can answer a question

    def start_loading(self) -> None:
        """Import torch and load the model off the GUI thread; build the tabs when it is ready."""
        path, device = self._checkpoint, self._device_name
        self._loading = run_task(
            "Loading the model", lambda: load_startup_model(path, device), self._on_loaded, self._fail
        )
        self._preloading = run_task(
            "Preloading the tabs",
            import_gui_modules,
            lambda _r: None,  # _build imports them
            lambda message: log.warning("preloading the tabs failed: %s", message),
        )

    def _on_loaded(self, startup: StartupModel) -> None:
        try:  # every way out emits `ready` or `failed`: the app's start-up settings (no GC) end on either
            self._build(startup)
            self.window.show_tabs()
            if startup.warning:
                self.window.set_warning(startup.warning)
                self.window.show_message(startup.warning, 15000)
        except Exception as exc:  # noqa: BLE001 - a broken start must say why, never leave "Loading..." up
            log.warning("could not build the window", exc_info=True)
            self._fail(f"{type(exc).__name__}: {exc}")
            return
        self.loaded_at = time.perf_counter()
        self.ready.emit()

    def _fail(self, message: str) -> None:
        self.failed.emit(message)  # before the modal box: listeners (the app's start-up settings) end now
        self.window.show_load_error(message)

    # ----- building -----
    def _build(self, startup: StartupModel) -> None:
        """Create the state objects, controllers and tabs, connect them, restore the user's last session."""
        from core_model.shipped import resource_path
        from visualizer.analysis_tabs import build_analysis_tabs
        from visualizer.controllers.architecture import ArchitectureController
        from visualizer.controllers.checkpoints import CheckpointActions
        from visualizer.controllers.export import Exporter
        from visualizer.controllers.page_export import PageExport, page_input
        from visualizer.controllers.preferences import Preferences
        from visualizer.controllers.recovery import Recovery
        from visualizer.lesson_dock import install_lessons
        from visualizer.state.compare import CompareSession
        from visualizer.state.model_hub import ModelHub
        from visualizer.state.pe_lab import PELabState
        from visualizer.state.playground import PlaygroundSession
        from visualizer.state.playground_beam import BeamState
        from visualizer.state.playground_tools import playground_tools
        from visualizer.state.training import TrainingState
        from visualizer.widgets.lazy_tab import install_page
        from visualizer.widgets.pe_lab.page import PEPage
        from visualizer.widgets.playground.beam_panel import BeamPanel
        from visualizer.widgets.playground.view import PlaygroundView
        from visualizer.widgets.training.page import TrainerPage
        from visualizer.workers.inference import keystroke_slot
        from visualizer.workers.training_worker import TrainingRun

        win = self.window
        hub = self.hub = ModelHub(
            startup.model,
            startup.task,
            device=startup.device,
            origin=startup.origin,
            history=startup.history,
            path=startup.path,
            extra=startup.extra,
        )
        session = self.session = PlaygroundSession(hub, runner=keystroke_slot())  # forward passes off the GUI thread
        training = self.training = TrainingState(hub, TrainingRun)  # each run's worker on a thread the run owns
        self.pe_state = PELabState()
        self.compare = CompareSession(session, TaskSlot)
        self.beam = BeamState(session, TaskSlot)  # beam search / sampling under the stepper
        self.beam_panel = BeamPanel(self.beam)
        tools = playground_tools(session, TaskSlot)  # a cell's decomposition: off the GUI thread
        playground = self.playground = PlaygroundView(session, tools, compare=self.compare, beam_panel=self.beam_panel)
        pe_page = self._pe_page = PEPage(self.pe_state)  # built when first shown
        checkpoints = self.checkpoints = CheckpointActions(hub, win, training)
        ask = checkpoints.confirm_discard  # as File > Open asks
        trainer_page = self.trainer_page = TrainerPage(  # built when first shown
            hub,
            training,
            session.gates,
            session.gates_changed,
            confirm_discard=ask,
            make_slot=TaskSlot,
            picked=lambda: session.task,
            task_picked=session.task_picked,
        )
        pages: tuple[QWidget, ...] = (playground, pe_page, trainer_page)
        for widget, title in zip(pages, TAB_TITLES):
            win.add_tab(widget, title)
        analysis = self.analysis = build_analysis_tabs(hub, session, playground, win, self)
        self.heads, self.heads_view, self.badges = analysis.heads, analysis.heads_view, analysis.badges
        page_export = self.page_export = PageExport(lambda: page_input(session), win.show_message, win)
        self.exporter = Exporter(
            playground.current_grid,
            lambda: self.pe_tab.plot_items(),
            win.show_message,
            win,
            lambda: page_export.export(),  # not the action's `checked` as the path
        )
        architecture = self.architecture = ArchitectureController(
            hub, training, win.show_message, win, win.withdraw_message, lambda: session.task
        )
        preferences = self.preferences = Preferences(win, win.tabs, session, playground.splitter)
        recovery = self.recovery = Recovery(hub, training, win.show_message, checkpoints.confirm_discard, win)
        win.add_banner(recovery.banner)
        menus = self.menus = build_menus(self)
        self.lessons = install_lessons(self, self._lessons_folder or resource_path("lessons"))
        self.length_lab = analysis.length_lab
        lab_page = analysis.length_lab_page  # the lab's pair follows the Playground's task, or it says which it shows
        session.task_picked.connect(lambda task: lab_page.deliver("task", lambda tab: tab.follow_task(task)))
        lab_page.deliver("task", lambda tab: tab.follow_task(session.task))
        for tab in analysis.table:  # after the Playground, PE and Trainer tabs, with their View menu entries
            install_page(tab.page, tab.title, win)
        self._wire(hub, session, playground, architecture, menus)
        if startup.history:  # the shipped model's own training curves, as File > Open shows a checkpoint's
            training.restore(startup.history, startup.extra)
        if problem := preferences.restore_or_reset():  # the user's last session, else the defaults
            win.show_message(problem, 15000)
        architecture.request_task(session.task, ask=False)  # a restored task loads its shipped model
        self._show_model(hub.info())
        recovery.start()

    def _wire(
        self,
        hub: ModelHub,
        session: PlaygroundSession,
        playground: PlaygroundView,
        architecture: ArchitectureController,
        menus: MenuActions,
    ) -> None:
        win = self.window
        hub.info_changed.connect(self._show_model)
        hub.training_active_changed.connect(playground.set_training_active)
        hub.training_active_changed.connect(lambda active: menus.device.setEnabled(not active))
        hub.training_active_changed.connect(win.set_training_active)
        session.frame_changed.connect(lambda frame: win.show_forward_time(frame.maps.forward_ms))
        session.pass_failed.connect(lambda message: win.show_message(message, 10000))  # "Forward pass failed: …"
        playground.config_requested.connect(architecture.request)  # Apply asks for a build
        playground.revert_requested.connect(architecture.cancel)  # Revert drops the one still running
        playground.task_selected.connect(architecture.request_task)
        architecture.config_refused.connect(lambda: self._show_model(hub.info()))
        win.set_close_guard(self._close)
        win.set_shortcut_help(partial(shortcut_groups, win))  # F1 reads the real actions, so it cannot drift

    # ----- showing -----
    def _show_model(self, info: ModelInfo) -> None:
        assert self.playground is not None and self.hub is not None and self._pe_page is not None  # built first
        self.window.show_model_info(info)  # Model > Undo follows the hub itself (ArchitectureController.track_undo)
        self.playground.show_model(info, self.hub.trained_lengths_text(), self.hub.model.residual_scales())
        c = info.config
        self._pe_page.set_model_pe(c.positional, c.d_model, c.pe_base, c.head_dim)

    @property
    def pe_tab(self) -> PETab:  # built now if it was not yet
        assert self._pe_page is not None, "the model has not loaded yet"
        return self._pe_page.tab()

    @property
    def trainer_tab(self) -> TrainerTab:  # built now if it was not yet
        assert self.trainer_page is not None, "the model has not loaded yet"
        return self.trainer_page.tab()

    @property
    def length_lab_tab(self) -> LengthLabTab:  # built now if it was not yet
        assert self.analysis is not None, "the model has not loaded yet"
        return self.analysis.length_lab_page.content()

    # ----- closing -----
    def quit_on_signal(self, signum: int) -> None:
        """SIGINT, SIGTERM or SIGHUP: nobody is there to answer, so unsaved training goes to a recovery file."""
        if self._quitting:
            return
        self._quitting = True
        with ExitStack() as ending:  # whatever fails on the way, the window closes and the app exits
            ending.callback(QCoreApplication.exit, 128 + signum)  # the shell's convention for "ended by a signal"
            ending.callback(self.window.close)
            if self.recovery is not None:
                self.recovery.keep_unsaved()  # stops training first

    def _finish_background_jobs(self) -> None:
        """Let jobs on the thread pool (loading, builds, searches) end while the objects they report to exist.

        Qt waits for them anyway once the application object goes, but by then PySide has deleted their QObjects
        and the interpreter is shutting down: "Signal source has been deleted" and failed imports on the console.
        """
        wait_for_tasks(QUIT_WAIT_MS)

    def _close(self) -> bool:
        """Asked by the window before it closes: keep unsaved work unless the user lets it go."""
        if not self._quitting and self.checkpoints is not None and not self.checkpoints.confirm_close():
            return False
        if self.training is not None:
            self.training.shutdown(5000)  # its last weights reach the hub before the recovery file is settled
        if self.recovery is not None:
            self.recovery.finish(keep=self._quitting)  # else saved or let go: nothing left to recover
        for lab in (self.analysis, self.beam):  # their jobs end before the objects they report to
            if lab is not None:
                lab.shutdown(5000)
        if self.session is not None:
            self.session.runner.shutdown()
        if self.preferences is not None:
            self.preferences.save()
        else:
            QSettings().setValue("window/geometry", self.window.saveGeometry())
        return True
