"""A run's figures gathered as its results arrive, without holding its rows.

:class:`RunAccumulator` is fed each input row (and the target's output) and each (row, evaluator)
result once, in any order, and gives at the end exactly what the SDK's frame of the whole run gives
(:func:`~touchstone.engine.sdk_frame.columns.sdk_rows`,
:func:`~touchstone.engine.sdk_frame.metrics.sdk_metrics`) and what
:func:`~touchstone.stats.aggregate.summarize` gives: the SDK's ``metrics``, the summary, the run's
status and usage, and a :class:`~touchstone.engine.sdk_frame.gather.FrameSchema` with which
:mod:`touchstone.engine.sdk_frame.render` renders any row the way the SDK's frame does. What it
keeps is small per row: the values the means, rates and bootstrap need, as float arrays indexed by
row (a row's place matters: the SDK's means sum in row order, and the bootstrap draws by index),
plus a few counts and the first place each column appears (the SDK's columns are ordered by first
appearance in row order; :mod:`touchstone.engine.sdk_frame.gather`). Columns of text keep only
their types.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone.engine.sdk_frame.columns import Columns
from touchstone.engine.sdk_frame.gather import (
    FloatsByRow,
    FrameGatherer,
    FrameSchema,
    GatheredColumn,
    Place,
    column_mode,
)
from touchstone.engine.sdk_frame.metrics import BINARY_AGGREGATE, RENAMED, own_aggregate
from touchstone.engine.sdk_frame.values import sdk_input
from touchstone.scores import METRIC, PASSED, STATUS, VALUE, ScoreLine
from touchstone.stats.aggregators import ScoreColumn, get_aggregator

if TYPE_CHECKING:
    from touchstone.evaluators.base import MetricInfo

log = logging.getLogger("touchstone.engine")


class _Scores:
    """One evaluator's typed scores: what :func:`~touchstone.stats.aggregate.summarize` reads."""

    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows
        self.values: dict[str, tuple[Place, FloatsByRow, np.ndarray]] = {}
        self.seen = np.zeros(n_rows, dtype=bool)
        self.failed = np.zeros(n_rows, dtype=bool)

    def add(self, i: int, lines: Sequence[ScoreLine], failed: bool) -> None:
        self.seen[i] = True
        self.failed[i] = failed
        for pos, line in enumerate(lines):
            value = line[VALUE]
            if line[STATUS] != "ok" or value is None:
                continue
            metric, flag = line[METRIC], line[PASSED]
            entry = self.values.get(metric)
            if entry is None:
                flags = np.full(self.n_rows, -1, np.int8)
                entry = self.values[metric] = ((i, pos), FloatsByRow(self.n_rows, masked=True), flags)
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
        :func:`~touchstone.engine.sdk_frame.columns.sdk_rows`, which gives these from the rows, and
        only the summary, status and usage are asked of the accumulator (:attr:`Figures.metrics` is
        then empty and :attr:`Figures.schema` None)."""
        self.names = list(evaluators)
        self.frame = FrameGatherer(n_rows, self.names, metrics=True)
        self.inputs, self.targets, self.outputs = self.frame.inputs, self.frame.targets, self.frame.outputs
        self.with_target = False
        self.target_errors = 0
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
        self.frame.add_row(i, sdk_input(data, source), target, target_error)
        if isinstance(target_error, str) and target_error:
            self.target_errors += 1

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
                _, kind = column_mode(col.kinds(n), col.int_overflow)
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
                    binary[f"{name}.{BINARY_AGGREGATE}"] = round(col.passes / n, 2) if n else 0.0
        metrics: dict[str, Any] = {**means, **rates, **binary}
        for name, aggregate in aggregators.items():
            kept = self.kept.get(name)
            if kept is None:
                continue
            cols = Columns.of([kept.get(i) for i in range(n)])
            metrics.update(own_aggregate(name, cols, aggregate))
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
        return self.frame.schema(self.n_rows, with_target=self.with_target)

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


def _label_rates(name: str, columns: list[tuple[str, GatheredColumn]]) -> tuple[set[str], dict[str, float]]:
    """The SDK's label rates (as :mod:`touchstone.engine.sdk_frame.metrics` makes them from whole
    columns) from the columns' gathered values."""
    handled: set[str] = set()
    labels: dict[str, float] = {}
    details: GatheredColumn | None = None
    details_key = ""
    for key, col in columns:
        head = key.split(".", 1)[0]
        if col.rates is not None:
            handled.add(key)
            target = (f"{name}.{RENAMED[head]}" if head in RENAMED
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


def _rate(values: np.ndarray, name: str) -> float | None:
    """The SDK's rate of a label over numbers already converted (NaN: no number)."""
    kept = values[~np.isnan(values)]
    if not len(kept):
        log.warning("all values of %s are NaN or missing: no rate computed", name)
        return None
    return float(round(sum(kept.tolist()) / len(kept), 2))
