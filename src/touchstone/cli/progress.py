"""The progress of a run on the terminal: rows done of all, their rate, and for a run that calls a
judge the calls made and their cost so far. The bar appears with the first scored row, so a run
refused before it starts (bad input) prints no bar at all."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Rows per second over the recent updates (blank until rich has two samples)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f} rows/s", style="progress.data.speed")


class JudgeColumn(ProgressColumn):
    """Judge calls and cost so far, when the run has made any."""

    def render(self, task: Task) -> Text:
        calls = task.fields.get("calls")
        if not calls:
            return Text("")
        cost = task.fields.get("cost")
        money = "" if cost is None else f", ${cost:.4f}"
        return Text(f"{calls:,} calls{money}", style="cyan")


def judge_counters() -> tuple[int, float | None]:
    """Calls and cost of the judge session open in this context (0 and None without one)."""
    from touchstone.judges.session import current_session

    session = current_session()
    if session is None:
        return 0, None
    stats = session.stats
    cost = stats.get("cost_usd")
    return int(stats.get("calls", 0) or 0), (float(cost) if isinstance(cost, (int, float)) else None)


class RunProgress:
    """``with RunProgress(console, quiet) as update: evaluate(..., progress=update)``."""

    def __init__(self, console: Console, quiet: bool) -> None:
        self.console, self.quiet = console, quiet
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self.progress is None:
            self.progress = Progress(
                TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), RateColumn(), JudgeColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), console=self.console, transient=False,
            )
            self.progress.start()
            self.task = self.progress.add_task("scoring", total=total or None)
        calls, cost = judge_counters()
        assert self.task is not None
        self.progress.update(self.task, completed=done, total=total or None, calls=calls, cost=cost)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()

    def fields(self) -> dict[str, Any]:
        """The bar's judge figures (for tests)."""
        if self.progress is None or self.task is None:
            return {}
        return dict(self.progress.tasks[0].fields)
