"""Paired comparison of two stored runs on the same rows: per metric the mean difference (B - A)
with its paired bootstrap interval, a paired permutation p-value (Wilcoxon's beside it), McNemar's
test on the pass flags, Holm's adjustment across the metrics, and a verdict that reads the metric's
direction. Everything is computed from stored scores: no model call."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np

from touchstone.compare.matching import LoadedRun, MatchBy, RowMatch, load_run, match_rows, run_brief
from touchstone.errors import InputValidationError, Problem
from touchstone.stats.paired import holm, mcnemar, paired_bootstrap_ci, sign_flip_test, wilcoxon_signed_rank
from touchstone.store.base import Store
from touchstone.store.comparisons import Cell

Verdict = Literal["better", "worse", "no detectable difference", "not compared"]
BETTER: Verdict = "better"
WORSE: Verdict = "worse"
SAME: Verdict = "no detectable difference"
NOT_COMPARED: Verdict = "not compared"
_LISTED = 1000  # unmatched keys listed in as_dict(); the counts are always exact


@dataclass
class MetricComparison:
    """One metric of the two runs over the matched rows. Differences are B - A; a pair counts when
    the metric was obtained in both runs (a failed score is counted in ``n_failed_*`` and left out)."""

    metric: str
    """``<evaluator>.<score>``, as in the run's summary."""
    evaluator: str
    score: str
    higher_is_better: bool
    n_pairs: int
    n_failed_a: int
    n_failed_b: int
    n_missing: int
    """Matched rows where a run has no value for the metric at all (not scored, not failed)."""
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    ci: tuple[float, float] | None
    test: str
    statistic: float | None
    p_value: float | None
    wilcoxon_p: float | None
    wilcoxon_test: str
    p_holm: float | None = None
    pass_rate_a: float | None = None
    pass_rate_b: float | None = None
    mcnemar: dict[str, Any] | None = None
    """McNemar's exact test on the pairs where both runs have a pass flag, with its Holm-adjusted
    p-value (``p_holm``) in the same family as the mean tests."""
    verdict: Verdict = NOT_COMPARED
    """From the mean difference's Holm-adjusted permutation p-value."""
    pass_verdict: Verdict = NOT_COMPARED
    """From the pass rates' Holm-adjusted McNemar p-value ("not compared" without pass flags)."""

    @property
    def regressed(self) -> bool:
        """B is significantly worse than A on the mean or on the pass rate."""
        return WORSE in (self.verdict, self.pass_verdict)

    def as_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (NaN as None)."""
        return {
            "metric": self.metric, "evaluator": self.evaluator, "score": self.score,
            "higher_is_better": self.higher_is_better, "n_pairs": self.n_pairs,
            "n_failed_a": self.n_failed_a, "n_failed_b": self.n_failed_b, "n_missing": self.n_missing,
            "mean_a": self.mean_a, "mean_b": self.mean_b, "difference": self.difference,
            "ci": None if self.ci is None else [_num(self.ci[0]), _num(self.ci[1])],
            "test": self.test, "statistic": _num(self.statistic), "p_value": _num(self.p_value),
            "p_holm": _num(self.p_holm),
            "wilcoxon": {"test": self.wilcoxon_test, "p_value": _num(self.wilcoxon_p)},
            "pass_rate_a": self.pass_rate_a, "pass_rate_b": self.pass_rate_b, "mcnemar": self.mcnemar,
            "verdict": self.verdict, "pass_verdict": self.pass_verdict,
        }  # fmt: skip


@dataclass
class RunComparison:
    """The paired comparison of run B against run A (B is the candidate: "worse" means B regressed)."""

    run_a: dict[str, Any]
    run_b: dict[str, Any]
    match_by: Literal["id", "index"]
    n_rows_a: int
    n_rows_b: int
    n_matched: int
    unmatched_a: list[Hashable]
    unmatched_b: list[Hashable]
    alpha: float
    n_boot: int
    seed: int
    metrics: list[MetricComparison] = field(default_factory=list)

    @property
    def regressions(self) -> list[MetricComparison]:
        """Metrics where B is significantly worse than A, on the mean or the pass rate (after Holm's
        adjustment)."""
        return [m for m in self.metrics if m.regressed]

    @property
    def improvements(self) -> list[MetricComparison]:
        """Metrics where B is significantly better and not significantly worse on either test."""
        return [m for m in self.metrics if BETTER in (m.verdict, m.pass_verdict) and not m.regressed]

    def metric(self, name: str) -> MetricComparison:
        """The comparison of one metric by its ``<evaluator>.<score>`` name."""
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        """The whole comparison as a JSON-ready dict (unmatched keys: the first 1000 of each side)."""
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "match_by": self.match_by,
            "rows": {
                "a": self.n_rows_a, "b": self.n_rows_b, "matched": self.n_matched,
                "unmatched_a": len(self.unmatched_a), "unmatched_b": len(self.unmatched_b),
            },
            "unmatched_a": self.unmatched_a[:_LISTED],
            "unmatched_b": self.unmatched_b[:_LISTED],
            "alpha": self.alpha,
            "ci_level": 1 - self.alpha,
            "n_boot": self.n_boot,
            "seed": self.seed,
            "correction": "holm",
            "holm_family": "each metric's permutation test and, where pass flags exist, its McNemar test",
            "difference": "B - A",
            "metrics": [m.as_dict() for m in self.metrics],
            "regressions": [m.metric for m in self.regressions],
            "improvements": [m.metric for m in self.improvements],
        }  # fmt: skip


def _num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _direction(a: LoadedRun, b: LoadedRun, metric: MetricPair) -> bool:
    """Higher-is-better for one score: the runs' summaries, else the registry's declarations."""
    for run, key in ((a, metric.a), (b, metric.b)):
        found = run.higher_is_better(*key)
        if found is not None:
            return found
    evaluator, score = metric.a
    from touchstone.evaluators import registry  # only for runs stored without a summary

    entry = a.info.config.get("evaluators", {}).get(evaluator, {})
    name = entry.get("metric") if isinstance(entry, dict) else None
    try:
        cls = registry.get(str(name))
    except InputValidationError:
        return True
    if score in cls.lower_is_better:
        return False
    return cls.higher_is_better if score == (cls.score_key or cls.metric) else True


class MetricPair(NamedTuple):
    """One metric as each run names it: ``(evaluator alias, score)`` in A and in B. The aliases may
    differ (``f1`` in a Python run, ``f1_score`` on the command line): the metric is the same when
    both evaluators are the same registered metric and each run has it once."""

    a: tuple[str, str]
    b: tuple[str, str]

    @property
    def label(self) -> str:
        """A's ``<evaluator>.<score>`` (as in its summary)."""
        return f"{self.a[0]}.{self.a[1]}"

    def names(self) -> set[str]:
        """Every name that selects this metric: either run's ``evaluator.score``, either alias, the
        score's name and the registered metric's ``metric.score``."""
        return {f"{e}.{s}" for e, s in (self.a, self.b)} | {self.a[0], self.b[0], self.a[1]}


