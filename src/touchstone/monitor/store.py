"""A monitor's windows in the run store: each evaluated window is a run.

The run of the window starting at S of monitor M is named ``monitor:M:S`` (S in ISO 8601 UTC) and
is an ordinary ``evaluate()`` run: its rows, typed per-row scores and summary (n, mean, failed,
pass rate per metric) are stored as for any run, and ``touchstone show`` / the dashboard read it as
one. The run's configuration keeps the monitor's settings under ``options.monitor`` (window bounds,
thresholds, sampling rate, counts). No table of its own is needed, so the same store works on every
backend; only the protocol's own methods and its typed reads (``store.comparisons``) are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from touchstone.monitor.windows import iso, parse_timestamp
from touchstone.store.base import Store

PREFIX = "monitor:"
DONE_STATUSES = ("completed", "completed_with_failures")
"""Statuses of a window that counts as evaluated (an aborted window is evaluated again)."""


def run_name(monitor: str, start: int) -> str:
    """The name of the run of ``monitor``'s window starting at ``start`` (Unix seconds)."""
    return f"{PREFIX}{monitor}:{iso(start)}"


@dataclass(frozen=True)
class StoredWindow:
    """An evaluated window as stored: its run id, start (Unix seconds) and summary (per metric key:
    n, mean, n_failed, pass rate...)."""

    run_id: str
    start: int
    status: str
    summary: dict[str, Any]


def stored_windows(store: Store, monitor: str) -> list[StoredWindow]:
    """The evaluated windows of ``monitor``, oldest first (the latest run of a window counts)."""
    prefix = f"{PREFIX}{monitor}:"
    latest: dict[int, StoredWindow] = {}
    for run in store.comparisons.runs_named(prefix):
        # the store's match ignores ASCII case on SQLite: the name is checked again here
        if not str(run.name).startswith(prefix) or run.status not in DONE_STATUSES:
            continue
        try:
            start = int(parse_timestamp(str(run.name)[len(prefix) :]))
        except ValueError:
            continue
        decoded = run.summary or {}
        if isinstance(decoded.get("summary"), dict):  # the run's document: summary, usage...
            decoded = decoded["summary"]
        latest[start] = StoredWindow(run.id, start, run.status, decoded)
    return [latest[s] for s in sorted(latest)]


def row_scores(store: Store, run_id: str, evaluator: str, metric: str) -> list[float]:
    """The per-row values of one metric in one window (scored rows only)."""
    return [
        float(v.value)
        for v in store.score_values(run_id, evaluator=evaluator, metric=metric)
        if v.ok and v.value is not None
    ]
