"""A run's row table: its filters checked, one page of rows with previews of their inputs and target
outputs, each metric's typed result and the users' feedback, and the input columns a filter can
name. The selection, its order and its paging are the store's (see
:meth:`~touchstone.store.dashboard.DashboardReads.row_indices`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from touchstone.people import feedback as fb
from touchstone.store.base import RunInfo, Store
from touchstone.store.dashboard import RowFilter
from touchstone.ui.views import Page, QueryError, find_metric, finite, finite_dict, run_metrics

PREVIEW_CHARS = 140
"""How much of a long text the row table shows (the row page shows everything)."""

def check_row_filter(f: RowFilter) -> None:
    """Raise :class:`~touchstone.ui.views.QueryError` saying what was expected when ``f`` cannot be
    applied."""
    if f.status not in ("", "ok", "failed"):
        raise QueryError(f"status must be 'ok' or 'failed', got {f.status!r}")
    if f.passed not in ("", "yes", "no"):
        raise QueryError(f"passed must be 'yes' or 'no', got {f.passed!r}")
    if f.sort not in ("idx", "value", "-value"):
        raise QueryError(f"sort must be 'idx', 'value' or '-value', got {f.sort!r}")
    for name, bound in (("min", f.min), ("max", f.max)):
        if bound is not None and not math.isfinite(bound):
            raise QueryError(f"{name} must be a finite number, got {bound!r}")
    if f.min is not None and f.max is not None and f.min > f.max:
        raise QueryError(f"min ({f.min:g}) is above max ({f.max:g})")
    if not f.metric and (f.min is not None or f.max is not None or f.passed or f.sort != "idx"):
        raise QueryError("a score range, a verdict filter or sorting by value needs a metric")
    if f.value and not f.column:
        raise QueryError("a column value filter needs a column")
    if f.feedback not in ("", *fb.ROW_FILTERS):
        raise QueryError(f"feedback must be one of {', '.join(fb.ROW_FILTERS)}, got {f.feedback!r}")
    if f.rating_max is not None and not math.isfinite(f.rating_max):
        raise QueryError(f"rating_max must be a finite number, got {f.rating_max!r}")


@dataclass
class RowLine:
    """One row of the row table: its index, a preview of its inputs and target outputs, and each
    metric's typed result."""

    idx: int
    source: str | None
    line: int | None
    inputs: dict[str, str]
    outputs: dict[str, str]
    target_error: str | None
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: bool = False
    interaction_id: str = ""
    feedback: dict[str, Any] = field(default_factory=dict)
    """The interaction's user feedback as columns (see :func:`~touchstone.people.feedback.run_feedback`);
    empty without any."""

    def as_dict(self) -> dict[str, Any]:
        return finite_dict(self.__dict__)


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as short text for the table (strings as they are, the rest as JSON), cut at ``limit``."""
    text = value if isinstance(value, str) else json.dumps(finite(value), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _previews(value: Any) -> dict[str, str]:
    return {str(k): preview(v) for k, v in value.items()} if isinstance(value, dict) else {}


def rows_page(store: Store, info: RunInfo, f: RowFilter, page: int = 1, size: int = 50) -> Page:
    """One page of a run's rows matching ``f``: their previews, typed scores and user feedback (four
    reads: the page's indices with the count, the page's rows, their score lines, their feedback)."""
    check_row_filter(f)
    reads = store.dashboard
    ref = find_metric(run_metrics(store, info), f.metric) if f.metric else None
    found = reads.row_indices(info.id, f, ref, size, (page - 1) * size)
    rows = reads.rows(info.id, found.indices)
    lines = []
    for idx in found.indices:
        r = rows[idx]
        lines.append(RowLine(
            idx, r.source, r.line, _previews(r.data), _previews(r.target), r.target_error,
            failed=r.target_error is not None, interaction_id=fb.interaction_id_of(info.id, idx, r.data),
        ))
    _attach_scores(store, info, lines)
    _attach_feedback(store, lines)
    return Page(lines, page, size, found.total)


def _attach_scores(store: Store, info: RunInfo, lines: list[RowLine]) -> None:
    if not lines:
        return
    by_idx = {line.idx: line for line in lines}
    evaluators = list(info.config.get("evaluators") or {})
    for s in store.dashboard.metric_scores(info.id, list(by_idx), evaluators or None):
        line = by_idx[s.idx]
        line.scores[f"{s.evaluator}.{s.metric}"] = {
            "value": s.value, "label": s.label, "status": s.status, "error_kind": s.error_kind,
            "passed": s.passed,
        }
        if s.status != "ok":
            line.failed = True


def _attach_feedback(store: Store, lines: list[RowLine]) -> None:
    """Each line's user feedback: one read for the page's interactions."""
    found = fb.feedback_columns(store, [line.interaction_id for line in lines]) if lines else {}
    for line in lines:
        line.feedback = found.get(line.interaction_id, {})


def input_columns(store: Store, info: RunInfo) -> list[str]:
    """The input columns of a run (the keys of its first row), for the column filter."""
    data = store.dashboard.first_inputs(info.id)
    return [str(k) for k in data] if isinstance(data, dict) else []
