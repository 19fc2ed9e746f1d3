"""The store's repository for the dashboard's read models: the runs list, a run's page of rows,
one row's results, histograms, trends.

Every query text lives here and in :mod:`touchstone.store.dashboard_filters` (the lists'
conditions), as portable SQL with ``?`` placeholders; the few fragments that differ between SQLite
and PostgreSQL are picked by the store's dialect. Paging, search and the score filters run in the
database (``LIMIT``/``OFFSET``, conditions over ``score_values``), so a page of a 100,000-row run
costs one page of rows, not the run. Callers outside ``store/`` use the typed methods of
:class:`DashboardReads` and the records below only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from touchstone.store.base import RunInfo
from touchstone.store.dashboard_filters import (
    RowFilter,
    RunSelection,
    floor_expression,
    row_condition,
    run_condition,
)
from touchstone.store.people import row_filter_sql

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore

__all__ = [
    "DashboardReads",
    "EvaluatorResult",
    "IndexPage",
    "LabelCount",
    "MetricRef",
    "MetricScore",
    "MetricStats",
    "RowFilter",
    "RowRecord",
    "RunSelection",
    "SqlDashboardReads",
]


# ----------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class MetricRef:
    """One metric of a run: the evaluator that produced it and the metric's name (the summary's key
    is ``<evaluator>.<metric>``)."""

    evaluator: str
    metric: str

    @property
    def key(self) -> str:
        return f"{self.evaluator}.{self.metric}"


@dataclass(frozen=True)
class IndexPage:
    """One page of a run's selected rows: their indices in the page's order, and how many rows the
    selection holds in all."""

    indices: list[int]
    total: int


class RowRecord(NamedTuple):
    """One input row of a run with its JSON decoded (None where the stored text is not JSON). A
    named tuple: a page makes one per row, and it is cheap to build."""

    idx: int
    source: str | None
    line: int | None
    data: Any
    target: Any
    target_error: str | None


class MetricScore(NamedTuple):
    """One metric's typed result on one row (``status`` as stored: ``ok`` or ``failed``). A named
    tuple: a page makes one per row and metric, and it is cheap to build."""

    idx: int
    evaluator: str
    metric: str
    value: float | None
    label: str | None
    status: str
    error_kind: str | None
    passed: bool | None


@dataclass(frozen=True)
class EvaluatorResult:
    """One evaluator's stored result on one row: its flat outputs and usage decoded."""

    evaluator: str
    outputs: Any
    failed: bool
    usage: Any


@dataclass
class MetricStats:
    """What one pass over a metric's lines finds: the lowest and highest value, how many values and
    failures, how many values are not whole (values of a million or more are not counted), and the
    failures by error kind (``unknown`` where none was recorded)."""

    lo: float | None = None
    hi: float | None = None
    n: int = 0
    n_failed: int = 0
    fractional: int = 0
    failures: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LabelCount:
    """How many lines of a metric carry one label."""

    label: str
    count: int


def _loads(text: Any) -> Any:
    """A JSON column decoded; None for text that is not JSON (a damaged line shows as missing)."""
    if text is None or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return None


_RUN_COLUMNS = "id, name, started, finished, status, config, metrics, summary, version"
_ROW_COLUMNS = "idx, source, line, data, target, target_error"
_SCORE_COLUMNS = "idx, evaluator, metric, value, label, status, error_kind, passed"
_ONE_METRIC = "score_values WHERE run_id = ? AND evaluator = ? AND metric = ?"


def _run(row: Sequence[Any]) -> RunInfo:
    return RunInfo(
        id=str(row[0]), name=row[1], started=str(row[2]), finished=row[3], status=str(row[4]),
        config=_loads(row[5]) or {}, metrics=_loads(row[6]), summary=_loads(row[7]), version=row[8],
    )


def _row(r: Sequence[Any]) -> RowRecord:
    return RowRecord(r[0], r[1], r[2], _loads(r[3]), _loads(r[4]), r[5])


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" for _ in values)


