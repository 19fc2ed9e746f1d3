"""Aggregation of a run's results: the ``summary`` made from typed Scores (per score: n, failures,
mean with its 95% bootstrap interval, pass rate, and whatever other aggregators the metric declares,
with the direction of the score).

The summary never reads key names: it reads the Scores of each row's
:class:`~touchstone.scores.Outcome` and the metric's :class:`~touchstone.evaluators.base.MetricInfo`.
(The compatible SDK's ``metrics`` dict is made from the SDK's frame of the rows:
:func:`touchstone.engine.sdk_frame.metrics.sdk_metrics`.) No model calls: everything here is recomputable from
stored scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone.scores import METRIC, PASSED, STATUS, VALUE, CompactOutcome, Outcome, ScoreLine, Status
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
    "summarize",
]
_ERROR_KEYS: dict[tuple[Any, ...], tuple[str, ...]] = {}


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


def _collect_lines(
    lines: Sequence[ScoreLine], values: dict[str, list[float]], passed: dict[str, list[bool]]
) -> None:
    """What :func:`summarize` reads of Scores, from their :data:`ScoreLine` tuples (no objects built)."""
    for line in lines:
        value = line[VALUE]
        if line[STATUS] != "ok" or value is None:
            continue
        values.setdefault(line[METRIC], []).append(value)
        if line[PASSED] is not None:
            passed.setdefault(line[METRIC], []).append(bool(line[PASSED]))


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
