"""The executor protocol: what the engine needs from a place to run work, and the shapes it sends.

The engine hands an :class:`Executor` two kinds of work: batches of rows for CPU-bound evaluators
(``score_batch``, ``score_indices``), and many small async jobs for I/O-bound ones (judge calls), run
with a bounded number in flight. The engine depends on this protocol only; the local pool
(:mod:`~touchstone.engine.executors.local`) and the Ray cluster
(:mod:`~touchstone.engine.executors.ray.executor`) implement it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, NamedTuple, Protocol, TypeAlias, runtime_checkable

from touchstone.evaluators.base import Evaluator
from touchstone.scores import Outcome, ScoreLine

Plan = tuple[tuple[str, tuple[str, ...]], ...]
"""For an evaluator whose inputs are plain columns: ``(input, candidate columns)`` lookups."""


WireRow: TypeAlias = tuple[str, dict[str, Any], bool, tuple[ScoreLine, ...]]
"""One row's result as a worker process sends it back, read through the index names below. No
:class:`~touchstone.scores.Score` objects: a dataclass per score cost the parent process several
times more, and the parent is what limits a pooled run. The parent writes the store from these as
they are and keeps each row as a :class:`~touchstone.scores.CompactOutcome`, as a resumed run keeps
what it reads back. A plain tuple, not a NamedTuple: pickled one per row, a NamedTuple goes through
Python-level calls on both sides (half again as much for the parent to unpickle on 100,000 rows)."""

ENCODED: Final = 0
"""The flat outputs JSON-encoded for the store."""
OUTPUTS: Final = 1
"""The same outputs as a dict for the result (unpickling the dict costs the parent less than half
of decoding the JSON: pickle shares the repeated key strings)."""
FAILED: Final = 2
"""Whether a score of the row failed."""
LINES: Final = 3
"""The row's Scores as :data:`~touchstone.scores.ScoreLine` tuples, as the store writes them."""


class ScoredChunk(NamedTuple):
    """Some rows of one evaluator scored where their data lives (a Ray Dataset's blocks), in the
    order the cluster gives them."""

    evaluator: str
    indices: list[int]
    rows: list[WireRow]
    """One result per index, in the same order."""


@runtime_checkable
class Executor(Protocol):
    """What the engine needs from a place to run work."""

    parallel: bool
    """True when batches run in other processes (rows are then sent as indices where possible)."""

    async def score_batch(self, ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
        """``ev.score_batch(rows)``, off the event loop."""
        ...

    async def score_indices(self, ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
        """Score the records ``indices`` (plain column inputs by ``plan``) where the records live;
        each row's result as a :data:`WireRow`. Only when ``parallel``."""
        ...

    async def run_jobs(self, jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
        """Run async jobs with at most ``concurrency`` in progress."""
        ...

    async def ascore(self, ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
        """``ev.ascore(inputs)`` for an I/O-bound evaluator, with the usage its model calls
        accounted (calls, tokens, cache hits)."""
        ...

    def close(self) -> None:
        """Stop what the executor started (worker processes, actors); the run is over."""
        ...


async def run_bounded(jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    """Run async ``jobs`` on this event loop with at most ``concurrency`` in progress (how both
    executors run the driver's side of judge rows)."""
    it = iter(jobs)

    async def worker() -> None:
        for job in it:
            await job()

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