def metric_identity(run: LoadedRun) -> dict[tuple[str, str], tuple[str, str]]:
    """``(registered metric, score)`` of each ``(evaluator alias, score)`` column of ``run``; an alias
    stands for itself when the run has that metric under several aliases (two differently
    configured F1 evaluators are two metrics) or did not record which metric it is."""
    evaluators = run.info.config.get("evaluators") or {}
    metric_of = {
        alias: str(entry.get("metric") or alias) if isinstance(entry, dict) else alias
        for alias, entry in evaluators.items()
    }
    uses = Counter(metric_of.values())
    identity: dict[tuple[str, str], tuple[str, str]] = {}
    for alias, score in run.cells:
        metric = metric_of.get(alias, alias)
        identity[(alias, score)] = (metric if uses[metric] == 1 else alias, score)
    return identity


def common_metrics(a: LoadedRun, b: LoadedRun) -> list[MetricPair]:
    """The metrics both runs have, in A's order: the same column name, else the same metric under
    another alias."""
    identity_b = metric_identity(b)
    by_identity = {ident: key for key, ident in identity_b.items()}
    pairs: list[MetricPair] = []
    taken: set[tuple[str, str]] = set()
    for key, ident in metric_identity(a).items():
        other = key if key in b.cells else by_identity.get(ident)
        if other is not None and other not in taken:
            pairs.append(MetricPair(key, other))
            taken.add(other)
    return pairs


