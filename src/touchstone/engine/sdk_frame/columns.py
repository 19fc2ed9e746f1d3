"""The SDK frame's columns and rows, built from outputs held in memory (a small run's rows).

:meth:`Columns.of` makes one part of the frame (the data, the target's outputs, one evaluator's
outputs) column by column; :func:`sdk_rows` joins the parts into ``evaluate()``'s rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from touchstone.engine.sdk_frame.values import (
    MISSING,
    PER_TURN,
    Kind,
    coerce,
    flatten_dict,
    is_null,
    keys_in_order,
    leaf_paths,
    leaf_value,
)


class Columns:
    """An evaluator's (or a target's) outputs over all rows, as the SDK's frame holds them: ordered
    column names, each column's values (one per row) and its kind."""

    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.values: dict[str, list[Any]] = {}
        self.kinds: dict[str, Kind] = {}

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any] | None], *, spread: bool = True) -> Columns:
        """The columns of ``rows`` (None: a row with no outputs, e.g. one whose evaluator failed).
        With ``spread``, an ``evaluation_per_turn`` dict becomes ``evaluation_per_turn.<key>``
        columns, placed after the others (the SDK drops the dict column and appends its parts)."""
        cols = cls(len(rows))
        later: list[tuple[str, list[Any]]] = []
        present = [r for r in rows if r is not None]
        shapes = dict.fromkeys(tuple(r) for r in present)
        whole: dict[str, list[Any]] = {}
        if len(shapes) == 1 and len(present) == len(rows):  # the same keys on every row: one transpose
            transposed = zip(*[r.values() for r in present], strict=True)
            whole = dict(zip(next(iter(shapes)), map(list, transposed), strict=True))
        for key in dict.fromkeys(k for shape in shapes for k in shape):
            column = whole.get(key) or [MISSING if r is None else r.get(key, MISSING) for r in rows]
            if spread and PER_TURN in key and _first_present_is_dict(column):
                later.append((key, column))
            else:
                cols.values[key], cols.kinds[key] = coerce(column)
        for key, column in later:
            flat: list[dict[str, Any]] = []
            for value in column:
                parts: dict[str, Any] = {}
                if isinstance(value, Mapping):
                    flatten_dict(value, key, parts)
                flat.append(parts)
            for sub in keys_in_order(flat):
                cols.values[sub], cols.kinds[sub] = coerce([p.get(sub, MISSING) for p in flat])
        return cols

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as ``{column: value}``."""
        return {key: column[i] for key, column in self.values.items()}


def _first_present_is_dict(column: list[Any]) -> bool:
    first = next((v for v in column if not is_null(v)), None)
    return isinstance(first, Mapping)


def evaluator_columns(outputs: Sequence[Mapping[str, Any] | None], failed: Sequence[bool]) -> Columns:
    """An evaluator's columns: a failed row counts as a row without outputs (the SDK fills its keys
    with NaN)."""
    return Columns.of([None if bad else out for out, bad in zip(outputs, failed, strict=True)])


def _leaf_columns(cols: Columns) -> Columns:
    """``<column>.<key>[.<key>...]`` for every leaf of the dicts a column holds (None where a row
    has no such leaf): the SDK adds them to the data (and the target's outputs) so that nested
    fields can be mapped by name; a column that already exists is not replaced."""
    out = Columns(cols.n_rows)
    for key, column in cols.values.items():
        paths: dict[str, None] = {}
        for value in column:
            if isinstance(value, Mapping):
                leaf_paths(value, key, paths)
        for path in paths:
            if path in cols.values:
                continue
            keys = path[len(key) + 1 :].split(".")
            out.values[path], out.kinds[path] = coerce(
                [leaf_value(v, keys) if isinstance(v, Mapping) else None for v in column]
            )
    return out


def _transpose(cols: Columns, head: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    names = tuple(f"{head}{k}" for k in cols.values)
    if not names:
        return names, [() for _ in range(cols.n_rows)]
    return names, list(zip(*cols.values.values(), strict=True))


def sdk_rows(
    inputs: Sequence[Mapping[str, Any]],
    evaluators: Mapping[str, Sequence[Mapping[str, Any] | None]],
    failed: Mapping[str, Sequence[bool]],
    targets: Sequence[tuple[Mapping[str, Any] | None, str | None]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Columns]]:
    """The rows of ``evaluate()`` and each evaluator's columns (for :func:`sdk_metrics`).

    A row holds ``inputs.<column>`` for every column of the data (NaN where a row lacks it), with a
    target ``inputs.line_number`` (the row's index) and ``outputs.<key>`` for what the target returned,
    then ``outputs.<evaluator>.<key>`` for every key the evaluator gave on any row that scored (NaN
    on the others). What a failed row says beyond the SDK's keys (``<m>_error``...) is kept on that
    row; a target's failure is ``outputs.target_error``."""
    n = len(inputs)
    data_cols = Columns.of(inputs, spread=False)
    frame: list[tuple[str, Columns]] = [("inputs.", data_cols)]
    if targets is not None:
        line = Columns(n)
        line.values["line_number"], line.kinds["line_number"] = list(range(n)), "int"
        frame.append(("inputs.", line))
        frame.append(
            ("outputs.", Columns.of([out if err is None else None for out, err in targets], spread=False))
        )
    if not ({"conversation", "messages"} & set(data_cols.values)):
        frame.extend([(head, _leaf_columns(cols)) for head, cols in frame])
    # The rows are made in one pass over all columns; what some rows add after a part of the columns
    # (a target's error after the data, a failed row's own keys after its evaluator's columns) is
    # placed there on those rows only (``after[i]``: (part, keys) pairs), so each key keeps the
    # place the SDK's frame gives it.
    parts: list[tuple[list[str], list[Sequence[Any]]]] = [
        ([head + k for k in cols.values], list(cols.values.values())) for head, cols in frame
    ]
    after: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    if targets is not None:
        for i, (_, err) in enumerate(targets):
            if err is not None:
                after.setdefault(i, []).append((len(parts) - 1, {"outputs.target_error": err}))
    columns: dict[str, Columns] = {}
    for name, outs in evaluators.items():
        bad = failed[name]
        cols = columns[name] = Columns.of([None if b else o for o, b in zip(outs, bad, strict=True)])
        head = f"outputs.{name}."
        parts.append(([head + k for k in cols.values], list(cols.values.values())))
        for i, out in enumerate(outs):
            if bad[i] and out is not None:  # touchstone's account of the failure, beside the NaNs
                own = {head + k: v for k, v in out.items() if k not in cols.values}
                if own:
                    after.setdefault(i, []).append((len(parts) - 1, own))
    names = [name for part_names, _ in parts for name in part_names]
    values = [column for _, part_values in parts for column in part_values]
    rows: list[dict[str, Any]] = (
        [dict(zip(names, vals, strict=True)) for vals in zip(*values, strict=True)] if values
        else [{} for _ in range(n)]
    )
    for i, inserts in after.items():
        row: dict[str, Any] = {}
        for p, (part_names, part_values) in enumerate(parts):
            row.update(zip(part_names, [column[i] for column in part_values], strict=True))
            for q, own in inserts:
                if q == p:
                    row.update(own)
        rows[i] = row
    assert len(rows) == n
    return rows, columns
