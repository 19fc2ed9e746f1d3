"""The SDK frame's columns gathered one row at a time, in any order, without holding the rows.

A :class:`ColumnGroup` is fed the rows of one part of the frame (the data, the target's outputs, one
evaluator's outputs) and keeps per column what rendering any row and the SDK's metrics need: the
value types, the first place the key appears (columns are ordered by first appearance in row
order), counts, and for an evaluator's columns the numbers its means and rates read, as float
arrays by row (:class:`FloatsByRow`). :func:`group_spec` turns a group into the :class:`GroupSpec`
with which :mod:`touchstone.engine.sdk_frame.render` renders a row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from touchstone.engine.sdk_frame.metrics import (
    LABEL_DEFECTS,
    RENAMED,
    SAFETY_DEFECT_FROM,
    SAFETY_SCORES,
    TOKEN_SUFFIXES,
    to_number,
)
from touchstone.engine.sdk_frame.values import INT64, PER_TURN, Kind, flatten_dict, python_value

Place = tuple[int, int]
"""(row index, position within the row): where a key first appears; the SDK orders columns so."""


_NEVER: Place = (1 << 62, 0)


_NUMBER_TYPES = frozenset({int, float, bool, type(None)})


_UNHASHABLE = (list, dict, set)


class FloatsByRow:
    """Float values by row index, NaN where a row gave none (``masked``: with which rows gave one,
    for values that may themselves be NaN). Values wait in lists and are written to the array in
    bulk: one numpy assignment per few thousand values instead of one per value."""

    __slots__ = ("_idx", "_n", "_vals", "mask", "values")
    FLUSH = 8192

    def __init__(self, n: int, *, masked: bool = False) -> None:
        self._n = n
        self.values: np.ndarray | None = None  # made on the first value: many columns never get one
        self.mask = np.zeros(n, dtype=bool) if masked else None
        self._idx: list[int] = []
        self._vals: list[float] = []

    def set(self, i: int, value: float) -> None:
        self._idx.append(i)
        self._vals.append(value)
        if len(self._idx) >= self.FLUSH:
            self.flush()

    def flush(self) -> None:
        if self._idx:
            if self.values is None:
                self.values = np.full(self._n, np.nan)
            self.values[self._idx] = self._vals
            if self.mask is not None:
                self.mask[self._idx] = True
            self._idx, self._vals = [], []

    def all(self) -> np.ndarray:
        """Every row's value (NaN where none)."""
        self.flush()
        return np.full(self._n, np.nan) if self.values is None else self.values

    def present(self) -> np.ndarray:
        """The values given, in row order."""
        self.flush()
        if self.values is None:
            return np.empty(0)
        given: np.ndarray = self.values[self.mask if self.mask is not None else ~np.isnan(self.values)]
        return given


class GatheredColumn:
    """One column: a key some rows of a group have."""

    __slots__ = ("details", "errors", "first", "first_value", "flags", "int_overflow", "numbers",
                 "passes", "present", "rates", "subs", "types", "unhashable")

    def __init__(self) -> None:
        self.first: Place = _NEVER
        self.types: set[type] = set()
        self.present = 0
        self.int_overflow = False
        self.errors = 0  # non-empty texts (counted for keys ending in ``_error``)
        self.first_value: tuple[int, bool] | None = None  # (row, is a dict) of the first non-null value
        self.numbers: FloatsByRow | None = None
        self.rates: FloatsByRow | None = None
        self.flags: FloatsByRow | None = None
        self.passes: int | None = None
        self.unhashable = False
        self.details: dict[str, tuple[Place, list[tuple[int, float]]]] | None = None
        self.subs: ColumnGroup | None = None

    def kinds(self, n_rows: int) -> set[type]:
        kinds = set(self.types)
        if self.present < n_rows:
            kinds.add(_MissingType)
        return kinds


class _MissingType:
    """Stands for ``values.MISSING`` in a column's set of types."""


def column_mode(kinds: set[type], int_overflow: bool) -> tuple[str, Kind]:
    """How :func:`~.values.coerce` treats a column of these types: ``("same", kind)``
    (values as they are), ``("float", "float")`` (NaN in the gaps) or ``("object", "object")``
    (values as they are, NaN where missing). Values are taken as Python values (numpy's converted)."""
    if kinds == {float}:
        return "same", "float"
    if kinds in ({int}, {bool}, {str}):
        if kinds == {int} and int_overflow:
            return "same", "object"
        return "same", "int" if int in kinds else "bool" if bool in kinds else "object"
    rest = kinds - {type(None), _MissingType}
    if rest <= {int, float} and (rest or _MissingType in kinds):
        return "float", "float"
    return "object", "object"