def select_metrics(a: LoadedRun, b: LoadedRun, wanted: Sequence[str] | None) -> list[MetricPair]:
    """The metrics both runs have (:func:`common_metrics`); ``wanted`` narrows them by
    ``<evaluator>.<score>``, an evaluator's name (all its scores) or a score's name, as either run
    names them. Raises :class:`InputValidationError` when the runs have no metric in common (naming
    each run's metrics) or a name selects nothing (naming what is available)."""
    common = common_metrics(a, b)
    if not common and a.cells and b.cells:
        def listed(run: LoadedRun) -> str:
            return ", ".join(f"{e}.{s}" for e, s in run.cells)

        raise InputValidationError([Problem(
            "metrics", None, None,
            f"runs {a.info.id} and {b.info.id} have no metric in common: A has {listed(a)}; "
            f"B has {listed(b)}",
        )])
    if wanted is None:
        return common
    chosen: list[MetricPair] = []
    unknown: list[str] = []
    for name in wanted:
        hits = [m for m in common if name in m.names()]
        if not hits:
            unknown.append(name)
        chosen.extend(m for m in hits if m not in chosen)
    if unknown:
        available = ", ".join(m.label for m in common) or "none"
        raise InputValidationError([
            Problem("--metrics", None, name, f"no metric {name!r} in both runs; available: {available}")
            for name in unknown
        ])
    return chosen


@dataclass
class _Pairs:
    keys: list[Hashable]
    a: np.ndarray
    b: np.ndarray
    passed: list[tuple[bool, bool]]
    n_failed_a: int
    n_failed_b: int
    n_missing: int


def _pairs(match: RowMatch, col_a: dict[int, Cell], col_b: dict[int, Cell]) -> _Pairs:
    keys: list[Hashable] = []
    va: list[float] = []
    vb: list[float] = []
    passed: list[tuple[bool, bool]] = []
    failed_a = failed_b = missing = 0
    for key, ia, ib in match.pairs:
        ca, cb = col_a.get(ia), col_b.get(ib)
        fa = ca is not None and ca.failed
        fb = cb is not None and cb.failed
        failed_a += fa
        failed_b += fb
        if fa or fb:
            continue
        if ca is None or cb is None or ca.value is None or cb.value is None:
            missing += 1
            continue
        keys.append(key)
        va.append(ca.value)
        vb.append(cb.value)
        if ca.passed is not None and cb.passed is not None:
            passed.append((ca.passed, cb.passed))
    return _Pairs(keys, np.asarray(va, dtype=float), np.asarray(vb, dtype=float), passed,
                  failed_a, failed_b, missing)


def _compare_metric(
    evaluator: str, score: str, higher: bool, pairs: _Pairs, *, alpha: float, n_boot: int, seed: int
) -> MetricComparison:
    n = len(pairs.keys)
    base = MetricComparison(
        metric=f"{evaluator}.{score}", evaluator=evaluator, score=score, higher_is_better=higher, n_pairs=n,
        n_failed_a=pairs.n_failed_a, n_failed_b=pairs.n_failed_b, n_missing=pairs.n_missing,
        mean_a=None, mean_b=None, difference=None, ci=None, test="permutation (no pairs)", statistic=None,
        p_value=None, wilcoxon_p=None, wilcoxon_test="Wilcoxon signed-rank (no pairs)",
    )  # fmt: skip
    if n == 0:
        return base
    d = pairs.b - pairs.a
    perm = sign_flip_test(d, seed=seed)
    wil = wilcoxon_signed_rank(d)
    base.mean_a, base.mean_b = float(pairs.a.mean()), float(pairs.b.mean())
    base.difference = float(d.mean())
    base.ci = paired_bootstrap_ci(d, n_boot=n_boot, seed=seed, level=1 - alpha)
    base.test, base.statistic, base.p_value = perm.method, perm.statistic, perm.p_value
    base.wilcoxon_test, base.wilcoxon_p = wil.method, wil.p_value
    if pairs.passed:
        flags = np.asarray(pairs.passed, dtype=bool)
        b_count = int(np.count_nonzero(flags[:, 0] & ~flags[:, 1]))  # passed in A, failed in B
        c_count = int(np.count_nonzero(~flags[:, 0] & flags[:, 1]))
        test = mcnemar(b_count, c_count)
        base.pass_rate_a = float(flags[:, 0].mean())
        base.pass_rate_b = float(flags[:, 1].mean())
        base.mcnemar = {"n": len(flags), "a_pass_b_fail": b_count, "a_fail_b_pass": c_count,
                        "statistic": test.statistic, "p_value": test.p_value, "test": test.method}
    return base


