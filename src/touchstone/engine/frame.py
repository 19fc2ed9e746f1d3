"""The rows and ``metrics`` of ``evaluate()`` as azure-ai-evaluation 1.18.10 gives them.

The SDK puts every evaluator's per-row outputs in a pandas DataFrame and returns
``to_dict("records")`` of it, so what a row holds depends on the other rows: a key that some rows of
an evaluator have is present in every row (NaN where a row lacks it, e.g. a row whose evaluator
raised), a column of ints with a gap becomes floats, ints mixed with floats become floats. Its
``metrics`` are the means of the numeric columns (booleans included, NaN skipped), with thresholds,
pass/fail labels and the token counts of its own metrics left out, plus a few rates it names itself
(``<evaluator>.binary_aggregate``, safety defect rates). This module reproduces those rules in plain
Python, column by column, without pandas; the engine renders its rows through it so that code
written against the SDK's rows and metrics reads the same keys, types and values.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

Kind = Literal["int", "float", "bool", "object"]
NAN = float("nan")
_MISSING: Any = object()
_INT64 = (-(2**63), 2**63 - 1)

PER_TURN = "evaluation_per_turn"
BINARY_AGGREGATE = "binary_aggregate"
_SAFETY_SCORES = ("sexual", "self_harm", "hate_unfairness", "violence")
_SAFETY_DEFECT_FROM = 4
_LABEL_DEFECTS = (
    "protected_material", "fictional_characters", "artwork", "logos_and_brands", "eci", "xpia",
    "code_vulnerability", "ungrounded_attributes",
)
_RENAMED = {"groundedness_pro_label": "groundedness_pro_passing_rate"}
_SDK_METRICS = (
    "groundedness", "relevance", "coherence", "fluency", "similarity", "f1_score", "retrieval_score",
    "hate_fairness", "hate_unfairness", "violence", "self_harm", "sexual", "protected_material", "artwork",
    "fictional_characters", "logos_and_brands", "xpia", "code_vulnerability", "ungrounded_attributes",
    "sensitive_data_leakage", "task_adherence", "prohibited_actions", "eci",
)
_TOKEN_SUFFIXES = tuple(f"{m}_{t}" for m in _SDK_METRICS for t in ("prompt_tokens", "completion_tokens",
                                                                     "total_tokens"))
NOT_APPLICABLE = "not applicable"

log = logging.getLogger("touchstone.engine")


def is_nan(value: Any) -> bool:
    """True for a float NaN (what the SDK's rows hold where a value is missing)."""
    return isinstance(value, float) and value != value


def _is_null(value: Any) -> bool:
    return value is None or value is _MISSING or is_nan(value)


def _python(value: Any) -> Any:
    """numpy scalars as the Python values they stand for (``to_dict("records")`` does the same)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def coerce(values: list[Any]) -> tuple[list[Any], Kind]:
    """One column as pandas' DataFrame constructor leaves it, and the column's kind.

    ``values`` holds one entry per row, ``_MISSING`` where the row lacks the key. Ints (no gap) stay
    ints; ints, floats and gaps (None, NaN, missing) together become floats with NaN in the gaps;
    booleans without a gap stay booleans; anything else is kept as it is (missing -> NaN, None kept)."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return values, "float"
    if kinds == {int} or kinds == {bool} or kinds == {str}:
        if kinds == {int} and not all(_INT64[0] <= v <= _INT64[1] for v in values):
            return values, "object"
        return values, "int" if int in kinds else "bool" if bool in kinds else "object"
    if any(k.__module__ == "numpy" for k in kinds):
        return coerce([_python(v) for v in values])
    rest = kinds - {type(None), type(_MISSING)}
    if rest <= {int, float} and (rest or type(_MISSING) in kinds):  # all None stays None
        return [NAN if _is_null(v) else float(v) for v in values], "float"
    if type(_MISSING) in kinds:
        values = [NAN if v is _MISSING else v for v in values]
    return values, "object"


def keys_in_order(rows: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """Every key of ``rows`` in order of first appearance (rows share a few shapes)."""
    shapes = dict.fromkeys(tuple(r) for r in rows if r)
    return list(dict.fromkeys(k for shape in shapes for k in shape))


def _flatten_dict(value: Mapping[str, Any], head: str, out: dict[str, Any]) -> None:
    for key, item in value.items():
        name = f"{head}.{key}"
        if isinstance(item, Mapping):
            _flatten_dict(item, name, out)
        else:
            out[name] = item


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
            column = whole.get(key) or [_MISSING if r is None else r.get(key, _MISSING) for r in rows]
            if spread and PER_TURN in key and _first_present_is_dict(column):
                later.append((key, column))
            else:
                cols.values[key], cols.kinds[key] = coerce(column)
        for key, column in later:
            flat: list[dict[str, Any]] = []
            for value in column:
                parts: dict[str, Any] = {}
                if isinstance(value, Mapping):
                    _flatten_dict(value, key, parts)
                flat.append(parts)
            for sub in keys_in_order(flat):
                cols.values[sub], cols.kinds[sub] = coerce([p.get(sub, _MISSING) for p in flat])
        return cols

    def row(self, i: int) -> dict[str, Any]:
        """Row ``i`` as ``{column: value}``."""
        return {key: column[i] for key, column in self.values.items()}


def _first_present_is_dict(column: list[Any]) -> bool:
    first = next((v for v in column if not _is_null(v)), None)
    return isinstance(first, Mapping)


def evaluator_columns(outputs: Sequence[Mapping[str, Any] | None], failed: Sequence[bool]) -> Columns:
    """An evaluator's columns: a failed row counts as a row without outputs (the SDK fills its keys
    with NaN)."""
    return Columns.of([None if bad else out for out, bad in zip(outputs, failed, strict=True)])


def _nan_mean(values: Sequence[Any], kind: Kind | None = None) -> float | None:
    """The mean of the values that are numbers (``kind``: the column's, when known)."""
    if kind in ("float", "int", "bool"):  # numbers, NaN in the gaps: the same sum, done by numpy
        array = np.asarray(values, dtype=float)
        kept = array[~np.isnan(array)]
        return float(kept.sum() / len(kept)) if len(kept) else None
    numbers = [float(v) for v in values if not _is_null(v)]
    if not numbers:
        return None
    return float(np.asarray(numbers, dtype=float).sum() / len(numbers))


def _to_number(value: Any) -> float:
    """pandas' ``to_numeric(errors="coerce")`` of one value."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return NAN
    return NAN


def _rate(values: Iterable[Any], name: str) -> float | None:
    numbers = [_to_number(v) for v in values]
    if all(math.isnan(v) for v in numbers):
        log.warning("all values of %s are NaN or missing: no rate computed", name)
        return None
    kept = [v for v in numbers if not math.isnan(v)]
    return round(sum(kept) / len(kept), 2)


def _binary_aggregates(name: str, cols: Columns) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, column in cols.values.items():
        if not key.endswith("_result"):
            continue
        if any(issubclass(kind, (list, dict, set)) for kind in set(map(type, column))):
            continue  # not a pass/fail column (the SDK skips unhashable values)
        passes = column.count("pass")
        out[f"{name}.{BINARY_AGGREGATE}"] = round(passes / cols.n_rows, 2) if cols.n_rows else 0.0
    return out


def _safety_rates(name: str, cols: Columns) -> dict[str, float]:
    """``<cat>_defect_rate``: the share of a safety severity score at or above 4 (the column keeps
    its mean too)."""
    rates: dict[str, float] = {}
    for key, column in cols.values.items():
        head = key.split(".", 1)[0]
        if head.endswith("_score") and head[: -len("_score")] in _SAFETY_SCORES:
            flags = [NAN if _is_null(v) else float(_to_number(v) >= _SAFETY_DEFECT_FROM) for v in column]
            rate = _rate(flags, key)
            if rate is not None:
                rates[f"{name}.{key.replace('_score', '_defect_rate')}"] = rate
    return rates


def _label_rates(name: str, cols: Columns) -> tuple[set[str], dict[str, float]]:
    """Rates of true labels (renamed ones, and the defect labels of content checks, with their
    ``_details`` keys), and the columns they consume (left out of the means)."""
    handled: set[str] = set()
    rates: dict[str, float] = {}
    details_key: str | None = None
    for key, column in cols.values.items():
        head = key.split(".", 1)[0]
        if head in _RENAMED:
            target = f"{name}.{_RENAMED[head]}"
        elif head.endswith("_label") and head[: -len("_label")].lower() in _LABEL_DEFECTS:
            target = f"{name}.{key.replace('_label', '_defect_rate')}"
        else:
            if head.endswith("_details") and head[: -len("_details")].lower() in _LABEL_DEFECTS:
                details_key = key
            continue
        handled.add(key)
        rate = _rate(column, key)
        if rate is not None:
            rates[target] = rate
    if details_key is not None:
        per_key: dict[str, list[Any]] = {}
        for value in cols.values[details_key]:
            if isinstance(value, Mapping):
                for k, v in value.items():
                    per_key.setdefault(str(k), []).append(v)
        for k, values in per_key.items():
            rate = _rate(values, k)
            if rate is not None:
                rates[f"{name}.{details_key}.{k}_defect_rate"] = rate
    return handled, rates


def _means(name: str, cols: Columns, handled: set[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, column in cols.values.items():
        if key in handled or key.endswith(("_threshold", "_result")) or key.endswith(_TOKEN_SUFFIXES):
            continue
        if cols.kinds[key] == "object":
            continue  # text, lists, dicts, gaps in booleans: pandas' mean(numeric_only=True) skips them
        mean = _nan_mean(column, cols.kinds[key])
        if mean is not None:
            out[f"{name}.{key}"] = mean
    return out


def sdk_metrics(
    columns: Mapping[str, Columns], aggregators: Mapping[str, Callable[[Any], Any]] | None = None
) -> dict[str, float]:
    """``metrics`` as the SDK's ``evaluate()`` computes them from the evaluators' columns: the means,
    then the defect rates, then ``<name>.binary_aggregate`` (share of all rows whose ``*_result`` is
    "pass", two decimals; the last such column of an evaluator wins), then what an evaluator's own
    ``__aggregate__`` returns (``aggregators[name]``)."""
    means: dict[str, float] = {}
    rates: dict[str, float] = {}
    binary: dict[str, float] = {}
    for name, cols in columns.items():
        handled, labels = _label_rates(name, cols)
        means.update(_means(name, cols, handled))
        rates.update(_safety_rates(name, cols))
        rates.update(labels)
        binary.update(_binary_aggregates(name, cols))
    metrics = {**means, **rates, **binary}
    for name, aggregate in (aggregators or {}).items():
        if name in columns:
            metrics.update(_own_aggregate(name, columns[name], aggregate))
    return metrics


def _own_aggregate(name: str, cols: Columns, aggregate: Callable[[Any], Any]) -> dict[str, Any]:
    """An evaluator's ``__aggregate__`` called as the SDK calls it: with the list of its single
    ``output`` column's values, else with one attribute-readable dict per row."""
    try:
        if list(cols.values) == ["output"]:
            got = aggregate(list(cols.values["output"]))
        else:
            got = aggregate([_AttrDict(cols.row(i)) for i in range(cols.n_rows)])
    except Exception as exc:  # a user's aggregation that fails costs its metrics only, as in the SDK
        log.warning("__aggregate__ of evaluator %s failed: %s", name, exc)
        return {}
    if not isinstance(got, dict):
        log.warning("__aggregate__ of evaluator %s returned %s, not a dict", name, type(got).__name__)
        return {}
    return {f"{name}.{k}": v for k, v in got.items()}


class _AttrDict(dict[str, Any]):
    """A row whose keys read as attributes too (what the SDK hands to ``__aggregate__``)."""

    def __getattr__(self, item: str) -> Any:
        try:
            return self[item]
        except KeyError:
            raise AttributeError(item) from None


def _leaves(value: Mapping[str, Any], head: str, out: dict[str, None]) -> None:
    for key, item in value.items():
        path = f"{head}.{key}"
        if isinstance(item, Mapping):
            _leaves(item, path, out)
        else:
            out[path] = None


def _leaf(value: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _leaf_columns(cols: Columns) -> Columns:
    """``<column>.<key>[.<key>...]`` for every leaf of the dicts a column holds (None where a row
    has no such leaf): the SDK adds them to the data (and the target's outputs) so that nested
    fields can be mapped by name; a column that already exists is not replaced."""
    out = Columns(cols.n_rows)
    for key, column in cols.values.items():
        paths: dict[str, None] = {}
        for value in column:
            if isinstance(value, Mapping):
                _leaves(value, key, paths)
        for path in paths:
            if path in cols.values:
                continue
            keys = path[len(key) + 1 :].split(".")
            out.values[path], out.kinds[path] = coerce(
                [_leaf(v, keys) if isinstance(v, Mapping) else None for v in column]
            )
    return out


def sdk_input(data: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    """A data row as the SDK's rows show it: it reads a CSV file as text, an empty cell as NaN."""
    if source.lower().endswith(".csv") and "" in data.values():
        return {k: NAN if v == "" else v for k, v in data.items()}
    return data


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
