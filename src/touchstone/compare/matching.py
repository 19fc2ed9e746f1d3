"""Reading two stored runs and pairing their rows: by each row's ``id`` field when both runs have
one on every row, else by position; what is left on either side is reported, never paired."""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

from touchstone.errors import InputValidationError, Problem
from touchstone.store.base import RunInfo, Store, StoredRow
from touchstone.store.comparisons import Cell

MatchBy = Literal["auto", "id", "index"]
ID_FIELD = "id"
_SHOWN = 5


class UnknownRunError(InputValidationError, LookupError):
    """A run id that is not in the store."""


@dataclass
class LoadedRun:
    """One run read from the store: its info, row ids by index, and cells by (evaluator, metric)."""

    info: RunInfo
    ids: dict[int, Any]
    """The ``id`` field of each stored row (None where a row has none), by row index."""
    cells: dict[tuple[str, str], dict[int, Cell]]
    indices: list[int]
    """Every row index of the run (stored rows, else the rows that have scores)."""
    store: Store | None = None

    def higher_is_better(self, evaluator: str, metric: str) -> bool | None:
        """The direction as the run's summary recorded it, or None when it did not."""
        summary = (self.info.summary or {}).get("summary", {})
        entry = summary.get(f"{evaluator}.{metric}") if isinstance(summary, dict) else None
        value = entry.get("higher_is_better") if isinstance(entry, dict) else None
        return value if isinstance(value, bool) else None

    def row(self, idx: int) -> StoredRow | None:
        """One stored input row (read when asked: a comparison itself needs only the ids)."""
        return None if self.store is None else self.store.comparisons.row(self.info.id, idx)

    def outputs(self, idx: int, evaluator: str) -> dict[str, Any] | None:
        """The compatible SDK's flat outputs of one evaluator on one row (None when not stored)."""
        return None if self.store is None else self.store.comparisons.outputs(self.info.id, idx, evaluator)


@dataclass
class RowMatch:
    """How the rows of runs A and B were paired."""

    match_by: Literal["id", "index"]
    pairs: list[tuple[Hashable, int, int]]
    """``(key, index in A, index in B)`` per matched row, in A's order."""
    unmatched_a: list[Hashable] = field(default_factory=list)
    unmatched_b: list[Hashable] = field(default_factory=list)


def load_run(store: Store, run_id: str) -> LoadedRun:
    """Read run ``run_id`` (raises :class:`UnknownRunError` when the store has no such run): its row
    ids and its typed score columns (the store's :class:`~touchstone.store.comparisons.ComparisonReads`),
    so no score object is built: a 100,000-row run reads in about a second."""
    info = store.get_run(run_id)
    if info is None:
        recent = ", ".join(r.id for r in store.list_runs(5)) or "none"
        message = f"no run {run_id!r} in the store {store.path} (recent runs: {recent})"
        raise UnknownRunError([Problem("run", None, None, message)])
    reads = store.comparisons
    ids = reads.row_ids(run_id, ID_FIELD)
    cells = reads.cells(run_id)
    indices = sorted(ids) if ids else sorted({i for col in cells.values() for i in col})
    return LoadedRun(info, ids, cells, indices, store)


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
        value = run.ids.get(idx)
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
