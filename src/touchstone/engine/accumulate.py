"""A run's figures gathered as its results arrive, without holding its rows.

:class:`RunAccumulator` is fed each input row (and the target's output) and each (row, evaluator)
result once, in any order, and gives at the end exactly what :func:`~touchstone.engine.frame.sdk_rows`,
:func:`~touchstone.engine.frame.sdk_metrics` and :func:`~touchstone.stats.aggregate.summarize` give
over the whole run: the SDK's ``metrics``, the summary, the run's status and usage, and a
:class:`FrameSchema` with which :mod:`touchstone.engine.stored_rows` renders any row the way the SDK's
frame does. What it keeps is small per row: the values the means, rates and bootstrap need, as
float arrays indexed by row (a row's place matters: the SDK's means sum in row order, and the
bootstrap draws by index), plus a few counts and the first place each column appears (the SDK's
columns are ordered by first appearance in row order). Columns of text keep only their types.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone.engine import frame as fr
from touchstone.scores import ScoreLine
from touchstone.stats.aggregators import ScoreColumn, get_aggregator

if TYPE_CHECKING:
    from touchstone.evaluators.base import MetricInfo

Place = tuple[int, int]
"""(row index, position within the row): where a key first appears; the SDK orders columns so."""
_NEVER: Place = (1 << 62, 0)
_NUMBER_TYPES = frozenset({int, float, bool, type(None)})
_UNHASHABLE = (list, dict, set)


class _Floats:
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


class _Col:
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
        self.numbers: _Floats | None = None
        self.rates: _Floats | None = None
        self.flags: _Floats | None = None
        self.passes: int | None = None
        self.unhashable = False
        self.details: dict[str, tuple[Place, list[tuple[int, float]]]] | None = None
        self.subs: _Group | None = None

    def kinds(self, n_rows: int) -> set[type]:
        kinds = set(self.types)
        if self.present < n_rows:
            kinds.add(_MissingType)
        return kinds


class _MissingType:
    """Stands for ``frame._MISSING`` in a column's set of types."""