# ---------------------------------------------------------------------------------------- protocol
@runtime_checkable
class DashboardReads(Protocol):
    """What callers outside the store may ask of it: the dashboard's read models."""

    def run(self, run_id: str) -> RunInfo | None:
        """One run (its JSON columns read leniently: a damaged document is None), or None."""
        ...

    def runs(self, sel: RunSelection, limit: int | None = None, offset: int = 0) -> list[RunInfo]:
        """The runs ``sel`` selects, newest first (then by id, descending), ``limit`` of them from
        ``offset`` (all when ``limit`` is None)."""
        ...

    def count_runs(self, sel: RunSelection) -> int:
        """How many runs ``sel`` selects."""
        ...

    def run_statuses(self) -> set[str]:
        """The statuses the store's runs have."""
        ...

    def scored_metrics(self, run_id: str) -> list[MetricRef]:
        """The distinct metrics of a run's typed score lines, by evaluator then metric."""
        ...

    def row_indices(self, run_id: str, f: RowFilter, metric: MetricRef | None, limit: int,
                    offset: int) -> IndexPage:
        """One page of the rows ``f`` selects (``metric``: the metric ``f.metric`` names), ordered
        by index or by the metric's value (missing values last, then by index)."""
        ...

    def rows(self, run_id: str, indices: Sequence[int]) -> dict[int, RowRecord]:
        """Some rows of a run, by index (an index with no row is left out)."""
        ...

    def row(self, run_id: str, idx: int) -> RowRecord | None:
        """One row of a run, or None."""
        ...

    def first_inputs(self, run_id: str) -> Any:
        """The decoded inputs of a run's first row (None without rows)."""
        ...

    def metric_scores(self, run_id: str, indices: Sequence[int],
                      evaluators: Sequence[str] | None = None) -> list[MetricScore]:
        """The typed score lines of some rows (of ``evaluators`` only, when given), by evaluator,
        row and metric."""
        ...

    def evaluator_results(self, run_id: str, idx: int) -> list[EvaluatorResult]:
        """Each evaluator's stored result on one row, by evaluator."""
        ...

    def metric_stats(self, run_id: str, ref: MetricRef) -> MetricStats:
        """One pass over a metric's lines: range, counts, failures by kind."""
        ...

    def value_counts(self, run_id: str, ref: MetricRef) -> dict[float, int]:
        """How many lines of a metric hold each value (lines without a value left out)."""
        ...

    def count_values(self, run_id: str, ref: MetricRef) -> int:
        """How many lines of a metric hold a value."""
        ...

    def bin_counts(self, run_id: str, ref: MetricRef, lo: float, hi: float, bins: int) -> list[int]:
        """A metric's values counted in ``bins`` equal bins from ``lo`` to ``hi`` (``hi > lo``): the
        bin of a value is ``floor((value - lo) * bins / (hi - lo))``, the highest in the last bin."""
        ...

    def label_counts(self, run_id: str, ref: MetricRef, limit: int = 20) -> list[LabelCount]:
        """A metric's most frequent labels with their counts, the most frequent first."""
        ...

    def rows_with_feedback(self, run_id: str, having: str = "",
                           rating_at_most: float | None = None) -> set[int]:
        """The rows of a run whose interaction got user feedback ``having`` (see
        :data:`~touchstone.store.people.ROW_FILTERS`) and/or a mean rating at
        most ``rating_at_most``. Raises :class:`~touchstone.errors.InputValidationError` for an
        unknown ``having``."""
        ...


