"""One call of ``evaluate()`` while it runs: :class:`RunSession` holds what the passes share.

The rows are read in batches (:class:`~touchstone.data.streaming.RowSource`); the input rows (and
the target's outputs) are stored first (:mod:`.target_pass`), or by the CPU-bound pass as it reads
them; CPU-bound evaluators are scored in chunks through an executor (:mod:`.cpu_pass`), I/O-bound
ones many rows at once (:mod:`.judge_pass`). Every result goes to the store through the run's
:class:`~.sink.RunSink` and is fed to a :class:`~touchstone.engine.accumulate.RunAccumulator`;
nothing else of it is kept, except on small runs, whose Outcomes give ``rows`` as a list
(:mod:`.finish` builds the result).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone.data.mapping import Ref
from touchstone.data.streaming import RowSource
from touchstone.engine.accumulate import RunAccumulator
from touchstone.engine.context import RunContext, run_hooks
from touchstone.engine.executors import ExecutorChoice, Plan
from touchstone.engine.result import own_aggregators
from touchstone.engine.run.cpu_pass import run_cpu_bound
from touchstone.engine.run.inputs import direct_plan, row_inputs
from touchstone.engine.run.judge_pass import run_io_bound
from touchstone.engine.run.resume import StoredOutcome, standing_results
from touchstone.engine.run.sink import RunSink
from touchstone.engine.run.target_pass import rows_pass
from touchstone.engine.stored_targets import StoredTargets, TargetResult
from touchstone.evaluators.base import Evaluator
from touchstone.scores import CompactOutcome, Outcome
from touchstone.store import Store
from touchstone.store.base import score_lines

if TYPE_CHECKING:
    from touchstone.engine.rows_file import RowsFile

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class RunLimits:
    """Sizes that shape a run (``touchstone.engine.runner`` holds their values)."""

    rows_in_memory: int
    """Runs of at most this many rows return ``rows`` as a list (their Outcomes are kept for it)."""
    parallel_min_rows: int
    """Rows from which the CPU-bound pass uses every core by default."""
    batch_rows: int
    """The largest chunk of rows scored at once by the CPU-bound pass."""


class RunSession:
    """The state one call of ``evaluate()`` shares between its passes (see the module's text)."""

    def __init__(
        self,
        ctx: RunContext,
        source: RowSource,
        evs: dict[str, Evaluator],
        mappings: dict[str, dict[str, Ref]],
        target: Callable[..., Any] | None,
        *,
        limits: RunLimits,
        progress: ProgressCallback | None = None,
        workers: int | None = None,
        executor: ExecutorChoice = None,
        resumed: bool = False,
        retry: frozenset[str] = frozenset(),
        rows_file: RowsFile | None = None,
    ) -> None:
        self.ctx = ctx
        self.executor_choice = executor
        self.store: Store = ctx.store
        self.source = source
        self.n = source.n_rows
        self.evs = evs
        self.mappings = mappings
        self.target = target
        self.progress = progress
        self.workers = workers
        self.limits = limits
        self.keep = self.n <= limits.rows_in_memory
        """Small run: Outcomes kept for the rows of the result (a list, as the SDK gives)."""
        self.targets: StoredTargets | dict[int, TargetResult] = (
            StoredTargets(ctx.store, ctx.run_id) if target is not None else {}
        )
        """The target's output or error per row (in the store, read back a page at a time)."""
        self.scores: dict[tuple[int, str], StoredOutcome] = {}
        """Outcomes produced by this call, on a small run."""
        self.acc = RunAccumulator(self.n, list(evs), keep=list(own_aggregators(evs)), columns=not self.keep)
        self.stored: dict[str, np.ndarray] = {}
        """Per evaluator, the rows whose stored result a resume keeps."""
        self._plans: dict[str, Plan] = {}
        self.resumed = resumed
        self.retry = retry
        """Error kinds of stored failed scores to score again (``"*"``: all)."""
        self.rows_file = rows_file
        """``output_path``'s files, appended to as rows complete (they listen to the sink)."""
        self.sink = RunSink(ctx.store, ctx.run_id)
        """Every store write of the passes (input rows and results)."""
        self.rows_with_sync = False
        """The CPU-bound pass stores the input rows as it reads them (no target)."""
        self.done = 0
        self.total = 0

    async def execute(self) -> None:
        """Run every pass, inside the run hooks (the judge session) and the rows file's watch."""
        try:
            async with AsyncExitStack() as stack:
                for hook in run_hooks():
                    await stack.enter_async_context(hook(self.ctx))
                if self.rows_file is not None:
                    await stack.enter_async_context(self.rows_file.during(self))
                await self._passes()
        except BaseException:
            with contextlib.suppress(Exception):  # what was scored is written; a broken store must
                self.sink.close()  # not hide the error that stopped the run
            raise
        self.sink.close()

    async def _passes(self) -> None:
        names = list(self.evs)
        self.stored = (
            standing_results(self.store, self.ctx.run_id, self.n, names, self.retry) if self.resumed
            else {name: np.zeros(self.n, dtype=bool) for name in names}
        )
        sync = {n: ev for n, ev in self.evs.items() if not ev.is_async}
        asynchronous = {n: ev for n, ev in self.evs.items() if ev.is_async}
        # Without a target, the CPU-bound pass stores the rows of each batch it reads (one read
        # of the file less); otherwise the rows (and the target's outputs) come first.
        self.rows_with_sync = self.target is None and any(self.pending(n) for n in sync)
        if not self.rows_with_sync:
            await rows_pass(self)
        self.total = self.n * len(self.evs)
        self.done = sum(int(mask.sum()) for mask in self.stored.values())
        self.tick(0)
        await asyncio.gather(run_cpu_bound(self, sync), run_io_bound(self, asynchronous))

    def pending(self, name: str) -> int:
        """Rows evaluator ``name`` has to score in this call."""
        return self.n - int(self.stored[name].sum())

    def flush(self) -> None:
        """Write what waits to be written (the run is stopping)."""
        self.sink.flush()

    def tick(self, n: int) -> None:
        """``n`` more scores are done: tell the progress callback."""
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)

    def todo(self, name: str, start: int, count: int) -> list[int]:
        """Rows ``start`` to ``start + count`` that evaluator ``name`` still has to score."""
        mask = self.stored[name][start : start + count]
        return (np.flatnonzero(~mask) + start).tolist()  # type: ignore[no-any-return]

    def record(self, name: str, i: int, out: Outcome, usage: dict[str, Any] | None) -> None:
        """Feed one result produced by this call to the figures (and keep it on a small run)."""
        lines = out.lines if type(out) is CompactOutcome and out.lines_current else score_lines(out.scores)
        self.acc.add_result(name, i, out, out.failed, lines, usage)
        if self.keep:
            self.scores[i, name] = (out, usage)

    def plan(self, name: str) -> Plan:
        """Evaluator ``name``'s plain column lookups, or ``()`` when its inputs need the full mapping."""
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = direct_plan(
                self.evs[name], self.mappings.get(name, {}), self.target is not None
            )
        return plan

    def inputs_for(self, name: str, i: int, data: Mapping[str, Any]) -> dict[str, Any] | str:
        """The evaluator's inputs for row ``i`` (whose data is ``data``), or why they cannot be built
        (a target failure, or a target output of the wrong type)."""
        target = self.targets.get(i, (None, None)) if self.target is not None else None
        return row_inputs(self.evs[name], self.plan(name), self.mappings.get(name, {}), data, target)
