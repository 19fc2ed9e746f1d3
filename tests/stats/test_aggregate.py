"""Aggregation: the SDK ``metrics`` (the engine's ``sdk_metrics``, over the SDK's frame) and the
Score-based ``summary`` (``summarize``) equal the definitions written out here on random outputs of
every shape, and the bootstrap interval is seeded, sound, and the same distribution on both of its
paths."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from touchstone.engine.sdk_frame.columns import Columns, evaluator_columns
from touchstone.engine.sdk_frame.metrics import sdk_metrics
from touchstone.evaluators.base import FunctionEvaluator, MetricInfo
from touchstone.scores import ErrorInfo, Outcome, Score
from touchstone.stats.aggregate import bootstrap_ci, is_failed, summarize


def _reference(
    names: list[str], outputs: dict[str, list[dict[str, Any] | None]]
) -> tuple[dict[str, float], dict[str, Any]]:
    """The SDK's aggregation, written out: mean of numeric/boolean values per key (NaN, text and
    missing values skipped; thresholds, labels and errors excluded), binary_aggregate from labels."""

    def number(v: Any) -> bool:
        return isinstance(v, bool) or (isinstance(v, (int, float)) and not math.isnan(v))

    metrics: dict[str, float] = {}
    summary: dict[str, Any] = {}
    for name in names:
        rows = outputs[name]
        failed = sum(1 for r in rows if r is None or any(k.endswith("_error") and v for k, v in r.items()))
        keys: list[str] = []
        for r in rows:
            for k in r or {}:
                if k not in keys:
                    keys.append(k)
        for key in keys:
            if key.endswith(("_threshold", "_result", "_error")):
                continue
            values = [r[key] for r in rows if r and key in r and number(r[key])]
            if not values:
                continue
            metrics[f"{name}.{key}"] = float(np.mean(np.asarray(values, dtype=float)))
            if any(isinstance(v, bool) for v in values):
                continue
            if key not in ("m", "extra"):
                continue
            summary[f"{name}.{key}"] = {"n": len(values), "n_failed": failed, "n_rows": len(rows)}
        labels = [k for k in keys if k.endswith("_result")]
        if labels:
            passes = sum(1 for r in rows if r and r.get(labels[0]) == "pass")
            metrics[f"{name}.binary_aggregate"] = round(passes / len(rows), 2)
    return metrics, summary


def _random_outputs(rng: random.Random, n: int) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            out.append(None)
        elif r < 0.12:
            out.append({"m_error": "ValueError: bad"})
        else:
            value: Any = rng.choice([rng.random(), rng.randint(1, 5), float("nan"), 0.0, 1, None, "n/a"])
            row: dict[str, Any] = {
                "m": value,
                "m_score": value,
                "m_result": rng.choice(["pass", "fail"]),
                "m_threshold": 3,
            }
            if rng.random() < 0.5:
                row["m_passed"] = rng.random() < 0.5
            if rng.random() < 0.3:
                row["extra"] = np.float64(rng.random()) if rng.random() < 0.5 else rng.random()
            row["m_properties"] = {"k": 1}
            row["m_reason"] = "because"
            out.append(row)
    return out


def _outcomes(info: MetricInfo, rows: list[dict[str, Any] | None]) -> list[Outcome | None]:
    """The same rows as Outcomes: ``m`` the main score (passed from ``m_result``), ``extra`` a
    secondary score, ``m_error`` a failure."""
    out: list[Outcome | None] = []
    for r in rows:
        if r is None:
            out.append(None)
        elif r.get("m_error"):
            out.append(Outcome([Score.failed("m", ErrorInfo("computation", r["m_error"]))], r))
        else:
            scores = []
            if isinstance(r["m"], (int, float)) and r["m"] == r["m"]:
                scores.append(Score("m", r["m"], passed=r["m_result"] == "pass"))
            if "extra" in r:
                scores.append(Score("extra", float(r["extra"])))
            out.append(Outcome(scores, r))
    return out


def _numeric_keys(columns: dict[str, Columns]) -> set[str]:
    return {
        f"{name}.{key}"
        for name, cols in columns.items()
        for key, kind in cols.kinds.items()
        if kind != "object"
    }


@pytest.mark.parametrize("seed", range(40))
def test_aggregate_equals_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    outputs = {"a": _random_outputs(rng, rng.randint(1, 300)), "b": _random_outputs(rng, rng.randint(1, 50))}
    columns = {name: evaluator_columns(rows, [is_failed(r) for r in rows]) for name, rows in outputs.items()}
    metrics = sdk_metrics(columns)
    want_metrics, want_summary = _reference(["a", "b"], outputs)
    # the SDK's frame averages the columns pandas reads as numbers: a column holding text (or
    # booleans with gaps) has no mean, as in the SDK
    numeric = _numeric_keys(columns)
    want_metrics = {k: v for k, v in want_metrics.items() if k in numeric or k.endswith(".binary_aggregate")}
    assert metrics.keys() == want_metrics.keys()
    for key, value in want_metrics.items():
        assert metrics[key] == pytest.approx(value, abs=1e-12), key
    info = MetricInfo(name="m", key="m", prefix="m", secondary=("extra",))
    outcomes = {name: _outcomes(info, rows) for name, rows in outputs.items()}
    summary = summarize({"a": info, "b": info}, outcomes)
    for key, entry in want_summary.items():
        assert {k: summary[key][k] for k in entry} == entry
        found = [o.score(key.split(".")[1]) for o in outcomes[key[0]] if o is not None]
        values = [sc.value for sc in found if sc is not None and sc.ok and sc.value is not None]
        assert summary[key]["mean"] == pytest.approx(float(np.mean(values)), abs=1e-12)
    for name in ("a", "b"):
        # the main score is always listed, even when no row scored it
        assert f"{name}.m" in summary


def test_a_metric_whose_every_row_failed_is_in_the_summary() -> None:
    ev = FunctionEvaluator(lambda response: 1 / 0, name="boom")
    outcomes = {"boom": [ev.failure(ZeroDivisionError("division by zero")) for _ in range(5)]}
    summary = summarize({"boom": ev.info}, outcomes)
    entry = summary["boom.boom"]
    assert entry["n"] == 0 and entry["n_failed"] == 5 and entry["mean"] is None
    assert entry["higher_is_better"] is True
    assert sdk_metrics({"boom": evaluator_columns(outcomes["boom"], [True] * 5)}) == {}


def test_is_failed() -> None:
    assert is_failed(None)
    assert is_failed({"x": 1, "x_error": "boom"})
    assert not is_failed({"x": 1, "x_error": None})
    assert not is_failed({"x": 1, "x_error": ""})
    assert not is_failed({})


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    rng = np.random.default_rng(0)
    for values in (
        rng.random(500),
        rng.integers(1, 6, 500).astype(float),
        (rng.random(2000) < 0.3).astype(float),
    ):
        lo, hi = bootstrap_ci(values)
        assert (lo, hi) == bootstrap_ci(values)
        assert lo < values.mean() < hi
    assert bootstrap_ci(np.array([])) == pytest.approx((math.nan, math.nan), nan_ok=True)
    assert bootstrap_ci(np.array([0.4])) == (0.4, 0.4)
    assert bootstrap_ci(np.full(50, 0.7)) == (0.7, 0.7)


@pytest.mark.parametrize("levels", [2, 5, 40])
def test_both_bootstrap_paths_draw_the_same_distribution(levels: int) -> None:
    """Few distinct values take the multinomial path; the same values with a tiny jitter (all
    distinct) take the index path. With many resamples their intervals agree, and both agree with
    the normal approximation of the mean's sampling distribution."""
    rng = np.random.default_rng(levels)
    n = 4000
    values = rng.integers(0, levels, n).astype(float) / max(1, levels - 1)
    jittered = values + rng.normal(0, 1e-9, n)  # every value distinct: index resampling
    assert len(np.unique(values)) * 16 <= n < len(np.unique(jittered)) * 16
    a = bootstrap_ci(values, resamples=20000)
    b = bootstrap_ci(jittered, resamples=20000, seed=1)
    se = values.std(ddof=1) / math.sqrt(n)
    normal = (values.mean() - 1.96 * se, values.mean() + 1.96 * se)
    for lo, hi in (a, b):
        assert lo == pytest.approx(normal[0], abs=0.08 * se * 1.96 + 1e-6)
        assert hi == pytest.approx(normal[1], abs=0.08 * se * 1.96 + 1e-6)
    assert a[0] == pytest.approx(b[0], abs=0.1 * se * 1.96)