# ------------------------------------------------------------------------------------ SQL version
class SqlDashboardReads:
    """:class:`DashboardReads` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql

    @property
    def _dialect(self) -> str:
        return self._sql.dialect.name

    # runs
    def run(self, run_id: str) -> RunInfo | None:
        rows = self._sql._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    def runs(self, sel: RunSelection, limit: int | None = None, offset: int = 0) -> list[RunInfo]:
        where, args = run_condition(sel)
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE {where} ORDER BY started DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?" if offset else " LIMIT ?"
            args += [limit, offset] if offset else [limit]
        return [_run(r) for r in self._sql._query(sql, args)]

    def count_runs(self, sel: RunSelection) -> int:
        where, args = run_condition(sel)
        return int(self._sql._query(f"SELECT COUNT(*) FROM runs WHERE {where}", args)[0][0])

    def run_statuses(self) -> set[str]:
        return {str(r[0]) for r in self._sql._query("SELECT DISTINCT status FROM runs")}

    def scored_metrics(self, run_id: str) -> list[MetricRef]:
        rows = self._sql._query(
            "SELECT DISTINCT evaluator, metric FROM score_values WHERE run_id = ? ORDER BY evaluator, metric",
            (run_id,))
        return [MetricRef(str(e), str(m)) for e, m in rows]

    # rows
    def row_indices(self, run_id: str, f: RowFilter, metric: MetricRef | None, limit: int,
                    offset: int) -> IndexPage:
        resolved = None if metric is None else (metric.evaluator, metric.metric)
        where, args = row_condition(self._dialect, run_id, f, resolved)
        # With filters the total comes with the page (COUNT(*) OVER ()): the filters are evaluated
        # once, not once for the count and again for the page. Without, the count is a cheap range
        # of the key.
        filtered = where != "r.run_id = ?"
        count = ", COUNT(*) OVER ()" if filtered else ""
        if metric is not None and f.sort != "idx":
            # The metric's value by a lookup on score_values' whole key per row, not a join: a join's
            # plan depends on the planner's statistics, and on a run just written (PostgreSQL before
            # its ANALYZE) it was a nested loop over every pair of rows; the lookup is linear whatever
            # the statistics say.
            value = ("(SELECT sv.value FROM score_values sv WHERE sv.run_id = r.run_id AND sv.evaluator = ? "
                     "AND sv.idx = r.idx AND sv.metric = ?)")
            order = f"{value}{' DESC' if f.sort == '-value' else ''} NULLS LAST, r.idx"
            # the parameters of the order come after the condition's in the text
            params = [*args, metric.evaluator, metric.metric, limit, offset]
        else:
            order = "r.idx"
            params = [*args, limit, offset]
        # the page's indices only: the sort carries no row data
        got = self._sql._query(
            f"SELECT r.idx{count} FROM rows r WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?", params)
        indices = [int(r[0]) for r in got]
        if filtered and got:
            total = int(got[0][1])
        else:  # no filter, or a page past the end: counted on its own
            total = int(self._sql._query(f"SELECT COUNT(*) FROM rows r WHERE {where}", args)[0][0])
        return IndexPage(indices, total)

    def rows(self, run_id: str, indices: Sequence[int]) -> dict[int, RowRecord]:
        if not indices:
            return {}
        found = self._sql._query(
            f"SELECT {_ROW_COLUMNS} FROM rows WHERE run_id = ? AND idx IN ({_marks(indices)})",
            [run_id, *indices])
        return {r[0]: _row(r) for r in found}

    def row(self, run_id: str, idx: int) -> RowRecord | None:
        found = self._sql._query(f"SELECT {_ROW_COLUMNS} FROM rows WHERE run_id = ? AND idx = ?",
                                 (run_id, idx))
        return _row(found[0]) if found else None

    def first_inputs(self, run_id: str) -> Any:
        found = self._sql._query("SELECT data FROM rows WHERE run_id = ? ORDER BY idx LIMIT 1", (run_id,))
        return _loads(found[0][0]) if found else None

    def metric_scores(self, run_id: str, indices: Sequence[int],
                      evaluators: Sequence[str] | None = None) -> list[MetricScore]:
        if not indices or (evaluators is not None and not evaluators):
            return []
        sql = f"SELECT {_SCORE_COLUMNS} FROM score_values WHERE run_id = ? AND idx IN ({_marks(indices)})"
        args: list[Any] = [run_id, *indices]
        if evaluators is not None:  # the key's prefix (run, evaluator, idx): one lookup per (evaluator, row)
            sql += f" AND evaluator IN ({_marks(evaluators)})"
            args += evaluators
        # the columns come back typed (integer index, text names and status): only passed, kept
        # as 0/1, is converted
        return [
            MetricScore(idx, ev, metric, value, label, status, kind, None if passed is None else passed == 1)
            for idx, ev, metric, value, label, status, kind, passed in self._sql._query(
                sql + " ORDER BY evaluator, idx, metric", args)
        ]

    def evaluator_results(self, run_id: str, idx: int) -> list[EvaluatorResult]:
        found = self._sql._query(
            "SELECT evaluator, outputs, failed, usage FROM scores WHERE run_id = ? AND idx = ? "
            "ORDER BY evaluator", (run_id, idx))
        return [EvaluatorResult(str(ev), _loads(out), bool(failed), _loads(usage))
                for ev, out, failed, usage in found]

    # distributions
    def metric_stats(self, run_id: str, ref: MetricRef) -> MetricStats:
        # CAST(value AS INTEGER) truncates in SQLite and rounds in PostgreSQL: either way it equals
        # the value exactly when the value is whole, which is all this asks. Large values are not cast.
        rows = self._sql._query(
            "SELECT error_kind, MIN(value), MAX(value), COUNT(value), "
            "SUM(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN value IS NULL OR ABS(value) >= 1000000 THEN 0 "
            "WHEN value <> CAST(value AS INTEGER) THEN 1 ELSE 0 END) "
            f"FROM {_ONE_METRIC} GROUP BY error_kind", (run_id, ref.evaluator, ref.metric))
        stats = MetricStats()
        for kind, lo, hi, n, n_failed, fractional in rows:
            if lo is not None:
                stats.lo = lo if stats.lo is None else min(stats.lo, lo)
                stats.hi = hi if stats.hi is None else max(stats.hi, hi)
            stats.n += int(n or 0)
            stats.n_failed += int(n_failed or 0)
            stats.fractional += int(fractional or 0)
            if n_failed:
                stats.failures[str(kind or "unknown")] = int(n_failed)
        return stats

    def value_counts(self, run_id: str, ref: MetricRef) -> dict[float, int]:
        found = self._sql._query(
            f"SELECT value, COUNT(*) FROM {_ONE_METRIC} AND value IS NOT NULL GROUP BY value",
            (run_id, ref.evaluator, ref.metric))
        return {float(v): int(c) for v, c in found}

    def count_values(self, run_id: str, ref: MetricRef) -> int:
        return int(self._sql._query(f"SELECT COUNT(*) FROM {_ONE_METRIC} AND value IS NOT NULL",
                                    (run_id, ref.evaluator, ref.metric))[0][0])

    def bin_counts(self, run_id: str, ref: MetricRef, lo: float, hi: float, bins: int) -> list[int]:
        # one GROUP BY: the bin of each value computed by the database
        floor = floor_expression(self._dialect, "(value - ?) * ?")
        counts = [0] * bins
        for b, c in self._sql._query(
                f"SELECT {floor} AS b, COUNT(*) FROM {_ONE_METRIC} AND value IS NOT NULL GROUP BY 1",
                (lo, bins / (hi - lo), run_id, ref.evaluator, ref.metric)):
            counts[min(bins - 1, int(b))] += int(c)
        return counts

    def label_counts(self, run_id: str, ref: MetricRef, limit: int = 20) -> list[LabelCount]:
        found = self._sql._query(
            f"SELECT label, COUNT(*) FROM {_ONE_METRIC} AND label IS NOT NULL GROUP BY label "
            "ORDER BY COUNT(*) DESC LIMIT ?", (run_id, ref.evaluator, ref.metric, limit))
        return [LabelCount(str(label), int(c)) for label, c in found]

    # feedback
    def rows_with_feedback(self, run_id: str, having: str = "",
                           rating_at_most: float | None = None) -> set[int]:
        clause, params = row_filter_sql(self._dialect, having, rating_at_most, "r")
        found = self._sql._query(
            "SELECT r.idx FROM rows r WHERE r.run_id = ?" + (f" AND {clause}" if clause else ""),
            [run_id, *params])
        return {int(r[0]) for r in found}
