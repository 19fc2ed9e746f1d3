"""A run's score distributions: per metric, a histogram of its values (or the counts of its labels)
and its failures by error kind, counted by the store (two reads per metric: its range, then its
bins)."""

from __future__ import annotations

import math
from typing import Any

from touchstone.store.base import RunInfo, Store
from touchstone.store.dashboard import MetricRef
from touchstone.ui.views import finite_list, run_metrics

MAX_BINS = 20
"""How many equal bins a metric's values get (unless they are a short scale of whole numbers)."""


def bin_index(value: float, lo: float, hi: float) -> int:
    """The bin of ``value`` among :data:`MAX_BINS` equal bins from ``lo`` to ``hi`` (the highest value
    in the last bin): ``floor((value - lo) * MAX_BINS / (hi - lo))``, as the store computes it."""
    return min(MAX_BINS - 1, math.floor((value - lo) * (MAX_BINS / (hi - lo))))


def _histogram(store: Store, run_id: str, ref: MetricRef, lo: float, hi: float,
               integers: bool) -> list[dict[str, Any]]:
    """The bins of a numeric metric (whole values on a short scale: one bin per value; else
    :data:`MAX_BINS` equal bins, see :func:`bin_index`)."""
    reads = store.dashboard
    if integers and hi - lo <= MAX_BINS:
        counts = {round(v): c for v, c in reads.value_counts(run_id, ref).items()}
        return [{"lo": v - 0.5, "hi": v + 0.5, "count": counts.get(v, 0)}
                for v in range(round(lo), round(hi) + 1)]
    if hi <= lo:
        return [{"lo": lo, "hi": hi, "count": reads.count_values(run_id, ref)}]
    bins = reads.bin_counts(run_id, ref, lo, hi, MAX_BINS)
    width = (hi - lo) / MAX_BINS
    edges = [round(lo + k * width, 12) for k in range(MAX_BINS)] + [hi]
    return [{"lo": edges[k], "hi": edges[k + 1], "count": bins[k]} for k in range(MAX_BINS)]


def distributions(store: Store, info: RunInfo) -> list[dict[str, Any]]:
    """Per metric: a histogram of its values (integer values on a short scale get one bin each; other
    values :data:`MAX_BINS` equal bins between the lowest and highest), or the counts per label when
    it has no numeric values, and its failures by error kind. Two passes over each metric's lines
    (its range, then its bins), both on the key's prefix (run, evaluator)."""
    out = []
    for ref in run_metrics(store, info):
        stats = store.dashboard.metric_stats(info.id, ref)
        if not stats.n and not stats.n_failed:
            continue
        item: dict[str, Any] = {
            "key": ref.key, "evaluator": ref.evaluator, "metric": ref.metric, "n": stats.n,
            "n_failed": stats.n_failed, "failures": stats.failures, "bins": [], "labels": []}
        if stats.n and stats.lo is not None and stats.hi is not None:
            lo, hi = float(stats.lo), float(stats.hi)
            item["integers"] = not stats.fractional and abs(hi) < 1_000_000 and abs(lo) < 1_000_000
            item["bins"] = _histogram(store, info.id, ref, lo, hi, item["integers"])
        else:
            item["labels"] = [{"label": c.label, "count": c.count}
                              for c in store.dashboard.label_counts(info.id, ref, 20)]
        out.append(item)
    return finite_list(out)
