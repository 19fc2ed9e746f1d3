"""Hand-built runs written to a real store, for comparisons whose expected numbers are computed here
from their definitions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from touchstone.scores import STATUS, ScoreLine, score_line
from touchstone.store.base import ScoreRecord, Store, StoredRow

FAIL = "fail"
"""A cell value meaning: the score of this row failed (status failed, no value)."""

Cell = float | str | None
"""A number, :data:`FAIL`, or None (the row has no result for this evaluator)."""


def put_run(
    store: Store,
    ids: Sequence[Any] | None,
    columns: Mapping[tuple[str, str], Sequence[Cell]],
    *,
    thresholds: Mapping[tuple[str, str], float] | None = None,
    lower_is_better: Sequence[tuple[str, str]] = (),
    n_rows: int | None = None,
    summary: bool = True,
) -> str:
    """A finished run with one row per id (``ids=None``: rows without an ``id`` field, ``n_rows`` of
    them) and, per ``(evaluator, metric)``, one cell per row. ``thresholds`` gives pass flags
    (``value >= t``, or ``<= t`` for a lower-is-better metric); the summary records each metric's
    direction unless ``summary`` is False."""
    count = len(next(iter(columns.values()))) if n_rows is None else n_rows
    if ids is not None:
        count = len(ids)
    run_id = store.create_run({"data": "hand-built", "evaluators": {}}, None, "test")
    rows = [StoredRow(i, "hand-built", i + 1, {} if ids is None else {"id": ids[i]}, None, None)
            for i in range(count)]
    store.put_rows(run_id, rows)
    by_evaluator: dict[str, dict[int, list[ScoreLine]]] = {}
    for (evaluator, metric), cells in columns.items():
        lower = (evaluator, metric) in lower_is_better
        limit = (thresholds or {}).get((evaluator, metric))
        for idx, cell in enumerate(cells):
            if cell is None:
                continue
            lines = by_evaluator.setdefault(evaluator, {}).setdefault(idx, [])
            if cell == FAIL:
                lines.append(score_line(metric, None, None, "failed", "judge_reply", None))
                continue
            value = float(cell)
            flag = None if limit is None else int(value <= limit if lower else value >= limit)
            lines.append(score_line(metric, value, None, "ok", None, flag))
    for evaluator, per_row in by_evaluator.items():
        store.put_scores(run_id, evaluator, [
            ScoreRecord(idx, {}, any(line[STATUS] == "failed" for line in lines), None, lines)
            for idx, lines in sorted(per_row.items())
        ])
    entries = {f"{e}.{m}": {"higher_is_better": (e, m) not in lower_is_better} for e, m in columns}
    store.finish_run(run_id, "completed", {}, {"summary": entries} if summary else {})
    return run_id
