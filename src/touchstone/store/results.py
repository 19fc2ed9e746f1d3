"""The store's repository for what the engine reads back of a run's rows and results (a resume's
stored scores, the rows of a large run, the target's outputs, the corpus figures, the rows file).

Every query text lives here (portable SQL with ``?`` placeholders); callers outside ``store/`` use
the typed methods of :class:`ResultsRepository` only. Reads go by ranges of row indices
(``start <= idx < stop``) so a caller holds one page of a large run at a time; JSON columns come
back decoded.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from touchstone.scores import ScoreLine

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore


class FailedScore(NamedTuple):
    """A stored score line that is not ``ok``, with the kind of its error."""

    idx: int
    evaluator: str
    error_kind: str | None


class StoredResult(NamedTuple):
    """One evaluator's stored result on one row: its flat outputs and the usage spent on it."""

    idx: int
    evaluator: str
    outputs: dict[str, Any]
    usage: dict[str, Any] | None


class StoredOutputs(NamedTuple):
    """One evaluator's flat outputs on one row, and whether the result counts as failed."""

    idx: int
    evaluator: str
    outputs: dict[str, Any]
    failed: bool


class ResultOutputs(NamedTuple):
    """One evaluator's flat outputs on one row, and whether the result counts as failed (the value
    of :meth:`ResultsRepository.outputs_by_result`, keyed by row and evaluator)."""

    outputs: dict[str, Any]
    failed: bool


class RowInputs(NamedTuple):
    """A stored input row: its source, its data (None when not asked for), and the target's output
    or error."""

    source: str | None
    data: dict[str, Any] | None
    target: dict[str, Any] | None
    target_error: str | None


class TargetOutput(NamedTuple):
    """What the target gave on one row: its output, or why it has none."""

    idx: int
    target: dict[str, Any] | None
    error: str | None


@runtime_checkable
class ResultsRepository(Protocol):
    """What callers outside the store may ask of a run's rows and results."""

    def scored_rows(self, run_id: str, start: int, stop: int) -> dict[str, list[int]]:
        """Per evaluator, the rows among ``start`` to ``stop`` it has a stored result for."""
        ...

    def failed_scores(self, run_id: str) -> list[FailedScore]:
        """Every typed score line of the run whose status is not ``ok``."""
        ...

    def score_lines(self, run_id: str, evaluator: str, start: int, stop: int) -> dict[int, list[ScoreLine]]:
        """Evaluator ``evaluator``'s typed score lines by row, rows ``start`` to ``stop`` (each
        row's lines ordered by metric)."""
        ...

    def results(self, run_id: str, start: int, stop: int) -> list[StoredResult]:
        """Every evaluator's stored outputs and usage on rows ``start`` to ``stop``."""
        ...

    def outputs_by_result(
        self, run_id: str, start: int, stop: int
    ) -> dict[tuple[int, str], ResultOutputs]:
        """Every evaluator's stored outputs (and whether they failed) on rows ``start`` to ``stop``,
        by (row, evaluator)."""
        ...

    def evaluator_outputs(self, run_id: str, evaluator: str, start: int, stop: int) -> list[StoredOutputs]:
        """One evaluator's stored outputs on rows ``start`` to ``stop``, by row."""
        ...

    def row_inputs(
        self, run_id: str, start: int, stop: int, *, with_data: bool = True
    ) -> dict[int, RowInputs]:
        """The stored input rows ``start`` to ``stop``, by row index (``with_data=False``: their
        data is not read, the caller holds it)."""
        ...

    def target_outputs(
        self, run_id: str, start: int, stop: int, *, answered_only: bool = False
    ) -> list[TargetOutput]:
        """The target's output or error on the stored rows ``start`` to ``stop`` (``answered_only``:
        only the rows with either)."""
        ...

    def stored_row_indices(self, run_id: str, start: int, stop: int) -> list[int]:
        """The indices of the input rows stored among rows ``start`` to ``stop``."""
        ...


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


