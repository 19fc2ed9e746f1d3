"""``--dry-run``: how many judge calls a run would make, and an estimate of its tokens and cost,
without calling anything.

The input is loaded and validated as for a real run (a bad file costs nothing either way); every
judge metric then scores every row against a dry-run session, which records each request it would
send (prompt tokens estimated from the rendered messages at about four characters a token, completion
tokens from the request's ``max_tokens``, capped at a typical judgement's length) and answers with a
placeholder that matches the requested schema, so multi-step metrics go through all their steps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from touchstone.data.loaders import DataSource, load_records
from touchstone.data.mapping import evaluator_mappings
from touchstone.data.validation import evaluator_inputs, validate_records
from touchstone.engine.context import current_usage
from touchstone.evaluators.base import EvaluatorLike, as_evaluator
from touchstone.judges.config import JudgeSettings
from touchstone.judges.session import judge_session


@dataclass
class DryRunEstimate:
    """Calls, tokens and cost a run would need, in all and per evaluator. ``cost_usd`` is None when
    no judge model's price is known."""

    rows: int
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    per_evaluator: dict[str, dict[str, float]] = field(default_factory=dict)

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
) -> DryRunEstimate:
    """Estimate the judge calls, tokens and cost of ``evaluate(data=..., evaluators=...)``."""
    evs = {name: as_evaluator(ev, name) for name, ev in evaluators.items()}
    records = load_records(data)
    mappings = evaluator_mappings(list(evs), evaluator_config)
    validate_records(records, evs, mappings, has_target=False)
    dry = JudgeSettings(**{**(settings or JudgeSettings()).__dict__, "dry_run": True, "cache": False})
    result = DryRunEstimate(rows=len(records))
    cost_known = False

    async def run() -> None:
        nonlocal cost_known
        async with judge_session(dry):
            for name, ev in evs.items():
                if not ev.needs_judge:
                    continue
                totals: dict[str, float] = {}
                for rec in records:
                    usage: dict[str, Any] = {}
                    token = current_usage.set(usage)
                    try:
                        await ev.ascore(evaluator_inputs(ev, mappings.get(name, {}), rec.data, None))
                    finally:
                        current_usage.reset(token)
                    for key, value in usage.items():
                        totals[key] = totals.get(key, 0) + value
                result.per_evaluator[name] = totals
                result.calls += int(totals.get("calls", 0))
                result.prompt_tokens += int(totals.get("prompt_tokens", 0))
                result.completion_tokens += int(totals.get("completion_tokens", 0))
                if "cost_usd" in totals:
                    cost_known = True
                    result.cost_usd = (result.cost_usd or 0.0) + float(totals["cost_usd"])

    asyncio.run(run())
    if not cost_known:
        result.cost_usd = None
    return result
