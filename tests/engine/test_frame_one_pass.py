"""engine/sdk_frame's one-pass paths (rows built in one transpose, one transpose per column set when
every row has the same keys, numeric means by numpy) against the plain definitions they replace, on
random frames: the same values of the same types, the same keys in the same order."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from touchstone.engine.sdk_frame import columns as fc
from touchstone.engine.sdk_frame import metrics as fm
from touchstone.engine.sdk_frame import values as fv
from touchstone.engine.sdk_frame.columns import Columns, sdk_rows


def _reference_rows(
    inputs: Sequence[Mapping[str, Any]],
    evaluators: Mapping[str, Sequence[Mapping[str, Any] | None]],
    failed: Mapping[str, Sequence[bool]],
    targets: Sequence[tuple[Mapping[str, Any] | None, str | None]] | None,
) -> list[dict[str, Any]]:
    """The rows as each part of the frame is added to every row in turn (the definition)."""
    n = len(inputs)
    data = _reference_columns(inputs)
    frame: list[tuple[str, Columns]] = [("inputs.", data)]
    if targets is not None:
        line = Columns(n)
        line.values["line_number"], line.kinds["line_number"] = list(range(n)), "int"
        frame.append(("inputs.", line))
        frame.append(("outputs.", _reference_columns([o if e is None else None for o, e in targets])))
    if not ({"conversation", "messages"} & set(data.values)):
        frame.extend([(head, fc._leaf_columns(cols)) for head, cols in frame])
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for head, cols in frame:
        for i, row in enumerate(rows):
            for key, column in cols.values.items():
                row[head + key] = column[i]
    if targets is not None:
        for row, (_, err) in zip(rows, targets, strict=True):
            if err is not None:
                row["outputs.target_error"] = err
    for name, outs in evaluators.items():
        bad = failed[name]
        cols = _reference_columns([None if b else o for o, b in zip(outs, bad, strict=True)], spread=True)
        for i, row in enumerate(rows):
            for key, column in cols.values.items():
                row[f"outputs.{name}.{key}"] = column[i]
            if bad[i] and outs[i] is not None:
                for key, value in outs[i].items():  # type: ignore[union-attr]
                    if key not in cols.values:
                        row[f"outputs.{name}.{key}"] = value
    return rows


def _reference_columns(rows: Sequence[Mapping[str, Any] | None], *, spread: bool = False) -> Columns:
    """Columns.of by looking every key up in every row (the definition)."""
    cols = Columns(len(rows))
    later = []
    for key in fv.keys_in_order(rows):
        column = [fv.MISSING if r is None else r.get(key, fv.MISSING) for r in rows]
        if spread and fv.PER_TURN in key and fc._first_present_is_dict(column):
            later.append((key, column))
        else:
            cols.values[key], cols.kinds[key] = fv.coerce(column)
    for key, column in later:
        flat = []
        for value in column:
            parts: dict[str, Any] = {}
            if isinstance(value, Mapping):
                fv.flatten_dict(value, key, parts)
            flat.append(parts)
        for sub in fv.keys_in_order(flat):
            cols.values[sub], cols.kinds[sub] = fv.coerce([p.get(sub, fv.MISSING) for p in flat])
    return cols


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    return len(got) == len(want) and all(
        list(g) == list(w) and all(_same(g[k], w[k]) for k in w) for g, w in zip(got, want, strict=True)
    )


VALUES: list[Any] = [0, 1, -3, 2.5, math.nan, None, True, False, "x", "", "pass", "fail", [1], 2**70,
                     {"a": 1}, {"a": {"b": 2.0}}]


def _random_row(rng: random.Random, keys: list[str], uniform: bool) -> dict[str, Any]:
    chosen = keys if uniform else [k for k in keys if rng.random() < 0.8]
    return {k: rng.choice(VALUES) for k in chosen}


@pytest.mark.parametrize("seed", range(60))
def test_rows_equal_the_part_by_part_definition(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 25)
    uniform = rng.random() < 0.5
    data_keys = rng.sample(["q", "r", "ctx", "meta", "gt"], rng.randint(1, 4))
    inputs = [_random_row(rng, data_keys, uniform) for _ in range(n)]
    evaluators: dict[str, list[Mapping[str, Any] | None]] = {}
    failed: dict[str, list[bool]] = {}
    for name in rng.sample(["f1", "bleu", "judge"], rng.randint(1, 3)):
        keys = [f"{name}_score", f"{name}_result", f"{name}_reason", "evaluation_per_turn"]
        keys = keys[: rng.randint(1, 4)]
        outs: list[Mapping[str, Any] | None] = []
        bad: list[bool] = []
        for _ in range(n):
            fails = rng.random() < 0.2
            if fails:
                error = {f"{name}_error": "boom", f"{name}_score": math.nan}
                outs.append(None if rng.random() < 0.3 else error)
            else:
                row = _random_row(rng, keys, uniform)
                if "evaluation_per_turn" in row and rng.random() < 0.7:
                    row["evaluation_per_turn"] = {"s": [rng.random()], "t": {"u": rng.choice(VALUES)}}
                outs.append(row)
            bad.append(fails)
        evaluators[name], failed[name] = outs, bad
    targets = None
    if rng.random() < 0.5:
        targets = [
            (None, "timed out") if rng.random() < 0.2
            else (_random_row(rng, ["answer", "ctx"], uniform), None)
            for _ in range(n)
        ]
    got, columns = sdk_rows(inputs, evaluators, failed, targets)
    assert _same_rows(got, _reference_rows(inputs, evaluators, failed, targets))
    for name, outs in evaluators.items():
        kept = [None if b else o for o, b in zip(outs, failed[name], strict=True)]
        want = _reference_columns(kept, spread=True)
        assert list(columns[name].values) == list(want.values)
        assert columns[name].kinds == want.kinds


@pytest.mark.parametrize("seed", range(40))
def test_columns_of_equals_the_key_by_key_definition(seed: int) -> None:
    rng = random.Random(1000 + seed)
    keys = rng.sample(["a", "b", "c", "evaluation_per_turn"], rng.randint(0, 4))
    uniform = rng.random() < 0.6
    rows: list[Mapping[str, Any] | None] = [
        _random_row(rng, keys, uniform) for _ in range(rng.randint(0, 30))
    ]
    if rows and rng.random() < 0.2:
        rows[rng.randrange(len(rows))] = None
    spread = rng.random() < 0.5
    got, want = Columns.of(rows, spread=spread), _reference_columns(rows, spread=spread)
    assert list(got.values) == list(want.values) and got.kinds == want.kinds
    for key in want.values:
        assert all(_same(a, b) for a, b in zip(got.values[key], want.values[key], strict=True))


@pytest.mark.parametrize("seed", range(40))
def test_numeric_means_and_pass_shares_equal_their_definitions(seed: int) -> None:
    rng = random.Random(2000 + seed)
    pool: list[Any] = rng.choice([[0.1, 0.7, math.nan, 3.25, -1e300], [1, 5, -7, 2**40], [True, False],
                                  [1, 2.5, None], ["pass", "fail", math.nan, None]])
    rows = [{"m_score": rng.choice(pool), "m_result": rng.choice(["pass", "fail", "pass"])}
            for _ in range(rng.randint(1, 50))]
    cols = Columns.of(rows)
    column, kind = cols.values["m_score"], cols.kinds["m_score"]
    if kind != "object":
        numbers = [float(v) for v in column if not fv.is_null(v)]
        want = sum(numbers) / len(numbers) if numbers else None
        got = fm._nan_mean(column, kind)
        assert (got is None) == (want is None)
        assert got is None or want is None or math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-300)
        assert got == fm._nan_mean(column)  # the same numbers summed the same way
    passes = sum(1 for row in rows if row["m_result"] == "pass")
    assert fm._binary_aggregates("m", cols) == {"m.binary_aggregate": round(passes / len(rows), 2)}


def test_a_result_column_holding_lists_gives_no_pass_share() -> None:
    cols = Columns.of([{"m_result": ["pass"]}, {"m_result": "pass"}])
    assert fm._binary_aggregates("m", cols) == {}
