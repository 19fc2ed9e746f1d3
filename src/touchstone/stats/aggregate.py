"""Aggregation of stored per-row outputs: the SDK-compatible ``metrics`` dict and the richer
``summary`` (mean, n, failures, 95% bootstrap interval, pass rate). No model calls: everything here is
recomputable from stored scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20240607
_EXCLUDED_SUFFIXES = ("_threshold", "_result")
_ERROR_KEYS: dict[tuple[Any, ...], tuple[str, ...]] = {}


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, (int, float)) and not math.isnan(value)


def is_failed(outputs: Mapping[str, Any] | None) -> bool:
    """True when a row has no outputs or any ``*_error`` output is set."""
    if outputs is None:
        return True
    shape = tuple(outputs)
    error_keys = _ERROR_KEYS.get(shape)
    if error_keys is None:
        error_keys = tuple(k for k in shape if isinstance(k, str) and k.endswith("_error"))
        if len(_ERROR_KEYS) < 4096:  # outputs of one evaluator share a few shapes
            _ERROR_KEYS[shape] = error_keys
    return any(outputs[k] for k in error_keys) if error_keys else False


def bootstrap_ci(
    values: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; seeded, so the same values give the same interval.

    Each resample draws ``n`` values with replacement. When the values take few distinct levels (pass
    flags, 1-5 ratings, F1 of short answers) a resample is drawn as multinomial counts of the levels,
    which has exactly the same distribution as drawing indices and costs O(levels) instead of O(n)."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1 or float(values.min()) == float(values.max()):
        v = float(values[0])
        return (v, v)
    rng = np.random.default_rng(seed)
    levels, counts = np.unique(values, return_counts=True)
    if len(levels) * 16 <= n:
        draws = rng.multinomial(n, counts / n, size=resamples)
        means = draws @ levels / n
    else:
        means = np.empty(resamples)
        chunk = max(1, min(resamples, 4_000_000 // n))  # bound memory to ~32 MB of indices
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            idx = rng.integers(0, n, size=(stop - start, n))
            means[start:stop] = values[idx].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


_MISSING = object()


def _numbers(rows: Sequence[Mapping[str, Any] | None], key: str) -> tuple[list[Any], bool]:
    """The numeric (and boolean) values of ``key`` over the rows, in row order, NaN excluded, and
    whether any is a boolean."""
    column = [r.get(key, _MISSING) for r in rows if r]
    kinds = set(map(type, column))
    if kinds <= {float, int}:  # the common case: no booleans, nothing missing, no text
        return [v for v in column if v == v], False  # v != v only for NaN
    if not any(issubclass(kind, (int, float)) for kind in kinds):
        return [], False  # labels, properties, reasons...
    values = [v for v in column if v is not _MISSING and _is_number(v)]
    return values, bool in kinds and any(isinstance(v, bool) for v in values)


def _keys_in_order(rows: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """Every output key, in order of first appearance (rows of one evaluator share a few shapes)."""
    shapes = dict.fromkeys(tuple(r) for r in rows if r)
    return list(dict.fromkeys(k for shape in shapes for k in shape))


def aggregate(
    names: Sequence[str],
    outputs: Mapping[str, Sequence[Mapping[str, Any] | None]],
    corpus: Mapping[str, Mapping[str, float]] | None = None,
    failed: Mapping[str, int] | None = None,
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Return ``(metrics, summary)`` for the evaluators ``names``.

    ``outputs[name]`` holds each row's outputs (``None`` when the row has none). ``metrics`` follows
    the compatible SDK: ``<name>.<key>`` -> mean of numeric (and boolean) outputs over the rows that
    have one, thresholds and result labels excluded, plus ``<name>.binary_aggregate`` (share of all
    rows that passed). ``summary`` adds, per numeric key, n, n_failed, the 95% CI and the pass rate.
    ``failed`` (optional) gives the number of failed rows per evaluator when the caller already
    counted them (:func:`is_failed` otherwise).
    """
    metrics: dict[str, float] = {}
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = outputs.get(name, [])
        total = len(rows)
        n_failed = failed[name] if failed is not None and name in failed else sum(1 for r in rows if is_failed(r))
        keys = _keys_in_order(rows)
        result_keys = [k for k in keys if k.endswith("_result")]
        for key in keys:
            if key.endswith(_EXCLUDED_SUFFIXES) or key.endswith("_error"):
                continue
            values, has_bool = _numbers(rows, key)
            if not values:
                continue
            arr = np.asarray(values, dtype=float)
            mean = float(arr.mean())
            metrics[f"{name}.{key}"] = mean
            if has_bool:
                continue  # booleans (m_passed) are in metrics, as the SDK has them, not in the summary
            if _alias_of(key, name, summary):
                continue  # m_score and gpt_m repeat m
            entry: dict[str, Any] = {
                "mean": mean,
                "n": len(values),
                "n_failed": n_failed,
                "n_rows": total,
                "ci95": list(bootstrap_ci(arr)),
                "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
            }
            rkey = f"{key}_result"
            if rkey not in result_keys and key.endswith("_score"):
                rkey = f"{key[:-6]}_result"
            if rkey in result_keys:
                labels = [r[rkey] for r in rows if r and rkey in r]
                entry["pass_rate"] = labels.count("pass") / len(labels) if labels else None
                entry["n_passed"] = labels.count("pass")
            summary[f"{name}.{key}"] = entry
        for rkey in result_keys:
            passes = sum(1 for r in rows if r and r.get(rkey) == "pass")
            metrics.setdefault(f"{name}.binary_aggregate", round(passes / total, 2) if total else 0.0)
        for key, value in (corpus or {}).get(name, {}).items():
            metrics[f"{name}.{key}"] = value
            summary[f"{name}.{key}"] = {"value": value, "n": total - n_failed, "n_failed": n_failed, "corpus": True}
    return metrics, summary


def _alias_of(key: str, name: str, summary: Mapping[str, Any]) -> bool:
    if key.endswith("_score") and f"{name}.{key[:-6]}" in summary:
        return True
    return key.startswith("gpt_") and f"{name}.{key[4:]}" in summary
