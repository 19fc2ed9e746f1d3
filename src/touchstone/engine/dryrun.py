"""``--dry-run``: how many judge calls a run would make, and an estimate of its tokens and cost,
without calling anything.

The input is loaded and validated as for a real run (a bad file costs nothing either way); every
judge metric then scores every row against a dry-run session, which records each request it would
send (prompt tokens estimated from the rendered messages at about four characters a token, completion
tokens from the request's ``max_tokens``, capped at a typical judgement's length) and answers with a
placeholder that matches the requested schema, so multi-step metrics go through all their steps.

The figures are kept per row and per metric, so a sample of the rows (``--sample``, ``--budget``) is
costed without a second pass (:meth:`DryRunEstimate.subset`), and summed per cost tier.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from touchstone.data.loaders import DataSource, load_records
from touchstone.data.mapping import evaluator_mappings
from touchstone.data.validation import evaluator_inputs, validate_records
from touchstone.engine.context import current_usage
from touchstone.engine.presets import TIERS, evaluator_tier
from touchstone.errors import InputValidationError, Problem
from touchstone.evaluators.base import EvaluatorLike, as_evaluator
from touchstone.judges.config import JudgeSettings
from touchstone.judges.session import judge_session

FIGURES = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
"""What an estimate counts, per row and metric (``cost_usd`` only when the judge's price is known)."""


@dataclass
class DryRunEstimate:
    """Calls, tokens and cost a run would need: in all, per evaluator, per cost tier and per row.
    ``cost_usd`` is None when no judge model's price is known."""

    rows: int
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    per_evaluator: dict[str, dict[str, float]] = field(default_factory=dict)
    tiers: dict[str, str] = field(default_factory=dict)
    """Each evaluator's cost tier."""
    per_row: list[dict[str, dict[str, float]]] = field(default_factory=list)
    """For each row (in data order), each judge evaluator's figures on it."""
    measured_rows: int | None = None
    """When the figures were extrapolated: the number of rows actually rendered (else None)."""

    @property
    def per_tier(self) -> dict[str, dict[str, float]]:
        """The figures summed per cost tier (cheapest first; tiers with no metric left out)."""
        out: dict[str, dict[str, float]] = {}
        for tier in TIERS:
            names = [n for n, t in self.tiers.items() if t == tier]
            if not names:
                continue
            total = {"metrics": float(len(names))}
            for name in names:
                for key, value in self.per_evaluator.get(name, {}).items():
                    total[key] = total.get(key, 0.0) + value
            out[tier] = total
        return out

    def row_cost(self, index: int) -> float | None:
        """The estimated cost of row ``index`` (every metric), None when no price is known."""
        if self.cost_usd is None:
            return None
        return sum(f.get("cost_usd", 0.0) for f in self.per_row[index].values())

    def subset(self, indices: Iterable[int]) -> DryRunEstimate:
        """The estimate of a run over the rows ``indices`` only (from the per-row figures)."""
        chosen = list(indices)
        sub = DryRunEstimate(rows=len(chosen), tiers=dict(self.tiers))
        sub.per_row = [self.per_row[i] for i in chosen]
        for name in self.per_evaluator:
            sub.per_evaluator[name] = {}
        for row in sub.per_row:
            for name, figures in row.items():
                totals = sub.per_evaluator.setdefault(name, {})
                for key, value in figures.items():
                    totals[key] = totals.get(key, 0.0) + value
        sub._total(cost_known=self.cost_usd is not None)
        return sub

    def extrapolated(self, measured: Sequence[int]) -> DryRunEstimate:
        """The estimate for all ``rows`` from the rows ``measured`` alone (their figures scaled by
        rows / measured); per-row figures are not kept."""
        factor = self.rows / max(1, len(measured))
        out = DryRunEstimate(rows=self.rows, tiers=dict(self.tiers), measured_rows=len(measured))
        part = self.subset(measured)
        out.per_evaluator = {n: {k: v * factor for k, v in f.items()} for n, f in part.per_evaluator.items()}
        out._total(cost_known=self.cost_usd is not None)
        return out

    def _total(self, *, cost_known: bool) -> None:
        figures = self.per_evaluator.values()
        self.calls = int(sum(f.get("calls", 0) for f in figures))
        self.prompt_tokens = int(sum(f.get("prompt_tokens", 0) for f in figures))
        self.completion_tokens = int(sum(f.get("completion_tokens", 0) for f in figures))
        self.cost_usd = sum(f.get("cost_usd", 0.0) for f in figures) if cost_known else None

    def as_dict(self) -> dict[str, Any]:
        """The totals, per evaluator and per tier, as stored with a run (no per-row figures)."""
        return {
            "rows": self.rows,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "per_evaluator": {
                n: {**f, "tier": self.tiers.get(n, "free")} for n, f in self.per_evaluator.items()
            },
            "per_tier": self.per_tier,
            "measured_rows": self.measured_rows,
        }

    def lines(self) -> list[str]:
        cost = "unknown (no price for this model)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        out = [
            f"dry run: {self.rows} rows, {self.calls} judge calls, "
            f"~{self.prompt_tokens} prompt + ~{self.completion_tokens} completion tokens, cost ~{cost}",
        ]
        for name, figures in self.per_evaluator.items():
            out.append(
                f"  {name}: {int(figures.get('calls', 0))} calls, "
                f"~{int(figures.get('prompt_tokens', 0))} prompt "
                f"+ ~{int(figures.get('completion_tokens', 0))} completion tokens"
            )
        return out


