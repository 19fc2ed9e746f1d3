"""Per-run and per-score context shared between the engine and the judge machinery.

The engine runs each score inside a context where :data:`current_usage` is a fresh dict; whatever
makes model calls for that score (the judge client) adds its accounting there (calls, tokens, cache
hits, retries, cost), and the engine stores it beside the score. Run hooks (see
:func:`register_run_hook`) wrap a whole run, e.g. to open one shared judge session.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

current_usage: ContextVar[dict[str, Any] | None] = ContextVar("touchstone_current_usage", default=None)


def add_usage(**amounts: float) -> None:
    """Add ``amounts`` (e.g. ``calls=1, prompt_tokens=120``) to the accounting of the current score."""
    usage = current_usage.get()
    if usage is None:
        return
    for key, value in amounts.items():
        usage[key] = usage.get(key, 0) + value


@dataclass
class RunContext:
    """What a run hook sees: the run id, the store, the evaluators and the caller's extra options."""

    run_id: str
    store: Any
    evaluators: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    """Hooks may put provenance here (judge model, cache stats); it is stored with the run summary."""


RunHook = Callable[[RunContext], AbstractAsyncContextManager[Any]]
_RUN_HOOKS: list[RunHook] = []


def register_run_hook(hook: RunHook) -> RunHook:
    """Register an async context manager factory entered around every run (idempotent)."""
    if hook not in _RUN_HOOKS:
        _RUN_HOOKS.append(hook)
    return hook


def run_hooks() -> list[RunHook]:
    return list(_RUN_HOOKS)
