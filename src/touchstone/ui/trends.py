"""The trends page: a metric's mean over time across runs, each point with its interval, threshold
and the alerts a monitor raised for it; a monitor's windows are drawn at their window's start."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from touchstone.store.base import RunInfo, Store
from touchstone.store.dashboard import MetricRef
from touchstone.ui.monitor_alerts import alerts_for
from touchstone.ui.run_list import RunFilter, selection
from touchstone.ui.views import QueryError, finite_dict, split_key, summary_of


def threshold_of(info: RunInfo, ref: MetricRef) -> float | None:
    """The threshold a run used for a metric, as its configuration records it: the evaluator's
    ``threshold`` for its main metric, ``thresholds[<suffix>]`` for a secondary one."""
    ev = (info.config.get("evaluators") or {}).get(ref.evaluator)
    if not isinstance(ev, dict):
        return None
    options = ev.get("options")
    if not isinstance(options, dict):
        return None
    value: Any = None
    if ev.get("metric") == ref.metric:
        value = options.get("threshold")
    elif isinstance(options.get("thresholds"), dict):
        thresholds = options["thresholds"]
        for suffix, v in thresholds.items():
            if ref.metric == suffix or ref.metric.endswith("_" + str(suffix)):
                value = v
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


MONITOR_WINDOW = re.compile(
    r"^monitor:(?P<monitor>.+):(?P<start>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)$")
"""A monitor's window run is named ``monitor:<monitor>:<window start, ISO 8601 UTC>``."""


def point_time(info: RunInfo) -> tuple[str, str | None]:
    """When a run counts on a trend: a monitor window's start (and the monitor's name), else the
    time the run started."""
    found = MONITOR_WINDOW.match(info.name or "")
    if found:
        return found["start"].replace("Z", "+00:00"), found["monitor"]
    return info.started, None


def _point(info: RunInfo, key: str, ref: MetricRef, s: dict[str, Any],
           alerts: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    threshold = threshold_of(info, ref)
    mean = s.get("mean")
    higher = s.get("higher_is_better", True) is not False
    below = (threshold is not None and isinstance(mean, (int, float))
             and (mean < threshold if higher else mean > threshold))
    at, monitor = point_time(info)
    raised = alerts_for(alerts, info.id, key, ref.metric)
    return {
        "run_id": info.id, "name": info.name, "started": info.started, "at": at, "monitor": monitor,
        "status": info.status,
        "key": key, "mean": mean, "ci95": s.get("ci95"), "n": s.get("n"),
        "pass_rate": s.get("pass_rate"), "n_failed": s.get("n_failed", 0),
        "threshold": threshold, "below": bool(below), "higher_is_better": higher,
        "alerts": raised, "alerted": bool(raised),
    }


def trend(store: Store, metric: str, name: str = "", limit: int = 500,
          alerts: Mapping[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """A metric's mean over time across runs (oldest first): each run's mean, 95% interval, n, pass
    rate, failed rows and threshold, with ``below`` set where the mean falls on the wrong side of the
    threshold, and ``alerts`` (with ``alerted``) listing what a monitor raised for that window and
    metric (``alerts`` by run id, see :mod:`touchstone.ui.monitor_alerts`: threshold alerts and
    regressions with the method that decided them). ``metric`` is ``<evaluator>.<metric>`` or a
    metric name (every evaluator's);
    ``name`` narrows the runs by part of their name (``monitor:<name>:`` selects a monitor's
    windows, each counted at its window's start, ``at``; other runs at the time they started)."""
    metric = metric.strip()
    if not metric:
        raise QueryError("choose a metric (e.g. f1.f1_score, or f1_score)")
    runs = store.dashboard.runs(selection(RunFilter(name=name, metric=metric)), limit)
    known = dict(alerts or {})
    points = []
    for info in reversed(runs):
        evaluators = list(info.config.get("evaluators") or {})
        for key, s in summary_of(info).items():
            ref = split_key(key, evaluators)
            if metric in (key, ref.metric):
                points.append(_point(info, key, ref, s, known))
    points.sort(key=lambda p: p["at"])  # stable: runs keep their start order within one moment
    return finite_dict({"metric": metric, "name": name, "points": points})
