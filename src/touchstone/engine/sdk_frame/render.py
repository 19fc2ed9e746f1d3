"""One row of the SDK's frame rendered from a :class:`~.gather.FrameSchema` (what all rows hold),
without the other rows: a large run's rows read back from the store, and the rows the output files
append as the run goes, are rendered exactly as :func:`~.columns.sdk_rows` renders them whole.
:func:`frame_row` is the whole row; :func:`render_row` and :func:`render_outputs` its parts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from touchstone.engine.sdk_frame.gather import FrameSchema
from touchstone.engine.sdk_frame.values import (
    MISSING,
    NAN,
    flatten_dict,
    is_null,
    leaf_value,
    python_value,
    sdk_input,
)

Outputs = tuple[Mapping[str, Any] | None, bool]
"""One evaluator's outputs on a row (None: no result) and whether they count as failed."""

_NO_RESULT: Outputs = (None, True)


def frame_row(
    schema: FrameSchema, i: int, data: Mapping[str, Any], source: str, target: Mapping[str, Any] | None,
    target_error: str | None, outputs: Mapping[tuple[int, str], Outputs],
    unscored: Callable[[str, int], Mapping[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """Row ``i`` of the SDK's frame: its data as loaded (from file ``source``), the target's outputs
    or error, and each evaluator's outputs (``outputs[i, name]``; a pair without one counts as failed,
    with ``unscored(name, i)``'s outputs when given)."""
    row = render_row(schema, i, sdk_input(data, source), target, target_error)
    for name in schema.evaluators:
        out, failed = outputs.get((i, name), _NO_RESULT)
        if out is None and unscored is not None:
            out = unscored(name, i)
        render_outputs(schema, name, row, out, failed)
    return row


def render(value: Any, mode: str) -> Any:
    """One value of a column as :func:`~.values.coerce` leaves it (``mode`` from
    :func:`~.gather.column_mode`); :data:`~.values.MISSING` for a row without the key."""
    if value is not MISSING:
        value = python_value(value)
    if mode == "float":
        return NAN if is_null(value) else float(value)
    if mode == "object" and value is MISSING:
        return NAN
    return value


def render_row(
    schema: FrameSchema, i: int, data: Mapping[str, Any], target: Mapping[str, Any] | None,
    target_error: str | None,
) -> dict[str, Any]:
    """The inputs (and target) part of row ``i`` as :func:`~.columns.sdk_rows` makes it."""
    missing = MISSING
    row: dict[str, Any] = {}
    for col in schema.inputs.columns:
        row["inputs." + col.key] = render(data.get(col.key, missing), col.mode)
    targets = schema.targets
    got = target if target_error is None else None
    if targets is not None:
        row["inputs.line_number"] = i
        for col in targets.columns:
            value = missing if got is None else got.get(col.key, missing)
            row["outputs." + col.key] = render(value, col.mode)
    for col in schema.inputs.leaves:
        value = _leaf_at(data.get(col.column, missing), col.key, col.column)
        row["inputs." + col.key] = render(value, col.mode)
    if targets is not None:
        for col in targets.leaves:
            value = missing if got is None else got.get(col.column, missing)
            row["outputs." + col.key] = render(_leaf_at(value, col.key, col.column), col.mode)
        if target_error is not None:
            row["outputs.target_error"] = target_error
    return row


def render_outputs(
    schema: FrameSchema, name: str, row: dict[str, Any], out: Mapping[str, Any] | None, failed: bool
) -> None:
    """Add evaluator ``name``'s columns to ``row`` (``out``: its outputs on the row, or None)."""
    spec = schema.evaluators[name]
    head = f"outputs.{name}."
    missing = MISSING
    src = None if failed else out
    parts: dict[str, Any] = {}
    if src is not None:
        for key in spec.spread:
            value = src.get(key)
            if isinstance(value, Mapping):
                flatten_dict(value, key, parts)
    for col in spec.columns:
        if src is None:
            value = missing
        elif col.part:
            value = parts.get(col.key, missing)
        else:
            value = src.get(col.key, missing)
        row[head + col.key] = render(value, col.mode)
    if failed and out is not None:  # touchstone's account of the failure, beside the NaNs
        row.update((head + k, v) for k, v in out.items() if k not in spec.names)


def _leaf_at(value: Any, path: str, column: str) -> Any:
    """The leaf ``path`` (``<column>.<key>...``) of a cell of ``column``, or None."""
    if not isinstance(value, Mapping):
        return None
    return leaf_value(value, path[len(column) + 1 :].split("."))