def _mode(kinds: set[type], int_overflow: bool) -> tuple[str, fr.Kind]:
    """How :func:`~touchstone.engine.frame.coerce` treats a column of these types: ``("same", kind)``
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


def render(value: Any, mode: str) -> Any:
    """One value of a column as :func:`~touchstone.engine.frame.coerce` leaves it (``mode`` from
    :func:`_mode`); ``frame._MISSING`` for a row without the key."""
    if value is not fr._MISSING:
        value = fr._python(value)
    if mode == "float":
        return fr.NAN if fr._is_null(value) else float(value)
    if mode == "object" and value is fr._MISSING:
        return fr.NAN
    return value


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
    label = head in fr._RENAMED or (
        head.endswith("_label") and head[: -len("_label")].lower() in fr._LABEL_DEFECTS
    )
    excluded = key.endswith(("_threshold", "_result")) or key.endswith(fr._TOKEN_SUFFIXES)
    return _Rules(
        mean=not (label or excluded),
        rate=label,
        flag=head.endswith("_score") and head[: -len("_score")] in fr._SAFETY_SCORES,
        result=key.endswith("_result"),
        details=head.endswith("_details") and head[: -len("_details")].lower() in fr._LABEL_DEFECTS,
    )


class _Group:
    """The columns of one part of the frame: the data, the target's outputs, or one evaluator's
    outputs (``metrics``: with what the SDK's metrics need; ``spread``: ``evaluation_per_turn``
    dicts also spread into columns; ``leaves``: the leaves of dict columns tracked)."""

    def __init__(self, n_rows: int, *, metrics: bool, spread: bool, leaves: bool, prefix: str = "") -> None:
        self.n_rows = n_rows
        self.metrics, self.spread, self.leaves, self.prefix = metrics, spread, leaves, prefix
        self.cols: dict[str, _Col] = {}
        self.shapes: dict[tuple[str, ...], _Shape] = {}
        self.nodes: dict[str, _Node] = {}  # leaves of dict columns: path -> what rows hold there

    def _new(self, key: str) -> _Col:
        col = self.cols[key] = _Col()
        if self.metrics:
            rules = _rules(self.prefix + key)
            n = self.n_rows
            if rules.mean:
                col.numbers = _Floats(n)
            if rules.rate:
                col.rates = _Floats(n)
            if rules.flag:
                col.flags = _Floats(n)
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
        plan: list[tuple[int, _Col, str, object]] = []
        for pos, (key, col, kind) in enumerate(zip(keys, shape.cols, kinds, strict=True)):
            col.types.add(kind)
            if col.numbers is not None and kind not in _NUMBER_TYPES:
                col.numbers = None  # text or structure: not a numeric column
            special = (col.rates is not None or col.flags is not None or col.details is not None
                       or key.endswith("_error") or issubclass(kind, Mapping)
                       or (self.spread and fr.PER_TURN in key))
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

    def _value(self, col: _Col, i: int, key: str, value: Any, *, counted: bool = True) -> None:
        if counted:  # a row taken one value at a time (numpy values)
            value = fr._python(value)
            col.types.add(type(value))
        kind = type(value)
        if kind is int and not fr._INT64[0] <= value <= fr._INT64[1]:
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
            if self.spread and fr.PER_TURN in key:
                if col.subs is None:
                    col.subs = _Group(self.n_rows, metrics=self.metrics, spread=False, leaves=False,
                                      prefix=self.prefix)
                parts: dict[str, Any] = {}
                fr._flatten_dict(value, key, parts)
                col.subs.add(i, parts)
            if self.leaves:
                self._walk(i, key, key, value, [0])

    def _walk(self, i: int, column: str, head: str, value: Mapping[str, Any], counter: list[int]) -> None:
        """Record every node below a dict cell: its path's values and, for leaves, their place (the
        order :func:`frame._leaves` lists them in)."""
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
        return self.spread and fr.PER_TURN in key and col.first_value is not None and col.first_value[1]

    def final(self) -> list[tuple[str, _Col]]:
        """The columns as the frame has them: the others, then each spread dict's parts."""
        return [(key, col) for key, col, _ in self.final_parts()]

    def final_parts(self) -> list[tuple[str, _Col, bool]]:
        """:meth:`final`, each column with whether it is a part of a spread dict."""
        out: list[tuple[str, _Col, bool]] = []
        later: list[_Col] = []
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


def _metric_value(col: _Col, i: int, value: Any, kind: type, null: bool) -> None:
    """What the SDK's metrics need of one value of an evaluator's column."""
    if col.numbers is not None:
        if kind not in _NUMBER_TYPES:
            col.numbers = None  # text or structure: not a numeric column
        elif not null:
            col.numbers.set(i, float(value))
    if col.rates is not None:
        col.rates.set(i, fr._to_number(value))
    if col.flags is not None:
        col.flags.set(i, math.nan if null else float(fr._to_number(value) >= fr._SAFETY_DEFECT_FROM))
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
            entry[1].append((i, fr._to_number(v)))


class _Shape:
    """Rows of a group with the same keys: their columns, the earliest row seen, how many, and the
    work each combination of value types needs."""

    __slots__ = ("cols", "count", "min_row", "plans")

    def __init__(self, cols: list[_Col]) -> None:
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
        value = fr._python(value)
        if value is None:
            return
        kind = type(value)
        self.types.add(kind)
        self.nonnull += 1
        if kind is str and value:
            self.errors += 1
        elif kind is int and not fr._INT64[0] <= value <= fr._INT64[1]:
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


