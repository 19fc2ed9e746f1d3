"""What every page of the dashboard shares: the errors a page answers with 400 or 404, values made
JSON-safe, a page of a list, and a run's metrics read from its summary (or from its typed score
lines when it has none).

The pages' data come from the store's typed read models (:class:`~touchstone.store.dashboard.DashboardReads`,
``store.dashboard``); the modules of this folder shape them for the templates and the ``/api``
routes, and import nothing of the web framework.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from touchstone.store.base import RunInfo, Store
from touchstone.store.dashboard import MetricRef


class QueryError(ValueError):
    """A filter the dashboard cannot apply (a bad date, a range with min above max, an unknown
    metric); the message says what was expected. The pages answer it with status 400."""


class NotFound(LookupError):
    """No such run or row; the pages answer it with status 404."""


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None, recursively (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def finite_dict(value: dict[str, Any]) -> dict[str, Any]:
    """:func:`finite` of a dict, typed as one."""
    return {str(k): finite(v) for k, v in value.items()}


def finite_list(value: list[Any]) -> list[Any]:
    """:func:`finite` of a list, typed as one."""
    return [finite(v) for v in value]


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


@dataclass
class Page:
    """One page of a list: its items, the page number (from 1), the page size and the total count."""

    items: list[Any]
    page: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    def as_dict(self) -> dict[str, Any]:
        items = [i.as_dict() if hasattr(i, "as_dict") else i for i in self.items]
        return {"items": finite(items), "page": self.page, "size": self.size, "total": self.total,
                "pages": self.pages}


def get_run(store: Store, run_id: str) -> RunInfo | None:
    """One run, or None."""
    return store.dashboard.run(run_id)


# ----------------------------------------------------------------------------------------- metrics
def summary_of(info: RunInfo) -> dict[str, dict[str, Any]]:
    """The per-metric summary of a run (``{"<evaluator>.<metric>": {n, mean, ci95, ...}}``); empty
    for a run that did not finish."""
    doc = (info.summary or {}).get("summary")
    return {str(k): v for k, v in doc.items() if isinstance(v, dict)} if isinstance(doc, dict) else {}


def split_key(key: str, evaluators: Sequence[str]) -> MetricRef:
    """``<evaluator>.<metric>`` split at the longest evaluator name that prefixes it (names may hold
    dots), else at the first dot."""
    for name in sorted(evaluators, key=len, reverse=True):
        if key.startswith(name + ".") and len(key) > len(name) + 1:
            return MetricRef(name, key[len(name) + 1:])
    head, _, tail = key.partition(".")
    return MetricRef(head, tail)


def has_metric(info: RunInfo, metric: str) -> bool:
    """Whether the run's summary has ``metric`` (``<evaluator>.<metric>`` or a metric name alone)."""
    evaluators = list(info.config.get("evaluators") or {})
    for key in summary_of(info):
        ref = split_key(key, evaluators)
        if metric in (key, ref.metric):
            return True
    return False


def run_metrics(store: Store, info: RunInfo) -> list[MetricRef]:
    """The metrics of a run: the summary's, or for a run without one (still running, aborted early)
    the distinct metrics of its typed score lines."""
    evaluators = list(info.config.get("evaluators") or {})
    summary = summary_of(info)
    if summary:
        return [split_key(k, evaluators) for k in summary]
    return store.dashboard.scored_metrics(info.id)


def main_metrics(info: RunInfo) -> list[str]:
    """The summary keys of each evaluator's main metric (what the runs list shows at a glance)."""
    keys = []
    for name, ev in (info.config.get("evaluators") or {}).items():
        metric = ev.get("metric") if isinstance(ev, dict) else None
        if metric:
            keys.append(f"{name}.{metric}")
    summary = summary_of(info)
    found = [k for k in keys if k in summary]
    return found or list(summary)[:6]


def find_metric(metrics: Sequence[MetricRef], wanted: str) -> MetricRef:
    """The metric named ``wanted`` (``<evaluator>.<metric>`` or a metric name alone)."""
    for ref in metrics:
        if wanted == ref.key:
            return ref
    matches = [ref for ref in metrics if ref.metric == wanted]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(ref.key for ref in metrics) or "none"
    raise QueryError(f"unknown metric {wanted!r}; this run has: {known}")


def metric_keys(metrics: Sequence[MetricRef]) -> list[str]:
    """The ``<evaluator>.<metric>`` key of each metric."""
    return [m.key for m in metrics]


def summary_rows(info: RunInfo) -> list[dict[str, Any]]:
    """The run's summary as table rows: the usual statistics by name, any other aggregate in
    ``extra``."""
    usual = {"n", "n_failed", "n_rows", "mean", "ci95", "std", "pass_rate", "n_passed", "higher_is_better"}
    out = []
    for key, s in summary_of(info).items():
        extra = {k: v for k, v in s.items() if k not in usual}
        out.append({"key": key, **{k: s.get(k) for k in usual}, "extra": extra})
    return finite_list(out)
