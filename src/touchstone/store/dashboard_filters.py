"""The conditions of the dashboard's lists as SQL text: which runs (name, dates, status, a metric in
the summary) and which rows of a run (text, a metric's range and verdict, an input column's value,
users' feedback), for :class:`~touchstone.store.dashboard.SqlDashboardReads`.

Each builder returns a condition in portable SQL (``?`` placeholders) and its parameters; where the
backends differ (JSON functions, the floor of a number) the dialect's name (``sqlite`` or
``postgresql``) picks the text. Values are always parameters, never spliced into the text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from touchstone.store.people import json_data_sql, row_filter_sql

ESCAPE = "\\"
LIKE_ESCAPE = f" ESCAPE '{ESCAPE}'"


def like_pattern(text: str) -> str:
    """``%text%`` for ``LIKE ... ESCAPE '\\'``, with the wildcards of ``text`` taken literally."""
    for ch in (ESCAPE, "%", "_"):
        text = text.replace(ch, ESCAPE + ch)
    return f"%{text}%"


def json_text(text: str) -> str:
    """``text`` as it appears inside a JSON string in the store's columns (quotes, backslashes and
    control characters escaped), so a search for ``say "hi"`` finds it in the encoded data."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


# ------------------------------------------------------------------------------------------ runs
@dataclass(frozen=True)
class RunSelection:
    """Which runs a list holds: ``name`` a part of the run's name (compared lower-cased), started at
    or after ``since`` and before ``before`` (ISO 8601 text, as the store keeps ``started``), of
    ``status``, and whose summary document contains the metric name ``metric`` (a cheap text test:
    the caller checks the decoded summary). Empty fields select everything."""

    name: str = ""
    since: str = ""
    before: str = ""
    status: str = ""
    metric: str = ""


def run_condition(sel: RunSelection) -> tuple[str, list[Any]]:
    """The condition on ``runs`` selecting ``sel``'s runs, and its parameters."""
    where, args = ["1 = 1"], []
    if sel.name:
        where.append("LOWER(COALESCE(name, '')) LIKE ?" + LIKE_ESCAPE)
        args.append(like_pattern(sel.name.lower()))
    if sel.since:
        where.append("started >= ?")
        args.append(sel.since)
    if sel.before:
        where.append("started < ?")
        args.append(sel.before)
    if sel.status:
        where.append("status = ?")
        args.append(sel.status)
    if sel.metric:
        where.append("summary LIKE ?" + LIKE_ESCAPE)
        args.append(like_pattern(json_text(sel.metric)))
    return " AND ".join(where), args


# ------------------------------------------------------------------------------------------ rows
@dataclass(frozen=True)
class RowFilter:
    """The row table's filters and order.

    ``q``: text in the row's inputs, target outputs or target error (case-insensitive); ``metric``
    (``<evaluator>.<metric>``) with ``min``/``max`` (its value in that range), ``passed`` (``yes`` /
    ``no``: its verdict) and, when given, the ``status`` filter (``ok`` / ``failed``) applies to that
    metric, else to any evaluator of the row; ``column``/``value``: an input column whose value
    contains the text; ``sort``: ``idx`` (default), ``value`` or ``-value`` (the metric's value,
    missing values last); ``feedback``: rows whose interaction got user feedback of that sort (one
    of :data:`touchstone.store.people.ROW_FILTERS`: ``any``, ``none``, ``failure`` or a kind such as
    ``thumbs_down``); ``rating_max``: rows whose users' mean rating is at most that."""

    q: str = ""
    metric: str = ""
    min: float | None = None
    max: float | None = None
    status: str = ""
    passed: str = ""
    column: str = ""
    value: str = ""
    sort: str = "idx"
    feedback: str = ""
    rating_max: float | None = None


def _metric_condition(run_id: str, f: RowFilter, evaluator: str, metric: str) -> tuple[str, list[Any]]:
    conds: list[str] = []
    extra: list[Any] = []
    if f.min is not None:
        conds.append("value >= ?")
        extra.append(f.min)
    if f.max is not None:
        conds.append("value <= ?")
        extra.append(f.max)
    if f.status:
        conds.append("status = 'ok'" if f.status == "ok" else "status <> 'ok'")
    if f.passed:
        conds.append("passed = ?")
        extra.append(1 if f.passed == "yes" else 0)
    if not conds:
        return "", []
    return ("r.idx IN (SELECT idx FROM score_values WHERE run_id = ? AND evaluator = ? AND metric = ? AND "
            + " AND ".join(conds) + ")"), [run_id, evaluator, metric, *extra]


def row_condition(
    dialect: str, run_id: str, f: RowFilter, metric: tuple[str, str] | None
) -> tuple[str, list[Any]]:
    """The condition on ``rows r`` keeping the rows of ``run_id`` that ``f`` selects (``metric``:
    the (evaluator, metric) ``f.metric`` names, resolved by the caller), and its parameters."""
    where: list[str] = ["r.run_id = ?"]
    args: list[Any] = [run_id]
    if f.q.strip():
        pattern = like_pattern(json_text(f.q.strip()).lower())
        where.append(f"(LOWER(r.data) LIKE ?{LIKE_ESCAPE}"
                     f" OR LOWER(COALESCE(r.target, '')) LIKE ?{LIKE_ESCAPE}"
                     f" OR LOWER(COALESCE(r.target_error, '')) LIKE ?{LIKE_ESCAPE})")
        args += [pattern, pattern, like_pattern(f.q.strip().lower())]
    if metric is not None:
        clause, extra = _metric_condition(run_id, f, *metric)
        if clause:
            where.append(clause)
            args += extra
    elif f.status:
        # the typed lines, not the JSON results: a narrow table, about a fifth of the time on 100,000 rows
        failed = "r.idx IN (SELECT idx FROM score_values WHERE run_id = ? AND status <> 'ok')"
        where.append(f"(r.target_error IS NOT NULL OR {failed})" if f.status == "failed"
                     else f"(r.target_error IS NULL AND NOT {failed})")
        args.append(run_id)
    if f.column:
        clause, extra = column_condition(dialect, f.column, f.value)
        where.append(clause)
        args += extra
    if f.feedback or f.rating_max is not None:
        clause, extra = row_filter_sql(dialect, f.feedback, f.rating_max, "r")
        where.append(clause)
        args += extra
    return " AND ".join(where), args


def column_condition(dialect: str, column: str, value: str) -> tuple[str, list[Any]]:
    """The rows whose input ``column`` contains ``value`` (case-insensitive), per backend: the JSON
    functions differ between SQLite and PostgreSQL."""
    pattern = like_pattern(value.lower())
    data = json_data_sql(dialect, "r")  # NaN and infinities as null: valid JSON for both
    if dialect == "postgresql":
        return f"LOWER(CAST({data} AS jsonb) ->> ?) LIKE ?" + LIKE_ESCAPE, [column, pattern]
    # json_each: any key, quotes and dots included, passed as a parameter, never spliced into a path
    return (f"EXISTS (SELECT 1 FROM json_each({data}) je WHERE je.key = ? "
            "AND LOWER(CAST(je.value AS TEXT)) LIKE ?" + LIKE_ESCAPE + ")"), [column, pattern]


def floor_expression(dialect: str, expression: str) -> str:
    """The floor of a non-negative ``expression`` as an integer: SQLite's ``CAST`` truncates (so
    floors it); PostgreSQL's rounds, so there it is ``FLOOR``."""
    return f"FLOOR({expression})" if dialect == "postgresql" else f"CAST({expression} AS INTEGER)"
