"""Which metrics and which rows a run spends on, decided before anything is called: the cost-tier
limit (``--max-tier``), the estimate of calls, tokens and cost (the dry run's, on the rows as they
are), the sample (``--sample``, ``--budget``, ``--rows-of``), and, after the run, the estimate set
against what the run actually used (kept in the run's summary as ``estimate``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from touchstone.engine.dryrun import FIGURES, DryRunEstimate, estimate
from touchstone.engine.presets import DroppedMetric, filter_by_tier
from touchstone.engine.sampling import Sample, SampleRequest, choose_rows, rows_of_run
from touchstone.errors import InputValidationError, Problem
from touchstone.judges.config import JudgeSettings


@dataclass
class RunSelection:
    """What a run will use: ``evaluators`` (after the tier limit), ``data`` (the file, or the sampled
    rows), the ``estimate`` for those rows (None without judge metrics), the ``sample`` (None when
    every row is used), what was dropped and the messages to show."""

    evaluators: dict[str, Any]
    data: Any
    estimate: DryRunEstimate | None = None
    full_estimate: DryRunEstimate | None = None
    sample: Sample | None = None
    dropped: list[DroppedMetric] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def evaluate_options(self) -> dict[str, Any]:
        """Extra ``evaluate()`` options: the sample's description, stored in the run's configuration."""
        return {"sampling": self.sample.config()} if self.sample is not None else {}


def select(
    data: str | os.PathLike[str],
    evaluators: Mapping[str, Any],
    *,
    evaluator_config: Mapping[str, Any] | None = None,
    settings: JudgeSettings | None = None,
    max_tier: str | None = None,
    request: SampleRequest | None = None,
    rows_of: str | None = None,
    store: Any = None,
    embed: Any = None,
    with_estimate: bool = True,
    estimate_rows: int | None = None,
) -> RunSelection:
    """The metrics and rows of a run on the data file ``data``. Raises InputValidationError when the
    tier limit leaves no metric, or a sampling setting is invalid, before any judge call. With
    ``estimate_rows``, a run over every row of larger data renders that many rows (seeded) and
    extrapolates, so the estimate stays a small part of a large run's time."""
    from touchstone.data.loaders import load_records

    kept, dropped = filter_by_tier(evaluators, max_tier)
    if not kept:
        raise InputValidationError([Problem("--max-tier", None, None, f"no chosen metric is at or below tier "
                                            f"{max_tier}: " + "; ".join(d.describe() for d in dropped))])
    selection = RunSelection(kept, os.fspath(data), dropped=dropped,
                             messages=[f"--max-tier: dropped {d.describe()}" for d in dropped])
    sampling = request is not None and (request.n is not None or request.budget is not None)
    if not (sampling or rows_of or with_estimate):
        return selection
    if request is not None:
        request.check()
    needs_estimate = any(getattr(ev, "needs_judge", False) for ev in kept.values())
    full = None
    if needs_estimate and (with_estimate or (request is not None and request.budget is not None)):
        only = None
        if estimate_rows is not None and not (sampling or rows_of):
            n = sum(1 for _ in load_records(os.fspath(data)))
            if n > estimate_rows:
                only = sorted(random.Random(0).sample(range(n), estimate_rows))
        full = estimate(data=os.fspath(data), evaluators=kept, evaluator_config=evaluator_config,
                        settings=settings, only=only)
        if only is not None:
            full = full.extrapolated(only)
            selection.messages.append(f"estimate: {len(only)} of {full.rows} rows rendered, the rest "
                                      "extrapolated (a dry run renders every row)")
    selection.full_estimate = selection.estimate = full
    if not (sampling or rows_of):
        return selection
    rows = [rec.data for rec in load_records(os.fspath(data))]
    if rows_of:
        indices = rows_of_run(store, rows_of, rows)
        sample = Sample(SampleRequest(n=len(indices), strategy=f"rows-of:{rows_of}"), indices,
                        [], len(rows), data=os.fspath(data))
        from touchstone.engine.sampling import row_ids

        ids = row_ids(rows)
        sample.row_ids = [ids[i] for i in indices]
    else:
        assert request is not None
        costs = None
        if request.budget is not None:
            costs = _row_costs(full, len(rows))
        sample = choose_rows(rows, request, costs=costs, store=store, data=data, embed=embed)
    selection.sample = sample
    selection.messages += sample.messages
    selection.data = [rows[i] for i in sample.indices]
    if full is not None:
        selection.estimate = full.subset(sample.indices)
        sample.estimated_cost = selection.estimate.cost_usd
    return selection


def _row_costs(full: DryRunEstimate | None, n: int) -> list[float]:
    if full is None:  # no judge metric: every row is free
        return [0.0] * n
    if full.cost_usd is None:
        raise InputValidationError([Problem("--budget", None, None,
                                            "the judge model has no known price, so rows cannot be costed; "
                                            "give its price with --pricing FILE (model: {input: USD, "
                                            "output: USD} per million tokens)")])
    return [full.row_cost(i) or 0.0 for i in range(n)]


def actual_usage(store: Any, run_id: str) -> dict[str, dict[str, float]]:
    """What each evaluator of a stored run used (calls, tokens, cost), summed over its rows."""
    out: dict[str, dict[str, float]] = {}
    for (_, name), (_, usage) in store.get_scores(run_id).items():
        totals = out.setdefault(name, {})
        for key, value in (usage or {}).items():
            if key in FIGURES and isinstance(value, (int, float)):
                totals[key] = totals.get(key, 0.0) + float(value)
    return out


def _relative_error(estimated: float | None, actual: float | None) -> float | None:
    if estimated is None or actual is None or actual == 0:
        return None
    return (estimated - actual) / actual


def compare_estimate(est: DryRunEstimate, actual: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """The estimate against what was used: totals and per evaluator, each figure with its estimated
    value, actual value and relative error ((estimated - actual) / actual, None when actual is 0)."""
    def figures(e: Mapping[str, float], a: Mapping[str, float], cost_known: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in FIGURES:
            ev = float(e.get(key, 0.0)) if (key != "cost_usd" or cost_known) else None
            av = float(a.get(key, 0.0)) if (key != "cost_usd" or "cost_usd" in a) else None
            out[key] = {"estimated": ev, "actual": av, "error": _relative_error(ev, av)}
        return out

    known = est.cost_usd is not None
    total_actual: dict[str, float] = {}
    for figs in actual.values():
        for key, value in figs.items():
            total_actual[key] = total_actual.get(key, 0.0) + value
    total_est = {"calls": est.calls, "prompt_tokens": est.prompt_tokens,
                 "completion_tokens": est.completion_tokens, "cost_usd": est.cost_usd or 0.0}
    return {
        "rows": est.rows,
        "total": figures(total_est, total_actual, known),
        "per_evaluator": {
            name: {"tier": est.tiers.get(name, "free"), **figures(f, actual.get(name, {}), known)}
            for name, f in est.per_evaluator.items()
        },
    }


def record_estimate(store: Any, run_id: str, est: DryRunEstimate) -> dict[str, Any] | None:
    """Add the estimate against the actual use to the stored run's summary (``summary["estimate"]``)
    and return it; None when the run is not in the store."""
    info = store.get_run(run_id)
    if info is None:
        return None
    doc = compare_estimate(est, actual_usage(store, run_id))
    summary = dict(info.summary or {})
    summary["estimate"] = doc
    store.finish_run(run_id, info.status, info.metrics or {}, summary)
    return doc
