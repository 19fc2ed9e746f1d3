"""One cell of the SDK's frame: the values its rows hold and how pandas would leave them.

A row lacking a key holds :data:`MISSING` until its column is coerced (pandas gives NaN there);
numpy scalars read as the Python values they stand for; a column's values are coerced together
(:func:`coerce`), since what a row holds depends on the other rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

Kind = Literal["int", "float", "bool", "object"]


NAN = float("nan")


MISSING: Any = object()


INT64 = (-(2**63), 2**63 - 1)


PER_TURN = "evaluation_per_turn"


def is_nan(value: Any) -> bool:
    """True for a float NaN (what the SDK's rows hold where a value is missing)."""
    return isinstance(value, float) and value != value


def is_null(value: Any) -> bool:
    return value is None or value is MISSING or is_nan(value)


def python_value(value: Any) -> Any:
    """numpy scalars as the Python values they stand for (``to_dict("records")`` does the same)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


def coerce(values: list[Any]) -> tuple[list[Any], Kind]:
    """One column as pandas' DataFrame constructor leaves it, and the column's kind.

    ``values`` holds one entry per row, ``MISSING`` where the row lacks the key. Ints (no gap) stay
    ints; ints, floats and gaps (None, NaN, missing) together become floats with NaN in the gaps;
    booleans without a gap stay booleans; anything else is kept as it is (missing -> NaN, None kept)."""
    kinds = set(map(type, values))
    if kinds == {float}:
        return values, "float"
    if kinds == {int} or kinds == {bool} or kinds == {str}:
        if kinds == {int} and not all(INT64[0] <= v <= INT64[1] for v in values):
            return values, "object"
        return values, "int" if int in kinds else "bool" if bool in kinds else "object"
    if any(k.__module__ == "numpy" for k in kinds):
        return coerce([python_value(v) for v in values])
    rest = kinds - {type(None), type(MISSING)}
    if rest <= {int, float} and (rest or type(MISSING) in kinds):  # all None stays None
        return [NAN if is_null(v) else float(v) for v in values], "float"
    if type(MISSING) in kinds:
        values = [NAN if v is MISSING else v for v in values]
    return values, "object"


def keys_in_order(rows: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """Every key of ``rows`` in order of first appearance (rows share a few shapes)."""
    shapes = dict.fromkeys(tuple(r) for r in rows if r)
    return list(dict.fromkeys(k for shape in shapes for k in shape))


def flatten_dict(value: Mapping[str, Any], head: str, out: dict[str, Any]) -> None:
    for key, item in value.items():
        name = f"{head}.{key}"
        if isinstance(item, Mapping):
            flatten_dict(item, name, out)
        else:
            out[name] = item


def leaf_paths(value: Mapping[str, Any], head: str, out: dict[str, None]) -> None:
    for key, item in value.items():
        path = f"{head}.{key}"
        if isinstance(item, Mapping):
            leaf_paths(item, path, out)
        else:
            out[path] = None


def leaf_value(value: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def sdk_input(data: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    """A data row as the SDK's rows show it: it reads a CSV file as text, an empty cell as NaN."""
    if source.lower().endswith(".csv") and "" in data.values():
        return {k: NAN if v == "" else v for k, v in data.items()}
    return data
