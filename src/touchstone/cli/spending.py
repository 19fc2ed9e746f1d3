"""What ``touchstone eval`` spends, for the command line: the preset's metrics (with what it dropped),
the cost-tier limit, the sample, the dry run's estimate per metric and per cost tier, and the run's
estimate against what it actually used (also shown by ``touchstone show``). Parsing and rendering
only; the decisions are in :mod:`touchstone.engine.presets`, :mod:`~touchstone.engine.selection` and
:mod:`~touchstone.engine.sampling`."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from touchstone.cli.common import err, out
from touchstone.engine.dryrun import DryRunEstimate, estimate, load_pricing
from touchstone.engine.planning import EvaluationPlan, choose_metrics
from touchstone.engine.presets import resolve
from touchstone.engine.sampling import SampleRequest
from touchstone.engine.selection import RunSelection, record_estimate, select
from touchstone.errors import InputValidationError, Problem
from touchstone.judges.config import JudgeSettings

ESTIMATE_ROWS = 2000
"""A real run over every row renders at most this many rows for its recorded estimate (extrapolated);
the dry run and --budget render every row."""


def note(message: str) -> None:
    """An informational line on stderr (text from the data shown as text)."""
    err.print(Text(message, style="yellow"), highlight=False, soft_wrap=True)


def preset_metrics(
    named: Sequence[str] | None, preset: str | None, inputs: Collection[str] | None
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The run's metric names (the preset's kept metrics, then ``--metrics``) and the preset's options
    per metric; each metric the preset dropped is said on stderr. A preset that keeps nothing, with
    no ``--metrics`` either, is an input error listing why each was dropped."""
    if preset is None:
        return choose_metrics(named, None, inputs), {}
    plan = resolve(preset, inputs)
    for line in plan.messages():
        note(line)
    names = choose_metrics(named, preset, inputs)
    if not names:
        why = "; ".join(d.describe() for d in plan.dropped)
        problem = Problem("--preset", None, preset, f"no metric applies to these columns: {why}")
        raise InputValidationError([problem])
    return names, plan.options


def merge_options(
    preset: Mapping[str, Mapping[str, Any]], given: Mapping[str, Mapping[str, Any]], names: Collection[str]
) -> dict[str, dict[str, Any]]:
    """Per-metric options: the preset's (for chosen metrics), with ``--metric-option`` over them."""
    merged = {m: dict(opts) for m, opts in preset.items() if m in names}
    for metric, opts in given.items():
        merged.setdefault(metric, {}).update(opts)
    return merged


def select_for_run(
    data: Path,
    plan: EvaluationPlan,
    *,
    store: Any,
    max_tier: str | None,
    pricing: Path | None,
    request: SampleRequest,
    rows_of: str | None,
    dry_run: bool,
) -> RunSelection:
    """The metrics and rows of the run (tier limit, sample), with its estimate; ``--pricing`` goes
    into the judge options so the real run costs its calls with the same prices. Messages on stderr."""
    if pricing is not None:
        plan.judge_options["prices"] = load_pricing(pricing)
    if plan.resume:
        rows_of = _resumed_rows(plan.resume, request, rows_of, store)
    needs_store = rows_of is not None or request.strategy in ("difficult", "uncertain")
    run_store = None
    if needs_store:
        from touchstone.cli.common import open_run_store

        run_store = open_run_store(store)
    selection = select(
        data, plan.evaluators, evaluator_config=plan.evaluator_config,
        settings=JudgeSettings.from_options(plan.judge_options), max_tier=max_tier, request=request,
        rows_of=rows_of, store=run_store, with_estimate=not plan.resume,
        estimate_rows=None if dry_run else ESTIMATE_ROWS,
    )
    plan.evaluators = selection.evaluators
    for line in selection.messages:
        note(line)
    sample = selection.sample
    if sample is not None:
        cost = "" if sample.estimated_cost is None else f", estimated cost ${sample.estimated_cost:.4f}"
        budget = "" if sample.request.budget is None else f" within the budget of {sample.request.budget:g}"
        note(f"sample: {len(sample.indices)} of {sample.total_rows} rows ({sample.request.strategy}, "
             f"seed {sample.request.seed}){budget}{cost}")
    return selection


def _resumed_rows(run_id: str, request: SampleRequest, rows_of: str | None, store: Any) -> str | None:
    """A resumed run continues on its own rows: those of its sample when it had one (``--rows-of``
    itself), else every row. Asking for another sample with ``--resume`` is an input error."""
    if rows_of is not None or request.n is not None or request.budget is not None:
        raise InputValidationError([Problem("--resume", None, None, "a resumed run keeps its own rows; "
                                            "--sample, --budget and --rows-of cannot be given with it")])
    from touchstone.cli.common import open_run_store

    info = open_run_store(store).get_run(run_id)
    sampling = ((info.config or {}).get("options") or {}).get("sampling") if info is not None else None
    return run_id if isinstance(sampling, Mapping) else None