def estimate(
    *,
    data: DataSource,
    evaluators: Mapping[str, EvaluatorLike],
    evaluator_config: Mapping[str, Any] | None = None,
    settings: JudgeSettings | None = None,
    only: Sequence[int] | None = None,
) -> DryRunEstimate:
    """Estimate the judge calls, tokens and cost of ``evaluate(data=..., evaluators=...)``, per row,
    per evaluator and per cost tier. Every row is validated; with ``only``, only those row positions
    are rendered (the others have no figures: see :meth:`DryRunEstimate.extrapolated`)."""
    evs = {name: as_evaluator(ev, name) for name, ev in evaluators.items()}
    records = load_records(data)
    mappings = evaluator_mappings(list(evs), evaluator_config)
    validate_records(records, evs, mappings, has_target=False)
    dry = JudgeSettings(**{**(settings or JudgeSettings()).__dict__, "dry_run": True, "cache": False})
    result = DryRunEstimate(rows=len(records), tiers={name: evaluator_tier(ev) for name, ev in evs.items()})
    result.per_row = [{} for _ in records]
    positions = range(len(records)) if only is None else sorted(set(only))
    cost_known = False

    async def run() -> None:
        nonlocal cost_known
        async with judge_session(dry):
            for name, ev in evs.items():
                totals: dict[str, float] = {}
                result.per_evaluator[name] = totals
                if not ev.needs_judge:
                    continue
                for i in positions:
                    rec = records[i]
                    usage: dict[str, Any] = {}
                    token = current_usage.set(usage)
                    try:
                        await ev.ascore(evaluator_inputs(ev, mappings.get(name, {}), rec.data, None))
                    finally:
                        current_usage.reset(token)
                    row = {k: float(v) for k, v in usage.items() if k in FIGURES}
                    result.per_row[i][name] = row
                    for key, value in row.items():
                        totals[key] = totals.get(key, 0) + value
                    cost_known = cost_known or "cost_usd" in row

    asyncio.run(run())
    result._total(cost_known=cost_known)
    return result


def load_pricing(path: str | os.PathLike[str]) -> dict[str, tuple[float, float]]:
    """A pricing file (YAML or JSON): ``model: {input: USD, output: USD}`` per million tokens, or
    ``model: [input, output]``. Its prices override the built-in table for this run. A file that
    cannot be read, or a price that is not a pair of non-negative numbers, raises
    InputValidationError naming the model and what was expected."""
    import yaml

    file = Path(path)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        problem = Problem(f"--pricing {file}", None, None, f"cannot be read: {exc}")
        raise InputValidationError([problem]) from None
    if not isinstance(raw, Mapping):
        raise InputValidationError(
            [Problem(f"--pricing {file}", None, None, "expected a mapping of model name to {input, output}")]
        )
    prices: dict[str, tuple[float, float]] = {}
    for model, value in raw.items():
        pair = (value.get("input"), value.get("output")) if isinstance(value, Mapping) else value
        ok = isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in pair
        )
        if not ok:
            shown = json.dumps(value, default=str)[:80]
            raise InputValidationError([Problem(
                f"--pricing {file}", None, str(model),
                "expected {input: USD, output: USD} per million tokens (non-negative numbers), "
                f"got {shown}",
            )])
        assert isinstance(pair, (list, tuple))
        prices[str(model).lower()] = (float(pair[0]), float(pair[1]))
    return prices
