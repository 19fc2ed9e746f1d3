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


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, (int, float)) and not math.isnan(value)


def is_failed(outputs: Mapping[str, Any] | None) -> bool:
    return outputs is None or any(k.endswith("_error") and v for k, v in outputs.items())


def bootstrap_ci(
    values: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; seeded, so the same values give the same interval."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1 or float(values.min()) == float(values.max()):
        v = float(values[0])
        return (v, v)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, min(resamples, 4_000_000 // n))  # bound memory to ~32 MB of indices
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[idx].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def aggregate(
    names: Sequence[str],
    outputs: Mapping[str, Sequence[Mapping[str, Any] | None]],
    corpus: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Return ``(metrics, summary)`` for the evaluators ``names``.

    ``outputs[name]`` holds each row's outputs (``None`` when the row has none). ``metrics`` follows
    the compatible SDK: ``<name>.<key>`` -> mean of numeric (and boolean) outputs over the rows that
    have one, thresholds and result labels excluded, plus ``<name>.binary_aggregate`` (share of all
    rows that passed). ``summary`` adds, per numeric key, n, n_failed, the 95% CI and the pass rate.
    """
    metrics: dict[str, float] = {}
    summary: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = outputs.get(name, [])
        total = len(rows)
        failed = sum(1 for r in rows if is_failed(r))
        keys: list[str] = []
        for r in rows:
            if r:
                for k in r:
                    if k not in keys:
                        keys.append(k)
        result_keys = [k for k in keys if k.endswith("_result")]
        for key in keys:
            if key.endswith(_EXCLUDED_SUFFIXES) or key.endswith("_error"):
                continue
            values = [r[key] for r in rows if r and key in r and _is_number(r[key])]
            if not values:
                continue
            arr = np.asarray(values, dtype=float)
            mean = float(arr.mean())
            metrics[f"{name}.{key}"] = mean
            if any(isinstance(v, bool) for v in values):
                continue  # booleans (m_passed) are in metrics, as the SDK has them, not in the summary
            if _alias_of(key, name, summary):
                continue  # m_score and gpt_m repeat m
            entry: dict[str, Any] = {
                "mean": mean,
                "n": len(values),
                "n_failed": failed,
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
            summary[f"{name}.{key}"] = {"value": value, "n": total - failed, "n_failed": failed, "corpus": True}
    return metrics, summary


def _alias_of(key: str, name: str, summary: Mapping[str, Any]) -> bool:
    if key.endswith("_score") and f"{name}.{key[:-6]}" in summary:
        return True
    return key.startswith("gpt_") and f"{name}.{key[4:]}" in summary