def print_dry_run(selection: RunSelection, plan: EvaluationPlan) -> None:
    """The dry run's figures: a summary line and the tables per metric and per cost tier."""
    est = selection.estimate or estimate(
        data=selection.data, evaluators=selection.evaluators, evaluator_config=plan.evaluator_config,
        settings=JudgeSettings.from_options(plan.judge_options),
    )
    out.print(est.lines()[0], highlight=False)
    by_metric, by_tier = estimate_tables(est)
    out.print(by_metric)
    out.print(by_tier)


def report_estimate(
    run_store: Any, run_id: str, selection: RunSelection, *, table: bool = False
) -> Table | Text | None:
    """Store the estimate against the run's actual use in its summary; what to print of it: one line,
    or the table per metric when ``table`` (``--show-estimate``; ``touchstone show`` prints it too)."""
    if selection.estimate is None:
        return None
    doc = record_estimate(run_store, run_id, selection.estimate)
    if doc is None:
        return None
    return estimate_vs_actual_table(doc) if table else Text(estimate_line(doc))


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _figures_row(figures: Mapping[str, float], cost_known: bool) -> list[str]:
    return [
        f"{int(figures.get('calls', 0))}",
        f"{int(figures.get('prompt_tokens', 0))}",
        f"{int(figures.get('completion_tokens', 0))}",
        _cost(float(figures.get("cost_usd", 0.0)) if cost_known else None),
    ]


def estimate_tables(est: DryRunEstimate) -> tuple[Table, Table]:
    """The estimate per metric (with its tier) and per cost tier, each with a total line."""
    known = est.cost_usd is not None
    by_metric = Table(title=f"estimate per metric — {est.rows} rows")
    for name in ("metric", "tier", "calls", "prompt tokens", "completion tokens", "cost"):
        by_metric.add_column(name, justify="left" if name in ("metric", "tier") else "right")
    for name, figures in est.per_evaluator.items():
        by_metric.add_row(Text(name), est.tiers.get(name, "free"), *_figures_row(figures, known))
    total = {"calls": est.calls, "prompt_tokens": est.prompt_tokens,
             "completion_tokens": est.completion_tokens, "cost_usd": est.cost_usd or 0.0}
    by_metric.add_row("total", "", *_figures_row(total, known), style="bold")
    by_tier = Table(title="estimate per cost tier")
    for name in ("tier", "metrics", "calls", "prompt tokens", "completion tokens", "cost"):
        by_tier.add_column(name, justify="left" if name == "tier" else "right")
    for tier, figures in est.per_tier.items():
        by_tier.add_row(tier, f"{int(figures.get('metrics', 0))}", *_figures_row(figures, known))
    return by_metric, by_tier


def _pair(entry: Mapping[str, Any], money: bool = False) -> list[str]:
    def show(v: Any) -> str:
        if v is None:
            return "—"
        return f"${v:.4f}" if money else f"{int(v)}"

    error = entry.get("error")
    return [show(entry.get("estimated")), show(entry.get("actual")),
            "—" if error is None else f"{error:+.1%}"]


def estimate_vs_actual_table(doc: Mapping[str, Any]) -> Table:
    """A stored run's ``summary["estimate"]``: estimated, actual and relative error of calls, prompt
    tokens, completion tokens and cost, per metric and in total (one line per figure, so the table
    fits 80 columns)."""
    table = Table(title=f"estimate vs actual — {doc.get('rows', '?')} rows")
    table.add_column("metric", no_wrap=True)
    table.add_column("figure", no_wrap=True)
    for part in ("estimated", "actual", "error"):
        table.add_column(part, justify="right", no_wrap=True)
    lines = [*(doc.get("per_evaluator") or {}).items(), ("total", doc["total"])]
    for name, figs in lines:
        for i, (key, label) in enumerate(_FIGURES):
            table.add_row(
                Text(name) if i == 0 else "", label, *_pair(figs.get(key) or {}, money=key == "cost_usd"),
                style="bold" if name == "total" else None, end_section=i == len(_FIGURES) - 1,
            )
    return table


_FIGURES = (("calls", "calls"), ("prompt_tokens", "prompt tokens"),
            ("completion_tokens", "completion tokens"), ("cost_usd", "cost"))


def estimate_line(doc: Mapping[str, Any]) -> str:
    """The estimate against the actual in one line: total calls and cost."""
    total = doc["total"]
    calls = _pair(total.get("calls") or {})
    cost = _pair(total.get("cost_usd") or {}, money=True)
    return (f"estimate vs actual: {calls[0]} calls, {cost[0]} estimated; {calls[1]} calls, {cost[1]} "
            f"used ({calls[2]} calls)")


def show_sample_and_estimate(info: Any) -> None:
    """For ``touchstone show``: the run's sample (strategy, rows) and its estimate against the actual."""
    sampling = ((info.config or {}).get("options") or {}).get("sampling")
    if isinstance(sampling, Mapping):
        budget = "" if sampling.get("budget") is None else f", budget {sampling['budget']:g}"
        out.print(Text(f"sample: {len(sampling.get('row_ids') or [])} of {sampling.get('total_rows')} rows, "
                       f"strategy {sampling.get('strategy')}, seed {sampling.get('seed')}{budget}"))
    doc = (info.summary or {}).get("estimate")
    if isinstance(doc, Mapping) and doc.get("total"):
        out.print(estimate_vs_actual_table(doc))
