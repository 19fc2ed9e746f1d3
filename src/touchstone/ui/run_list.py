"""The runs list: its filters (part of the name, a date range, a metric, a status), one line per run
with its main metrics at a glance, and the choices the filters offer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from touchstone.store.base import RunInfo, Store
from touchstone.store.dashboard import RunSelection
from touchstone.ui.views import Page, QueryError, finite_dict, has_metric, main_metrics, summary_of


@dataclass(frozen=True)
class RunFilter:
    """The runs list's filters: part of the name (case-insensitive), started on or after ``since``
    and on or before ``until`` (dates, ``YYYY-MM-DD``, UTC), a metric the run has, a status."""

    name: str = ""
    since: str = ""
    until: str = ""
    metric: str = ""
    status: str = ""


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise QueryError(f"{what} must be a date as YYYY-MM-DD, got {text!r}") from None


def selection(f: RunFilter) -> RunSelection:
    """The store's selection for ``f``: its dates checked (a :class:`QueryError` says what was
    expected) and ``until`` made the start of the next day."""
    since = _day(f.since, "since").isoformat() if f.since.strip() else ""
    before = (_day(f.until, "until") + timedelta(days=1)).isoformat() if f.until.strip() else ""
    return RunSelection(name=f.name.strip(), since=since, before=before, status=f.status.strip(),
                        metric=f.metric.strip())


@dataclass
class RunLine:
    """One run as the runs list shows it."""

    id: str
    name: str | None
    started: str
    finished: str | None
    status: str
    rows: int | None
    data: str
    metrics: list[dict[str, Any]]
    failures: int

    def as_dict(self) -> dict[str, Any]:
        return finite_dict(self.__dict__)


def run_line(info: RunInfo) -> RunLine:
    """A run's line in the runs list: its main metrics (mean, pass rate, failed rows) at a glance."""
    summary = summary_of(info)
    shown = []
    for key in main_metrics(info):
        s = summary[key]
        shown.append({"key": key, "mean": s.get("mean"), "pass_rate": s.get("pass_rate"),
                      "n": s.get("n"), "n_failed": s.get("n_failed", 0)})
    failures = sum(int(s.get("n_failed") or 0) for s in summary.values())
    n_rows = info.config.get("n_rows")
    return RunLine(info.id, info.name, info.started, info.finished, info.status,
                   n_rows if isinstance(n_rows, int) else None, str(info.config.get("data") or ""),
                   shown, failures)


def list_runs(store: Store, f: RunFilter, page: int = 1, size: int = 50) -> Page:
    """The runs matching ``f``, newest first, one page of them."""
    sel = selection(f)
    reads = store.dashboard
    if not sel.metric:
        runs = reads.runs(sel, size, (page - 1) * size)
        return Page([run_line(i) for i in runs], page, size, reads.count_runs(sel))
    # the store's test on the summary's text is a pre-filter; the decoded summary decides
    infos = [i for i in reads.runs(sel) if has_metric(i, sel.metric)]
    start = (page - 1) * size
    return Page([run_line(i) for i in infos[start:start + size]], page, size, len(infos))


def known_statuses(store: Store) -> list[str]:
    """The statuses runs in the store have, for the status filter."""
    return sorted(store.dashboard.run_statuses() | {"completed", "completed_with_failures"})


def all_metric_keys(store: Store, limit: int = 200) -> list[str]:
    """The metric keys of the most recent runs, for the trends page's choice."""
    keys: dict[str, None] = {}
    for info in store.dashboard.runs(RunSelection(), limit):
        for key in summary_of(info):
            keys.setdefault(key, None)
    return sorted(keys)