def _verdict(p_holm: float | None, difference: float | None, higher: bool, alpha: float) -> Verdict:
    if p_holm is None or difference is None:
        return NOT_COMPARED
    if p_holm < alpha and difference != 0:
        return BETTER if (difference > 0) == higher else WORSE
    return SAME


def _verdicts(metrics: list[MetricComparison], alpha: float) -> None:
    """Holm's adjustment over every test that gives a verdict (each metric's mean test, and its
    McNemar test when it has pass flags), then the verdicts."""
    family = [math.nan if m.p_value is None else m.p_value for m in metrics]
    family += [m.mcnemar["p_value"] for m in metrics if m.mcnemar is not None]
    adjusted = iter(holm(family))
    for m in metrics:
        p = next(adjusted)
        m.p_holm = None if math.isnan(p) else p
        m.verdict = _verdict(m.p_holm, m.difference, m.higher_is_better, alpha)
    for m in metrics:
        if m.mcnemar is not None:
            m.mcnemar["p_holm"] = next(adjusted)
            moved = m.mcnemar["a_fail_b_pass"] - m.mcnemar["a_pass_b_fail"]
            # passing is always the good direction, whatever the score's own direction
            m.pass_verdict = _verdict(m.mcnemar["p_holm"], float(moved), True, alpha)


def _check_options(alpha: float, n_boot: int) -> None:
    problems = []
    if not 0 < alpha < 1:
        problems.append(Problem("--alpha", None, None, f"expected a number between 0 and 1, got {alpha}"))
    if n_boot < 1:
        problems.append(Problem("--n-boot", None, None, f"expected a positive number, got {n_boot}"))
    if problems:
        raise InputValidationError(problems)


def _kept(match: RowMatch, keep: Callable[[int, int], bool] | None) -> RowMatch:
    if keep is None:
        return match
    return RowMatch(match.match_by, [p for p in match.pairs if keep(p[1], p[2])], match.unmatched_a,
                    match.unmatched_b)


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    alpha: float = 0.05,
    metrics: Sequence[str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    match_by: MatchBy = "auto",
    keep: Callable[[int, int], bool] | None = None,
) -> RunComparison:
    """Compare run ``run_b`` (the candidate) with run ``run_a`` (the reference) on their matched rows.

    Rows are paired by their ``id`` field when both runs have one on every row, else by position
    (``match_by`` forces either); rows of one run only are listed in ``unmatched_a`` /
    ``unmatched_b``. Per metric both runs report (``metrics`` narrows them): the number of pairs,
    both means over the pairs, the mean difference B - A with its paired percentile-bootstrap
    interval at level ``1 - alpha`` (``n_boot`` resamples), the paired permutation p-value of the
    mean difference (the verdict's test) and Wilcoxon's signed-rank p-value, McNemar's exact test
    on the pass flags when the metric has a threshold, and Holm's adjustment over that family of
    tests (every metric's permutation test and every McNemar test). ``verdict`` is "better" or
    "worse" (by the metric's direction, from the runs' summaries, else the registry) when the
    Holm-adjusted permutation p-value is below ``alpha``, else "no detectable difference" ("not
    compared" without a pair); ``pass_verdict`` is the same for the pass rate by McNemar's test.
    ``RunComparison.regressions`` lists the metrics worse on either. ``keep(index in A, index in B)``
    restricts the comparison to the matched pairs it accepts (e.g. rows with user feedback). Raises
    :class:`~touchstone.compare.matching.UnknownRunError` for a run the store does not have,
    :class:`~touchstone.errors.InputValidationError` for other bad input."""
    _check_options(alpha, n_boot)
    a, b = load_run(store, run_a), load_run(store, run_b)
    match = _kept(match_rows(a, b, match_by), keep)
    compared: list[MetricComparison] = []
    for metric in select_metrics(a, b, metrics):
        (evaluator, score), key_b = metric.a, metric.b
        pairs = _pairs(match, a.cells[metric.a], b.cells[key_b])
        higher = _direction(a, b, metric)
        compared.append(
            _compare_metric(evaluator, score, higher, pairs, alpha=alpha, n_boot=n_boot, seed=seed)
        )
    _verdicts(compared, alpha)
    return RunComparison(
        run_a=run_brief(a), run_b=run_brief(b), match_by=match.match_by,
        n_rows_a=len(a.indices), n_rows_b=len(b.indices), n_matched=len(match.pairs),
        unmatched_a=match.unmatched_a, unmatched_b=match.unmatched_b,
        alpha=alpha, n_boot=n_boot, seed=seed, metrics=compared,
    )  # fmt: skip