class _Scores:
    """One evaluator's typed scores: what :func:`~touchstone.stats.aggregate.summarize` reads."""

    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.values: dict[str, tuple[Place, _Floats, np.ndarray]] = {}
        self.seen = np.zeros(n_rows, dtype=bool)
        self.failed = np.zeros(n_rows, dtype=bool)

    def add(self, i: int, lines: Sequence[ScoreLine], failed: bool) -> None:
        self.seen[i] = True
        self.failed[i] = failed
        for pos, (metric, value, _, status, _, flag) in enumerate(lines):
            if status != "ok" or value is None:
                continue
            entry = self.values.get(metric)
            if entry is None:
                flags = np.full(self.n_rows, -1, np.int8)
                entry = self.values[metric] = ((i, pos), _Floats(self.n_rows, masked=True), flags)
            elif (i, pos) < entry[0]:
                entry = self.values[metric] = ((i, pos), entry[1], entry[2])
            entry[1].set(i, float(value))
            if flag is not None:
                entry[2][i] = int(bool(flag))

    @property
    def n_ok(self) -> int:
        return int((self.seen & ~self.failed).sum())


@dataclass
class Figures:
    """What a finished accumulation gives."""

    metrics: dict[str, Any]
    summary: dict[str, dict[str, Any]]
    status: str
    usage: dict[str, float]
    missing: int
    n_failed: int
    schema: FrameSchema | None


