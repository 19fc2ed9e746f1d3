"""Per-run and per-score context shared between the engine and the judge machinery.

The engine runs each score inside a context where :data:`current_usage` is a fresh dict; whatever
makes model calls for that score (the judge session) adds its accounting there (calls, tokens, cache
hits, retries, cost), and the engine stores it beside the score. The variable is defined with the
judges' accounting (:mod:`touchstone.judges.accounting`), below both. A run is wrapped in the scopes
:func:`run_hooks` lists: the judge session of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from touchstone.judges.accounting import add_usage, current_usage

__all__ = ["RunContext", "RunHook", "add_usage", "current_usage", "run_hooks"]


@dataclass
class RunContext:
    """What a run scope sees: the run id, the store, the evaluators and the caller's extra options."""

    run_id: str
    store: Any
    evaluators: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    """Scopes may put provenance here (judge model, cache stats); it is stored with the run summary."""


RunHook = Callable[[RunContext], AbstractAsyncContextManager[Any]]


def run_hooks() -> list[RunHook]:
    """The scopes entered around every run, outermost first: the run's judge session (one
    concurrency limit, cache and set of counters for all its judge calls)."""
    from touchstone.judges.session import judge_run_scope

    return [judge_run_scope]
