"""Scoring where the work runs: the functions a pool worker, a Ray task or a Ray actor calls.

They are shared by every executor, so that a row scored locally and one scored on a cluster come back
in the same shape (:data:`~touchstone.engine.executors.base.WireRow`), encoded as the store writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone.engine.context import current_usage
from touchstone.engine.executors.base import Plan, WireRow
from touchstone.evaluators.base import Evaluator
from touchstone.scores import Outcome
from touchstone.store import encode_outputs
from touchstone.store.base import score_lines


def direct_inputs(plan: Plan, data: Mapping[str, Any]) -> dict[str, Any]:
    """An evaluator's inputs from plain columns of a row (the first candidate column present)."""
    inputs: dict[str, Any] = {}
    for key, candidates in plan:
        for column in candidates:
            value = data.get(column)
            if value is not None:
                inputs[key] = value
                break
    return inputs


def score_batch(ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
    """``ev.score_batch(rows)`` (a module-level function, so a pool or Ray can ship it by name)."""
    return ev.score_batch(rows)


def score_wire(ev: Evaluator, rows: list[dict[str, Any]]) -> list[WireRow]:
    """Score ``rows`` (an evaluator's inputs) and send each result back as a :data:`WireRow`."""
    outs = ev.score_batch(rows)
    return [(encode_outputs(out), dict(out), out.failed, score_lines(out.scores)) for out in outs]  # WireRow


async def score_with_usage(ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
    """``ev.ascore(inputs)`` inside a fresh usage context; the Outcome and what its calls used."""
    usage: dict[str, Any] = {}
    token = current_usage.set(usage)
    try:
        out = await ev.ascore(inputs)
    finally:
        current_usage.reset(token)
    return out, usage
