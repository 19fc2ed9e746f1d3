"""Corpus-level figures of a finished run (BLEU over the whole corpus, and the like), for the
evaluators that compute them: over the rows each scored, the inputs read again from the source and
the outputs from the store (or from memory, on a small run), one page at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone.data.validation import evaluator_inputs
from touchstone.engine.executors import direct_inputs
from touchstone.engine.run.resume import STORE_PAGE
from touchstone.evaluators.base import Evaluator
from touchstone.scores import CompactOutcome, Outcome

if TYPE_CHECKING:
    from touchstone.engine.run.session import RunSession


class OnePass(Sequence[Any]):
    """A sequence read once, in order, as it is iterated (a corpus metric's rows); ``len`` known
    ahead. Indexing reads it whole first (no corpus metric here indexes)."""

    def __init__(self, n: int, make: Callable[[], Iterator[Any]]) -> None:
        self._n, self._make = n, make
        self._whole: list[Any] | None = None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Any]:
        return self._make() if self._whole is None else iter(self._whole)

    def __getitem__(self, index: Any) -> Any:
        if self._whole is None:
            self._whole = list(self._make())
        return self._whole[index]


def corpus_figures(run: RunSession) -> dict[str, dict[str, float]]:
    """Each corpus evaluator's figures over the rows it scored without a failure."""
    corpus: dict[str, dict[str, float]] = {}
    for name, ev in run.evs.items():
        if type(ev).corpus_metrics is Evaluator.corpus_metrics:
            continue
        scores = run.acc.scores[name]
        ok = scores.seen & ~scores.failed
        count = int(ok.sum())
        inputs = OnePass(count, lambda name=name, ok=ok: _inputs(run, name, ok))  # type: ignore[misc]
        outputs = OnePass(count, lambda name=name, ok=ok: _outputs(run, name, ok))  # type: ignore[misc]
        corpus[name] = ev.corpus_metrics(inputs, outputs)
    return corpus


def _inputs(run: RunSession, name: str, ok: np.ndarray) -> Iterator[dict[str, Any]]:
    ev, plan = run.evs[name], run.plan(name)
    mapping = run.mappings.get(name, {})
    for start, batch in run.source.batches():
        for offset in np.flatnonzero(ok[start : start + len(batch)]).tolist():
            data = batch[offset].data
            if plan:
                yield direct_inputs(plan, data)
            else:
                target = run.targets.get(start + offset, (None, None))[0]
                yield evaluator_inputs(ev, mapping, data, target)


def _outputs(run: RunSession, name: str, ok: np.ndarray) -> Iterator[Outcome]:
    if run.keep:  # a small run holds its results
        scores = run.scores
        for i in np.flatnonzero(ok).tolist():
            yield scores[i, name][0]
        return
    results = run.store.results
    for start in range(0, run.n, STORE_PAGE):
        stop = min(run.n, start + STORE_PAGE)
        if not ok[start:stop].any():
            continue
        for stored in results.evaluator_outputs(run.ctx.run_id, name, start, stop):
            if ok[stored.idx]:
                yield CompactOutcome(stored.outputs, (), False)