@dataclass(frozen=True)
class RowChange:
    """One matched row whose metric changed between the runs (difference B - A)."""

    key: Hashable
    idx_a: int
    idx_b: int
    metric: str
    value_a: float
    value_b: float
    difference: float
    change: Literal["better", "worse"]
    data_a: dict[str, Any] | None = None
    data_b: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "idx_a": self.idx_a, "idx_b": self.idx_b, "metric": self.metric,
                "value_a": self.value_a, "value_b": self.value_b, "difference": self.difference,
                "change": self.change, "data_a": self.data_a, "data_b": self.data_b}


def _row_data(run: LoadedRun, idx: int, evaluator: str) -> dict[str, Any] | None:
    """A row side by side: its inputs, the target's output or error, and the evaluator's flat outputs
    (score, reason, error...) on it."""
    row = run.row(idx)
    if row is None:
        return None
    return {"inputs": row.data, "target": row.target, "target_error": row.target_error,
            "outputs": run.outputs(idx, evaluator)}


def rows_changed_most(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    metric: str | None = None,
    limit: int = 20,
    match_by: MatchBy = "auto",
    with_data: bool = True,
    keep: Callable[[int, int], bool] | None = None,
) -> list[RowChange]:
    """The matched rows whose scores changed most between run A and run B, largest change first.

    ``metric`` (``<evaluator>.<score>``, an evaluator's or a score's name) ranks rows by the absolute
    difference of that metric; without it every metric both runs have is ranked together, each
    difference divided by the spread (max - min) of that metric over both runs so that a 0-1 score and
    a 1-5 rating weigh alike. Rows that did not change are not listed. ``with_data`` attaches each
    row's stored inputs, target output and the metric's evaluator outputs (reasons) from both runs
    (side by side). ``keep``: only the pairs it accepts, as in :func:`compare_runs`."""
    if limit < 0:
        raise InputValidationError(f"limit must be 0 or more, got {limit}")
    a, b = load_run(store, run_a), load_run(store, run_b)
    match = _kept(match_rows(a, b, match_by), keep)
    # (weight, order, pair, metric): RowChange objects are built for the rows kept only
    found: list[tuple[float, int, tuple[Hashable, int, int, float, float], tuple[str, str, bool, str]]] = []
    order = 0
    for chosen in select_metrics(a, b, None if metric is None else [metric]):
        (evaluator, score), evaluator_b = chosen.a, chosen.b[0]
        higher = _direction(a, b, chosen)
        col_a, col_b = a.cells[chosen.a], b.cells[chosen.b]
        values = [c.value for col in (col_a, col_b) for c in col.values() if c.value is not None]
        spread = (max(values) - min(values)) if values else 0.0
        scale = spread if metric is None and spread > 0 else 1.0
        about = (evaluator, score, higher, evaluator_b)
        for key, ia, ib in match.pairs:
            ca, cb = col_a.get(ia), col_b.get(ib)
            if ca is None or cb is None or ca.value is None or cb.value is None or ca.value == cb.value:
                continue
            found.append((abs(cb.value - ca.value) / scale, order, (key, ia, ib, ca.value, cb.value), about))
            order += 1
    # ties keep A's row order (then the metrics' order)
    kept = heapq.nsmallest(limit, found, key=lambda item: (-item[0], item[1]))
    top: list[RowChange] = []
    for _, _, (key, ia, ib, va, vb), (evaluator, score, higher, evaluator_b) in kept:
        diff = vb - va
        change: Literal["better", "worse"] = "better" if (diff > 0) == higher else "worse"
        data_a = _row_data(a, ia, evaluator) if with_data else None
        data_b = _row_data(b, ib, evaluator_b) if with_data else None
        top.append(RowChange(key, ia, ib, f"{evaluator}.{score}", va, vb, diff, change, data_a, data_b))
    return top