@dataclass
class _Rules:
    """Which of the SDK's per-column metrics a column of an evaluator feeds (from its name only)."""

    mean: bool = False
    rate: bool = False
    flag: bool = False
    result: bool = False
    details: bool = False


def _rules(key: str) -> _Rules:
    head = key.split(".", 1)[0]
    label = head in RENAMED or (
        head.endswith("_label") and head[: -len("_label")].lower() in LABEL_DEFECTS
    )
    excluded = key.endswith(("_threshold", "_result")) or key.endswith(TOKEN_SUFFIXES)
    return _Rules(
        mean=not (label or excluded),
        rate=label,
        flag=head.endswith("_score") and head[: -len("_score")] in SAFETY_SCORES,
        result=key.endswith("_result"),
        details=head.endswith("_details") and head[: -len("_details")].lower() in LABEL_DEFECTS,
    )


class ColumnGroup:
    """The columns of one part of the frame: the data, the target's outputs, or one evaluator's
    outputs (``metrics``: with what the SDK's metrics need; ``spread``: ``evaluation_per_turn``
    dicts also spread into columns; ``leaves``: the leaves of dict columns tracked)."""

    def __init__(self, n_rows: int, *, metrics: bool, spread: bool, leaves: bool, prefix: str = "") -> None:
        self.n_rows = n_rows
        self.metrics, self.spread, self.leaves, self.prefix = metrics, spread, leaves, prefix
        self.cols: dict[str, GatheredColumn] = {}
        self.shapes: dict[tuple[str, ...], _Shape] = {}
        self.nodes: dict[str, _Node] = {}  # leaves of dict columns: path -> what rows hold there

    def _new(self, key: str) -> GatheredColumn:
        col = self.cols[key] = GatheredColumn()
        if self.metrics:
            rules = _rules(self.prefix + key)
            n = self.n_rows
            if rules.mean:
                col.numbers = FloatsByRow(n)
            if rules.rate:
                col.rates = FloatsByRow(n)
            if rules.flag:
                col.flags = FloatsByRow(n)
            if rules.result:
                col.passes = 0
            if rules.details:
                col.details = {}
        return col

    def add(self, i: int, row: Mapping[str, Any]) -> None:
        """Row ``i``'s values. Rows share a few shapes (their keys) and kinds (their values' types):
        per shape and kinds, the columns and which of them need each value (metrics, error texts,
        dicts, big ints) are worked out once."""
        keys = tuple(row)
        shape = self.shapes.get(keys)
        if shape is None:
            shape = self.shapes[keys] = _Shape([self.cols.get(k) or self._new(k) for k in keys])
        if i < shape.min_row:
            shape.min_row = i
            for pos, col in enumerate(shape.cols):
                if (i, pos) < col.first:
                    col.first = (i, pos)
        values = list(row.values())
        kinds = tuple(map(type, values))
        plan = shape.plans.get(kinds)
        if plan is None:
            plan = shape.plans[kinds] = self._plan(keys, shape, kinds)
        if plan is _SLOW:
            for key, col, value in zip(keys, shape.cols, values, strict=True):
                col.present += 1
                self._value(col, i, key, value)
            return
        shape.count += 1
        for pos, col, key, op in plan:
            value = values[pos]
            if op is _NUMBER:  # a float or a bool of a column that only needs the number
                numbers = col.numbers  # None once the column held text (a later kind of row)
                if numbers is not None and value == value:
                    numbers.set(i, float(value))
            elif op is _PASS:  # a text of a ``_result`` column
                if value == "pass":
                    col.passes += 1
            else:
                self._value(col, i, key, value, counted=False)

    def _plan(self, keys: tuple[str, ...], shape: _Shape, kinds: tuple[type, ...]) -> Any:
        """The columns of a row of this shape and kinds that need its value; :data:`_SLOW` when a
        value is numpy's (converted one by one)."""
        if any(kind.__module__ == "numpy" for kind in kinds):
            return _SLOW
        plan: list[tuple[int, GatheredColumn, str, object]] = []
        for pos, (key, col, kind) in enumerate(zip(keys, shape.cols, kinds, strict=True)):
            col.types.add(kind)
            if col.numbers is not None and kind not in _NUMBER_TYPES:
                col.numbers = None  # text or structure: not a numeric column
            special = (col.rates is not None or col.flags is not None or col.details is not None
                       or key.endswith("_error") or issubclass(kind, Mapping)
                       or (self.spread and PER_TURN in key))
            if special or kind is int:
                plan.append((pos, col, key, _ANY))
            elif col.numbers is not None and kind is not type(None):
                plan.append((pos, col, key, _NUMBER))
            elif col.passes is not None:
                plan.append((pos, col, key, _PASS if kind is str else _ANY))
        return plan

    def finish(self) -> None:
        """Count each column's rows from its shapes' counts (once, before the figures are read)."""
        for shape in self.shapes.values():
            for col in shape.cols:
                col.present += shape.count
                if col.subs is not None:
                    col.subs.finish()
            shape.count = 0
        for col in self.cols.values():
            for floats in (col.numbers, col.rates, col.flags):
                if floats is not None:
                    floats.flush()

    def _value(self, col: GatheredColumn, i: int, key: str, value: Any, *, counted: bool = True) -> None:
        if counted:  # a row taken one value at a time (numpy values)
            value = python_value(value)
            col.types.add(type(value))
        kind = type(value)
        if kind is int and not INT64[0] <= value <= INT64[1]:
            col.int_overflow = True
        elif kind is str and value and key.endswith("_error"):
            col.errors += 1
        null = value is None or (kind is float and value != value)
        if self.metrics:
            _metric_value(col, i, value, kind, null)
        is_map = isinstance(value, Mapping)
        if not null and (col.first_value is None or i < col.first_value[0]):
            col.first_value = (i, is_map)
        if is_map:
            if self.spread and PER_TURN in key:
                if col.subs is None:
                    col.subs = ColumnGroup(self.n_rows, metrics=self.metrics, spread=False, leaves=False,
                                      prefix=self.prefix)
                parts: dict[str, Any] = {}
                flatten_dict(value, key, parts)
                col.subs.add(i, parts)
            if self.leaves:
                self._walk(i, key, key, value, [0])

    def _walk(self, i: int, column: str, head: str, value: Mapping[str, Any], counter: list[int]) -> None:
        """Record every node below a dict cell: its path's values and, for leaves, their place (the
        order :func:`~.values.leaf_paths` lists them in)."""
        for k, item in value.items():
            path = f"{head}.{k}"
            node = self.nodes.get(path)
            if node is None:
                node = self.nodes[path] = _Node(column)
            node.add(item)
            if isinstance(item, Mapping):
                self._walk(i, column, path, item, counter)
            else:
                place = (i, counter[0])
                counter[0] += 1
                if node.leaf is None or place < node.leaf:
                    node.leaf = place

    def ordered(self) -> list[str]:
        """The columns in the SDK's order (by first appearance)."""
        return sorted(self.cols, key=lambda k: self.cols[k].first)

    def is_spread(self, key: str) -> bool:
        col = self.cols[key]
        return self.spread and PER_TURN in key and col.first_value is not None and col.first_value[1]

    def final(self) -> list[tuple[str, GatheredColumn]]:
        """The columns as the frame has them: the others, then each spread dict's parts."""
        return [(key, col) for key, col, _ in self.final_parts()]

    def final_parts(self) -> list[tuple[str, GatheredColumn, bool]]:
        """:meth:`final`, each column with whether it is a part of a spread dict."""
        out: list[tuple[str, GatheredColumn, bool]] = []
        later: list[GatheredColumn] = []
        for key in self.ordered():
            col = self.cols[key]
            if self.is_spread(key):
                later.append(col)
            else:
                out.append((key, col, False))
        for col in later:
            if col.subs is not None:
                out.extend((k, col.subs.cols[k], True) for k in col.subs.ordered())
        return out