class SqlResultsRepository:
    """:class:`ResultsRepository` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql

    def scored_rows(self, run_id: str, start: int, stop: int) -> dict[str, list[int]]:
        by_evaluator: dict[str, list[int]] = {}
        for idx, name in self._sql._query(
            "SELECT idx, evaluator FROM scores WHERE run_id = ? AND idx >= ? AND idx < ?",
            (run_id, start, stop),
        ):
            got = by_evaluator.get(name)
            if got is None:
                by_evaluator[name] = [idx]
            else:
                got.append(idx)
        return by_evaluator

    def failed_scores(self, run_id: str) -> list[FailedScore]:
        rows = self._sql._query(
            "SELECT idx, evaluator, error_kind FROM score_values WHERE run_id = ? AND status <> 'ok'",
            (run_id,),
        )
        return [FailedScore(int(idx), str(name), kind) for idx, name, kind in rows]

    def score_lines(self, run_id: str, evaluator: str, start: int, stop: int) -> dict[int, list[ScoreLine]]:
        # The hot read of a resume (a ranking run has six lines per row): the lines are made as
        # the engine keeps them, with no record in between.
        by_row: dict[int, list[ScoreLine]] = {}
        for idx, metric, value, label, status, kind, passed in self._sql._query(
            "SELECT idx, metric, value, label, status, error_kind, passed FROM score_values "
            "WHERE run_id = ? AND evaluator = ? AND idx >= ? AND idx < ? ORDER BY idx, metric",
            (run_id, evaluator, start, stop),
        ):
            line: ScoreLine = (metric, value, label, status, kind, None if passed is None else bool(passed))
            got = by_row.get(idx)
            if got is None:
                by_row[idx] = [line]
            else:
                got.append(line)
        return by_row

    def results(self, run_id: str, start: int, stop: int) -> list[StoredResult]:
        rows = self._sql._query(
            "SELECT idx, evaluator, outputs, usage FROM scores WHERE run_id = ? AND idx >= ? AND idx < ?",
            (run_id, start, stop),
        )
        loads = json.loads
        return [
            StoredResult(int(idx), str(name), loads(text), _loads(usage)) for idx, name, text, usage in rows
        ]

    def outputs_by_result(
        self, run_id: str, start: int, stop: int
    ) -> dict[tuple[int, str], ResultOutputs]:
        # The hot read of a large run's rows (and of the rows file): one dict, no list in between.
        rows = self._sql._query(
            "SELECT idx, evaluator, outputs, failed FROM scores WHERE run_id = ? AND idx >= ? AND idx < ?",
            (run_id, start, stop),
        )
        loads = json.loads
        return {(idx, name): ResultOutputs(loads(text), bool(failed)) for idx, name, text, failed in rows}

    def evaluator_outputs(self, run_id: str, evaluator: str, start: int, stop: int) -> list[StoredOutputs]:
        rows = self._sql._query(
            "SELECT idx, outputs, failed FROM scores "
            "WHERE run_id = ? AND evaluator = ? AND idx >= ? AND idx < ? ORDER BY idx",
            (run_id, evaluator, start, stop),
        )
        loads = json.loads
        return [StoredOutputs(int(idx), evaluator, loads(text), bool(failed)) for idx, text, failed in rows]

    def row_inputs(
        self, run_id: str, start: int, stop: int, *, with_data: bool = True
    ) -> dict[int, RowInputs]:
        data_column = "data" if with_data else "NULL"
        rows = self._sql._query(
            f"SELECT idx, source, {data_column}, target, target_error FROM rows "
            "WHERE run_id = ? AND idx >= ? AND idx < ?",
            (run_id, start, stop),
        )
        loads = json.loads
        return {
            idx: RowInputs(source, loads(data) if data else None, loads(target) if target else None, error)
            for idx, source, data, target, error in rows
        }

    def target_outputs(
        self, run_id: str, start: int, stop: int, *, answered_only: bool = False
    ) -> list[TargetOutput]:
        sql = "SELECT idx, target, target_error FROM rows WHERE run_id = ? AND idx >= ? AND idx < ?"
        if answered_only:
            sql += " AND (target IS NOT NULL OR target_error IS NOT NULL)"
        rows = self._sql._query(sql, (run_id, start, stop))
        return [TargetOutput(int(idx), _loads(target), error) for idx, target, error in rows]

    def stored_row_indices(self, run_id: str, start: int, stop: int) -> list[int]:
        rows = self._sql._query(
            "SELECT idx FROM rows WHERE run_id = ? AND idx >= ? AND idx < ?", (run_id, start, stop)
        )
        return [int(idx) for (idx,) in rows]