class RunAccumulator:
    """Feed with :meth:`add_row` (every input row, with the target's result) and :meth:`add_result`
    (every (row, evaluator) result), each once and in any order; then :meth:`finish`."""

    def __init__(
        self, n_rows: int, evaluators: Sequence[str], *, keep: Sequence[str] = (), columns: bool = True
    ) -> None:
        self.n_rows = n_rows
        self.columns = columns
        """Gather the frame's columns (the SDK's ``metrics``, the rows' schema, the failure count). A
        run that keeps its rows in memory says False: it renders them with
        :mod:`~touchstone.engine.frame`, which gives these from the rows, and only the summary,
        status and usage are asked of the accumulator (:attr:`Figures.metrics` is then empty and
        :attr:`Figures.schema` None)."""
        self.names = list(evaluators)
        self.inputs = _Group(n_rows, metrics=False, spread=False, leaves=True)
        self.targets = _Group(n_rows, metrics=False, spread=False, leaves=True)
        self.with_target = False
        self.target_errors = 0
        self.outputs = {n: _Group(n_rows, metrics=True, spread=True, leaves=False) for n in evaluators}
        self.scores = {n: _Scores(n_rows) for n in evaluators}
        self.extras: dict[str, dict[str, int]] = {n: {} for n in evaluators}  # failed rows' error texts
        self.usage: dict[tuple[int, int], dict[str, Any]] = {}
        self.kept: dict[str, dict[int, Mapping[str, Any] | None]] = {n: {} for n in keep}
        """Every row's outputs of the evaluators named in ``keep`` (a user's ``__aggregate__`` reads
        them all, as in the SDK)."""

    def add_row(
        self, i: int, data: Mapping[str, Any], source: str, target: Mapping[str, Any] | None = None,
        target_error: str | None = None,
    ) -> None:
        """Input row ``i`` (its data as loaded and its file), and the target's outputs or error."""
        if target is not None or target_error is not None:
            self.with_target = True
        if not self.columns:
            return
        self.inputs.add(i, fr.sdk_input(data, source))
        if target_error is not None:
            if isinstance(target_error, str) and target_error:
                self.target_errors += 1
        elif target is not None:
            self.targets.add(i, target)

    def add_result(
        self, name: str, i: int, outputs: Mapping[str, Any], failed: bool, lines: Sequence[ScoreLine],
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        """Evaluator ``name``'s result on row ``i``: its flat outputs, whether it failed, its typed
        Scores as lines, and what its model calls used."""
        self.scores[name].add(i, lines, failed)
        if usage:
            self.usage[i, self.names.index(name)] = dict(usage)
        if not self.columns:
            return
        if failed:
            extras = self.extras[name]
            for key, value in outputs.items():
                if key.endswith("_error") and isinstance(value, str) and value:
                    extras[key] = extras.get(key, 0) + 1
        else:
            self.outputs[name].add(i, outputs)
        if name in self.kept:
            self.kept[name][i] = None if failed else outputs

    def missing(self) -> int:
        """(row, evaluator) pairs without a result so far."""
        return sum(int((~s.seen).sum()) for s in self.scores.values())

    def seen(self, name: str) -> np.ndarray:
        """Which rows evaluator ``name`` has a result for."""
        return self.scores[name].seen

    # ------------------------------------------------------------------ the end
    def finish(
        self,
        infos: Mapping[str, MetricInfo],
        options: Mapping[str, Mapping[str, Any]],
        corpus: Mapping[str, Mapping[str, float]],
        aggregators: Mapping[str, Callable[[Any], Any]],
        *,
        missing: int,
        aborted: bool = False,
    ) -> Figures:
        """The run's figures. ``missing``: (row, evaluator) pairs that had no result (:meth:`missing`,
        asked before an aborted run's unscored pairs are fed as failures); ``aborted``: the run
        stopped early."""
        metrics: dict[str, Any] = {}
        if self.columns:
            for group in (self.inputs, self.targets, *self.outputs.values()):
                group.finish()
            metrics = self._metrics(aggregators)
            for name, figures in corpus.items():
                metrics.update({f"{name}.{k}": v for k, v in figures.items()})
        summary = self._summary(infos, options, corpus)
        if aborted:
            status = "aborted"
        elif missing:
            status = "incomplete"
        else:
            failed_any = any(bool(s.failed.any()) or not bool(s.seen.all()) for s in self.scores.values())
            status = "completed_with_failures" if failed_any else "completed"
        usage: dict[str, float] = {}
        for key in sorted(self.usage):
            for k, v in self.usage[key].items():
                if isinstance(v, (int, float)):
                    usage[k] = usage.get(k, 0) + v
        if not self.columns:
            return Figures(metrics, summary, status, usage, missing, 0, None)
        schema = self._schema()
        return Figures(metrics, summary, status, usage, missing, self._n_failed(schema), schema)

    def _metrics(self, aggregators: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
        means: dict[str, float] = {}
        rates: dict[str, float] = {}
        binary: dict[str, float] = {}
        n = self.n_rows
        for name in self.names:
            columns = self.outputs[name].final()
            handled, labels = _label_rates(name, columns)
            for key, col in columns:
                if key in handled or col.numbers is None:
                    continue
                _, kind = _mode(col.kinds(n), col.int_overflow)
                if kind == "object":
                    continue
                values = col.numbers.present()
                if len(values):
                    means[f"{name}.{key}"] = float(values.sum() / len(values))
            for key, col in columns:
                if col.flags is not None:
                    rate = _rate(col.flags.all(), key)
                    if rate is not None:
                        rates[f"{name}.{key.replace('_score', '_defect_rate')}"] = rate
            rates.update(labels)
            for _, col in columns:
                if col.passes is not None and not col.unhashable:
                    binary[f"{name}.{fr.BINARY_AGGREGATE}"] = round(col.passes / n, 2) if n else 0.0
        metrics: dict[str, Any] = {**means, **rates, **binary}
        for name, aggregate in aggregators.items():
            kept = self.kept.get(name)
            if kept is None:
                continue
            cols = fr.Columns.of([kept.get(i) for i in range(n)])
            metrics.update(fr._own_aggregate(name, cols, aggregate))
        return metrics

    def _summary(
        self, infos: Mapping[str, MetricInfo], options: Mapping[str, Mapping[str, Any]],
        corpus: Mapping[str, Mapping[str, float]],
    ) -> dict[str, dict[str, Any]]:
        summary: dict[str, dict[str, Any]] = {}
        n = self.n_rows
        for name, info in infos.items():
            scores = self.scores[name]
            n_failed = n - scores.n_ok
            order = [info.key] + [m for m in sorted(scores.values, key=lambda m: scores.values[m][0])
                                  if m != info.key]
            for score_name in order:
                entry_values = scores.values.get(score_name)
                if entry_values is None:
                    values, passed = np.asarray([], dtype=float), []
                else:
                    values = entry_values[1].present()
                    flags = entry_values[2]
                    passed = [bool(f) for f in flags[flags >= 0].tolist()]
                col = ScoreColumn(values=values, passed=passed, n_failed=n_failed, n_rows=n,
                                  higher_is_better=info.direction(score_name), options=options.get(name, {}))
                entry: dict[str, Any] = {"n": len(values), "n_failed": n_failed, "n_rows": n,
                                         "higher_is_better": col.higher_is_better}
                for agg in info.aggregators:
                    entry.update(get_aggregator(agg)(col))
                summary[f"{name}.{score_name}"] = entry
            for key, value in corpus.get(name, {}).items():
                summary[f"{name}.{key}"] = {"value": value, "n": n - n_failed, "n_failed": n_failed,
                                            "corpus": True, "higher_is_better": True}
        return summary

    # ------------------------------------------------------------------ the rows' shape
    def _schema(self) -> FrameSchema:
        n = self.n_rows
        leaves = not ({"conversation", "messages"} & set(self.inputs.cols))
        inputs = _group_spec(self.inputs, n, leaves=leaves)
        targets = _group_spec(self.targets, n, leaves=leaves) if self.with_target else None
        evaluators = {name: _group_spec(self.outputs[name], n, leaves=False) for name in self.names}
        return FrameSchema(inputs, targets, evaluators)

    def _n_failed(self, schema: FrameSchema) -> int:
        """``EvaluationResult.n_failed`` of the rendered rows: non-empty texts under keys ending in
        ``_error``, counted without rendering them."""
        total = 0
        for group, spec in ((self.inputs, schema.inputs), (self.targets, schema.targets)):
            if spec is None:
                continue
            total += sum(group.cols[c.key].errors for c in spec.columns if c.key.endswith("_error"))
            total += sum(group.nodes[c.key].errors for c in spec.leaves if c.key.endswith("_error"))
        total += self.target_errors
        for name in self.names:
            spec = schema.evaluators[name]
            for key, col in self.outputs[name].final():
                if key.endswith("_error"):
                    total += col.errors
            total += sum(count for key, count in self.extras[name].items() if key not in spec.names)
        return total


def _label_rates(name: str, columns: list[tuple[str, _Col]]) -> tuple[set[str], dict[str, float]]:
    """:func:`frame._label_rates` from the columns' gathered values."""
    handled: set[str] = set()
    labels: dict[str, float] = {}
    details: _Col | None = None
    details_key = ""
    for key, col in columns:
        head = key.split(".", 1)[0]
        if col.rates is not None:
            handled.add(key)
            target = (f"{name}.{fr._RENAMED[head]}" if head in fr._RENAMED
                      else f"{name}.{key.replace('_label', '_defect_rate')}")
            rate = _rate(col.rates.all(), key)
            if rate is not None:
                labels[target] = rate
        elif col.details is not None:
            details, details_key = col, key
    if details is not None and details.details:
        for k, (_, pairs) in sorted(details.details.items(), key=lambda kv: kv[1][0]):
            pairs.sort(key=lambda p: p[0])
            rate = _rate(np.asarray([v for _, v in pairs], dtype=float), k)
            if rate is not None:
                labels[f"{name}.{details_key}.{k}_defect_rate"] = rate
    return handled, labels


def _group_spec(group: _Group, n: int, *, leaves: bool) -> GroupSpec:
    columns = [ColumnSpec(key, _mode(col.kinds(n), col.int_overflow)[0], part)
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
                spec.leaves.append(ColumnSpec(path, _mode(kinds, node.overflow)[0], column=key))
    return spec


def _rate(values: np.ndarray, name: str) -> float | None:
    """:func:`frame._rate` over numbers already converted (NaN: no number)."""
    kept = values[~np.isnan(values)]
    if not len(kept):
        fr.log.warning("all values of %s are NaN or missing: no rate computed", name)
        return None
    return float(round(sum(kept.tolist()) / len(kept), 2))