def _metric_value(col: GatheredColumn, i: int, value: Any, kind: type, null: bool) -> None:
    """What the SDK's metrics need of one value of an evaluator's column."""
    if col.numbers is not None:
        if kind not in _NUMBER_TYPES:
            col.numbers = None  # text or structure: not a numeric column
        elif not null:
            col.numbers.set(i, float(value))
    if col.rates is not None:
        col.rates.set(i, to_number(value))
    if col.flags is not None:
        col.flags.set(i, math.nan if null else float(to_number(value) >= SAFETY_DEFECT_FROM))
    if col.passes is not None:
        if isinstance(value, _UNHASHABLE):
            col.unhashable = True
        elif value == "pass":
            col.passes += 1
    if col.details is not None and isinstance(value, Mapping):
        for pos, (k, v) in enumerate(value.items()):
            entry = col.details.setdefault(str(k), ((i, pos), []))
            if (i, pos) < entry[0]:
                col.details[str(k)] = entry = ((i, pos), entry[1])
            entry[1].append((i, to_number(v)))


class _Shape:
    """Rows of a group with the same keys: their columns, the earliest row seen, how many, and the
    work each combination of value types needs."""

    __slots__ = ("cols", "count", "min_row", "plans")

    def __init__(self, cols: list[GatheredColumn]) -> None:
        self.cols = cols
        self.count = 0
        self.min_row = 1 << 62
        self.plans: dict[tuple[type, ...], Any] = {}

