"""Aggregation of a run's results: the compatible SDK's ``metrics`` dict, and the ``summary`` made
from typed Scores (per score: n, failures, mean with its 95% bootstrap interval, pass rate, and
whatever other aggregators the metric declares, with the direction of the score).

The SDK's ``metrics`` are, as the SDK computes them, means of the numeric (and boolean) flat output
keys; the summary never reads key names: it reads the Scores of each row's
:class:`~touchstone.scores.Outcome` and the metric's :class:`~touchstone.evaluators.base.MetricInfo`.
No model calls: everything here is recomputable from stored scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone.scores import CompactOutcome, Outcome, ScoreLine, Status
from touchstone.stats.aggregators import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    ScoreColumn,
    bootstrap_ci,
    get_aggregator,
)

if TYPE_CHECKING:
    from touchstone.evaluators.base import MetricInfo

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "bootstrap_ci",
    "is_failed",
    "sdk_metrics",
    "summarize",
]
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


def sdk_metrics(
    names: Sequence[str],
    outputs: Mapping[str, Sequence[Mapping[str, Any] | None]],
    corpus: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, float]:
    """The compatible SDK's ``metrics``: ``<name>.<key>`` -> mean of the numeric (and boolean) flat
    outputs over the rows that have one, thresholds, labels and errors excluded, plus
    ``<name>.binary_aggregate`` (share of all rows that passed) and the corpus figures."""
    metrics: dict[str, float] = {}
    for name in names:
        rows = outputs.get(name, [])
        total = len(rows)
        keys = _keys_in_order(rows)
        result_keys = [k for k in keys if k.endswith("_result")]
        for key in keys:
            if key.endswith(_EXCLUDED_SUFFIXES) or key.endswith("_error"):
                continue
            values, _ = _numbers(rows, key)
            if values:
                metrics[f"{name}.{key}"] = float(np.asarray(values, dtype=float).mean())
        for rkey in result_keys:
            passes = sum(1 for r in rows if r and r.get(rkey) == "pass")
            metrics.setdefault(f"{name}.binary_aggregate", round(passes / total, 2) if total else 0.0)
        for key, value in (corpus or {}).get(name, {}).items():
            metrics[f"{name}.{key}"] = value
    return metrics


def _collect_lines(
    lines: Sequence[ScoreLine], values: dict[str, list[float]], passed: dict[str, list[bool]]
) -> None:
    """What :func:`summarize` reads of Scores, from their :data:`ScoreLine` tuples (no objects built)."""
    for metric, value, _, status, _, flag in lines:
        if status != "ok" or value is None:
            continue
        values.setdefault(metric, []).append(value)
        if flag is not None:
            passed.setdefault(metric, []).append(bool(flag))


def summarize(
    infos: Mapping[str, MetricInfo],
    outcomes: Mapping[str, Sequence[Outcome | None]],
    corpus: Mapping[str, Mapping[str, float]] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The summary of each evaluator ``name`` (metadata ``infos[name]``, one Outcome or None per row):
    one entry ``<name>.<score>`` per score the metric reports -- its main score always, even when
    every row failed (then ``n`` is 0 and ``mean`` None) -- with ``n``, ``n_failed``, ``n_rows``,
    ``higher_is_better`` and the figures of the metric's aggregators; then the corpus figures.
    ``options[name]`` passes aggregator options (e.g. ``defect_level``)."""
    summary: dict[str, dict[str, Any]] = {}
    for name, info in infos.items():
        rows = outcomes.get(name, [])
        n_failed = sum(1 for o in rows if o is None or o.failed)
        values: dict[str, list[float]] = {info.key: []}
        passed: dict[str, list[bool]] = {}
        for outcome in rows:
            if outcome is None:
                continue
            if type(outcome) is CompactOutcome and outcome.lines_current:
                _collect_lines(outcome.lines, values, passed)
                continue
            for sc in outcome.scores:
                if sc.status is not Status.OK or sc.value is None:
                    continue
                values.setdefault(sc.name, []).append(float(sc.value))
                if sc.passed is not None:
                    passed.setdefault(sc.name, []).append(bool(sc.passed))
        for score_name, column in values.items():
            col = ScoreColumn(
                values=np.asarray(column, dtype=float),
                passed=passed.get(score_name, []),
                n_failed=n_failed,
                n_rows=len(rows),
                higher_is_better=info.direction(score_name),
                options=(options or {}).get(name, {}),
            )
            entry: dict[str, Any] = {"n": len(column), "n_failed": n_failed, "n_rows": len(rows),
                                     "higher_is_better": col.higher_is_better}
            for agg in info.aggregators:
                entry.update(get_aggregator(agg)(col))
            summary[f"{name}.{score_name}"] = entry
        for key, value in (corpus or {}).get(name, {}).items():
            summary[f"{name}.{key}"] = {"value": value, "n": len(rows) - n_failed, "n_failed": n_failed,
                                        "corpus": True, "higher_is_better": True}
    return summary
