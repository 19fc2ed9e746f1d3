"""Reading two stored runs and pairing their rows: by each row's ``id`` field when both runs have
one on every row, else by position; what is left on either side is reported, never paired."""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from touchstone.errors import InputValidationError, Problem
from touchstone.scores import Status
from touchstone.store.base import RunInfo, ScoreValue, Store, StoredRow

MatchBy = Literal["auto", "id", "index"]
ID_FIELD = "id"
_SHOWN = 5


class UnknownRunError(InputValidationError, LookupError):
    """A run id that is not in the store."""


@dataclass(frozen=True)
class Cell:
    """One metric of one row: its value when it was obtained, whether it failed, its pass flag."""

    value: float | None
    failed: bool
    passed: bool | None


@dataclass
class LoadedRun:
    """One run read from the store: its info, input rows by index, and cells by (evaluator, metric)."""

    info: RunInfo
    rows: dict[int, StoredRow]
    cells: dict[tuple[str, str], dict[int, Cell]]
    indices: list[int]
    """Every row index of the run (stored rows, else the rows that have scores)."""

    def higher_is_better(self, evaluator: str, metric: str) -> bool | None:
        """The direction as the run's summary recorded it, or None when it did not."""
        summary = (self.info.summary or {}).get("summary", {})
        entry = summary.get(f"{evaluator}.{metric}") if isinstance(summary, dict) else None
        value = entry.get("higher_is_better") if isinstance(entry, dict) else None
        return value if isinstance(value, bool) else None


@dataclass
class RowMatch:
    """How the rows of runs A and B were paired."""

    match_by: Literal["id", "index"]
    pairs: list[tuple[Hashable, int, int]]
    """``(key, index in A, index in B)`` per matched row, in A's order."""
    unmatched_a: list[Hashable] = field(default_factory=list)
    unmatched_b: list[Hashable] = field(default_factory=list)


def load_run(store: Store, run_id: str) -> LoadedRun:
    """Read run ``run_id`` (raises :class:`UnknownRunError` when the store has no such run)."""
    info = store.get_run(run_id)
    if info is None:
        recent = ", ".join(r.id for r in store.list_runs(5)) or "none"
        message = f"no run {run_id!r} in the store {store.path} (recent runs: {recent})"
        raise UnknownRunError([Problem("run", None, None, message)])
    rows = {r.idx: r for r in store.get_rows(run_id)}
    cells: dict[tuple[str, str], dict[int, Cell]] = {}
    for sv in store.score_values(run_id):
        cells.setdefault((sv.evaluator, sv.metric), {})[sv.idx] = _cell(sv)
    indices = sorted(rows) if rows else sorted({i for column in cells.values() for i in column})
    return LoadedRun(info, rows, cells, indices)


def _cell(sv: ScoreValue) -> Cell:
    failed = sv.status is not Status.OK
    value = None if failed or sv.value is None else float(sv.value)
    return Cell(value, failed, sv.passed)


def _key(value: Any) -> Hashable:
    """An id as a dictionary key: strings and integers as they are, anything else as canonical JSON."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _ids(run: LoadedRun) -> tuple[dict[Hashable, int], int]:
    """``{id: index}`` of the rows that have an ``id``, and how many have none; duplicates raise."""
    found: dict[Hashable, int] = {}
    missing = 0
    duplicates: list[str] = []
    for idx in run.indices:
        row = run.rows.get(idx)
        value = None if row is None else row.data.get(ID_FIELD)
        if value is None:
            missing += 1
            continue
        key = _key(value)
        if key in found:
            duplicates.append(repr(key))
        found[key] = idx
    if duplicates:
        raise InputValidationError([Problem(
            f"run {run.info.id}", None, ID_FIELD,
            f"row ids must be unique to pair rows; repeated: {', '.join(duplicates[:_SHOWN])}"
            + (f" and {len(duplicates) - _SHOWN} more" if len(duplicates) > _SHOWN else "")
            + " (match by position with match_by='index' / --match-by index)",
        )])
    return found, missing


def match_rows(a: LoadedRun, b: LoadedRun, match_by: MatchBy = "auto") -> RowMatch:
    """Pair the rows of ``a`` and ``b``.

    ``"auto"``: by the ``id`` field when every row of both runs has one, by position when no row of
    either has one; ids on some rows only raise :class:`InputValidationError` (a guess would pair
    rows silently). ``"id"``: ids required on every row. ``"index"``: by row position."""
    if match_by not in ("auto", "id", "index"):
        raise InputValidationError(f"match_by must be 'auto', 'id' or 'index', not {match_by!r}")
    if match_by == "index":
        return _by_index(a, b)
    ids_a, missing_a = _ids(a)
    ids_b, missing_b = _ids(b)
    if match_by == "auto" and not ids_a and not ids_b:
        return _by_index(a, b)
    problems = [
        Problem(f"run {run.info.id}", None, ID_FIELD,
                f"{missing} of {len(run.indices)} rows have no id; every row needs one to pair rows by id "
                "(or match by position with match_by='index' / --match-by index)")
        for run, missing in ((a, missing_a), (b, missing_b)) if missing
    ]
    if problems:
        raise InputValidationError(problems)
    pairs = [(key, ia, ids_b[key]) for key, ia in ids_a.items() if key in ids_b]
    return RowMatch(
        "id", pairs,
        unmatched_a=[key for key in ids_a if key not in ids_b],
        unmatched_b=[key for key in ids_b if key not in ids_a],
    )


def _by_index(a: LoadedRun, b: LoadedRun) -> RowMatch:
    in_b = set(b.indices)
    in_a = set(a.indices)
    return RowMatch(
        "index",
        [(i, i, i) for i in a.indices if i in in_b],
        unmatched_a=[i for i in a.indices if i not in in_b],
        unmatched_b=[i for i in b.indices if i not in in_a],
    )


def run_brief(run: LoadedRun) -> dict[str, Any]:
    """What a comparison says of a run: id, name, start, status, data source."""
    info = run.info
    return {"id": info.id, "name": info.name, "started": info.started, "status": info.status,
            "data": info.config.get("data")}