_SLOW = object()


_ANY, _NUMBER, _PASS = object(), object(), object()
"""What a column needs of a value: everything checked, only its number, only whether it is "pass"."""


class _Node:
    __slots__ = ("column", "errors", "leaf", "nonnull", "overflow", "types")

    def __init__(self, column: str) -> None:
        self.column = column
        self.leaf: Place | None = None
        self.types: set[type] = set()
        self.nonnull = 0
        self.errors = 0
        self.overflow = False

    def add(self, value: Any) -> None:
        value = python_value(value)
        if value is None:
            return
        kind = type(value)
        self.types.add(kind)
        self.nonnull += 1
        if kind is str and value:
            self.errors += 1
        elif kind is int and not INT64[0] <= value <= INT64[1]:
            self.overflow = True


@dataclass
class ColumnSpec:
    """One column of the rendered rows: its key in the group, how its values are rendered."""

    key: str
    mode: str
    part: bool = False
    """A part of a spread ``evaluation_per_turn`` dict (read from its flattened parts)."""
    column: str = ""
    """For a leaf of a dict column: that column."""


@dataclass
class GroupSpec:
    columns: list[ColumnSpec]
    names: frozenset[str]
    leaves: list[ColumnSpec] = field(default_factory=list)
    spread: list[str] = field(default_factory=list)


@dataclass
class FrameSchema:
    """What rendering one row the SDK's way needs to know about all rows."""

    inputs: GroupSpec
    targets: GroupSpec | None
    evaluators: dict[str, GroupSpec]


def group_spec(group: ColumnGroup, n: int, *, leaves: bool) -> GroupSpec:
    columns = [ColumnSpec(key, column_mode(col.kinds(n), col.int_overflow)[0], part)
               for key, col, part in group.final_parts()]
    names = frozenset(c.key for c in columns)
    spec = GroupSpec(columns, names, spread=[k for k in group.cols if group.is_spread(k)])
    if leaves and group.leaves:
        by_column: dict[str, list[tuple[Place, str]]] = {}
        for path, node in group.nodes.items():
            if node.leaf is not None:
                by_column.setdefault(node.column, []).append((node.leaf, path))
        for key in [c.key for c in columns]:
            for _, path in sorted(by_column.get(key, [])):
                if path in names:
                    continue
                node = group.nodes[path]
                kinds = set(node.types)
                if node.nonnull < n:
                    kinds.add(type(None))
                spec.leaves.append(ColumnSpec(path, column_mode(kinds, node.overflow)[0], column=key))
    return spec


class FrameGatherer:
    """The frame's parts gathered row by row (see the module's text): the data, the target's
    outputs, and each evaluator's outputs (``metrics``: with what the SDK's metrics need)."""

    def __init__(self, n_rows: int, evaluators: list[str], *, metrics: bool) -> None:
        self.inputs = ColumnGroup(n_rows, metrics=False, spread=False, leaves=True)
        self.targets = ColumnGroup(n_rows, metrics=False, spread=False, leaves=True)
        self.outputs = {
            n: ColumnGroup(n_rows, metrics=metrics, spread=True, leaves=False) for n in evaluators
        }

    def add_row(self, i: int, data: Mapping[str, Any], target: Mapping[str, Any] | None,
                target_error: str | None) -> None:
        """Input row ``i`` as the SDK's rows show it (:func:`~.values.sdk_input`), and the target's
        outputs (a failed target adds no column)."""
        self.inputs.add(i, data)
        if target_error is None and target is not None:
            self.targets.add(i, target)

    def schema(self, n_rows: int, *, with_target: bool) -> FrameSchema:
        """The schema of the rows gathered, as if they were the first ``n_rows`` rows of the run."""
        leaves = not ({"conversation", "messages"} & set(self.inputs.cols))
        return FrameSchema(
            group_spec(self.inputs, n_rows, leaves=leaves),
            group_spec(self.targets, n_rows, leaves=leaves) if with_target else None,
            {name: group_spec(group, n_rows, leaves=False) for name, group in self.outputs.items()},
        )
