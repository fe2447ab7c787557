"""What ``stamen certify`` shows on stderr while it works: stages, units, time left.

First a line saying what is loaded (reading a large graph takes seconds). On a terminal,
then one rich bar per architecture: the stage it is in (kernel, fit,
certify), the units decided of all (targets sample-wise, budgets collective; those kept
from the journal count from the start), the time elapsed (it ticks through a long
kernel or MILP, so the screen is never still) and the time left. Elsewhere (a log, a
pipe) one line per stage and nothing else, so a log holds each line once.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console

from stamen.certify.pipeline import Stage
from stamen.experiments.unit_progress import live_bar


class CertifyProgress:
    """Progress of one ``stamen certify`` (a context manager; one :meth:`begin` per architecture)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self.progress = None
        self.bar = None
        self.arch = ""
        self.noun = "targets"
        self.total = 0
        self.kept = 0
        self.nodes = 0

    def __enter__(self) -> CertifyProgress:
        if self.live:
            self.progress = live_bar(self.console, "{task.fields[noun]}")
        return self

    def loading(self, what: str) -> None:
        """The graph (or graph file) ``what`` is being loaded: the first thing shown, before any slow work."""
        if self.progress is not None:
            self.bar = self.progress.add_task(f"loading {what}", total=None, noun="")
        else:
            self.note(f"loading {what}")

    def note(self, text: str) -> None:
        """One line (above the bar on a terminal)."""
        self.console.print(f"stamen certify: {text}", highlight=False, markup=False)

    def begin(self, arch: str, total: int, kept: int, noun: str, nodes: int) -> None:
        """A new architecture: ``total`` units, ``kept`` of them read back from the journal."""
        self.arch, self.total, self.kept, self.noun, self.nodes = arch, total, kept, noun, nodes
        if self.progress is not None:
            if self.bar is not None and self.progress.tasks[-1].total is None:  # loading is over
                self.progress.remove_task(self.bar)
            self.bar = self.progress.add_task(f"{arch}: starting", total=total, completed=kept, noun=noun)

    def stage(self, stage: Stage) -> None:
        """A stage of :func:`stamen.certify.pipeline.run` begins."""
        if stage == Stage.KERNEL:
            text = f"{self.arch}: kernel over {self.nodes} nodes"
        elif stage == Stage.FIT:
            text = f"{self.arch}: fitting the clean model"
        else:
            kept = f" ({self.kept} kept from the journal)" if self.kept else ""
            text = f"{self.arch}: certifying {self.total - self.kept} of {self.total} {self.noun}{kept}"
        if self.progress is not None:
            self.progress.update(self.bar, description=text if stage != Stage.CERTIFY else f"{self.arch}: certify")
        else:
            self.note(text)

    def advance(self) -> None:
        """One more unit decided."""
        if self.progress is not None:
            self.progress.advance(self.bar)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()
