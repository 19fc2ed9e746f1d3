"""The alerts ``touchstone monitor`` raised, read back for the trends page.

A monitor appends each alert to ``alerts.jsonl`` in its state directory (``<base>/monitors/<name>/``,
see :mod:`touchstone.monitor.state`), where ``<base>`` is the folder of a SQLite store file, else
``~/.touchstone``. The dashboard reads those files (bounded, and a line it cannot read is skipped)
and marks each alert on the window's point: threshold alerts and regressions against the baseline,
with the method that decided them."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAX_ALERT_BYTES = 16 * 1024 * 1024
"""Read at most this much of one monitor's alert file (its newest alerts)."""


def default_monitor_dirs(store_path: str | os.PathLike[str], persistent: bool) -> list[Path]:
    """Where monitors of this store keep their state by default (the rule of ``touchstone monitor``)."""
    text = str(store_path)
    where = Path(text)
    if persistent and where.suffix and "://" not in text:
        return [where.parent / "monitors"]
    return [Path.home() / ".touchstone" / "monitors"]


def _alert_lines(path: Path) -> Iterable[dict[str, Any]]:
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - MAX_ALERT_BYTES))
            raw = fh.read()
    except OSError:
        return
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a torn first line (the tail) or a damaged one
        if isinstance(item, dict) and isinstance(item.get("run_id"), str):
            yield item


def load_alerts(directories: Iterable[Path]) -> dict[str, list[dict[str, Any]]]:
    """Alerts by the run id of their window, from every ``<dir>/<monitor>/alerts.jsonl``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for base in directories:
        try:
            monitors = sorted(p for p in base.iterdir() if p.is_dir())
        except OSError:
            continue
        for monitor in monitors:
            for item in _alert_lines(monitor / "alerts.jsonl"):
                alert = {k: item.get(k) for k in ("kind", "method", "metric", "value", "reference", "p_value",
                                                  "message", "window_start", "monitor")}
                found.setdefault(str(item["run_id"]), []).append(alert)
    return found


def alerts_for(
    alerts: dict[str, list[dict[str, Any]]], run_id: str, key: str, metric: str
) -> list[dict[str, Any]]:
    """The alerts of one trend point: its run, and the metric as the monitor named it (a metric name
    or an ``<evaluator>.<metric>`` key)."""
    return [a for a in alerts.get(run_id, ()) if a.get("metric") in (key, metric)
            or str(a.get("metric", "")).rsplit(".", 1)[-1] == metric]


__all__ = ["MAX_ALERT_BYTES", "alerts_for", "default_monitor_dirs", "load_alerts"]
