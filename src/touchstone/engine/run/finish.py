"""The result of a run: rows, metrics and summary (reads the store, writes nothing).

A resume's earlier results are fed to the figures first (page by page); a run that stopped early
counts the pairs it left unscored as failed with the cause. A small run's rows are rendered from its
Outcomes in memory, and its metrics come from the SDK's frame of them; a large run's rows are read
from the store on demand (:class:`~touchstone.engine.stored_rows.StoredRows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from touchstone._gc import collector_paused
from touchstone.engine.result import EvaluationResult, own_aggregators
from touchstone.engine.run.corpus import corpus_figures
from touchstone.engine.run.resume import STORE_PAGE, stored_page
from touchstone.engine.sdk_frame.columns import Columns, sdk_rows
from touchstone.engine.sdk_frame.metrics import sdk_metrics
from touchstone.engine.sdk_frame.values import sdk_input
from touchstone.engine.stored_rows import StoredRows
from touchstone.scores import CompactOutcome, Outcome
from touchstone.store.base import score_lines

if TYPE_CHECKING:
    from touchstone.engine.run.session import RunSession


def run_result(
    run: RunSession, extra_info: Mapping[str, Any] | None = None, *, aborted: str | None = None
) -> EvaluationResult:
    """Rows, metrics and summary of the run. ``aborted``: the cause of a run that stopped early;
    pairs it left unscored count as failed with it (they are not stored, so a resume scores them)."""
    if run.resumed:
        _feed_stored(run)
    missing = run.acc.missing()
    failures: dict[str, Outcome] = {}
    if aborted is not None:
        for name, ev in run.evs.items():
            unseen = np.flatnonzero(~run.acc.seen(name))
            if not len(unseen):
                continue
            out = ev.failure(f"not scored: the run was stopped: {aborted}", kind="aborted")
            failures[name] = out
            lines = score_lines(out.scores)
            for i in unseen.tolist():
                run.acc.add_result(name, i, out, True, lines)
    evs = run.evs
    corpus = corpus_figures(run)
    figures = run.acc.finish(
        {name: ev.info for name, ev in evs.items()},
        {name: ev.aggregator_options() for name, ev in evs.items()},
        corpus,
        own_aggregators(evs),
        missing=missing,
        aborted=aborted is not None,
    )
    rows: Sequence[dict[str, Any]]
    n_failed: int | None = None
    metrics = figures.metrics
    if run.keep:  # the rows are here: the SDK's frame gives the metrics from their columns
        with collector_paused():  # a million cells, no cycles: see touchstone._gc
            rows, columns = _rows_in_memory(run, failures)
            metrics = sdk_metrics(columns, own_aggregators(evs))
        for name, values in corpus.items():
            metrics.update({f"{name}.{k}": v for k, v in values.items()})
    else:
        assert figures.schema is not None
        rows = StoredRows(
            run.store, run.ctx.run_id, run.n, figures.schema, records=run.source.records,
            unscored=lambda name, i: failures.get(name),
        )
        n_failed = figures.n_failed
    unscored = [name for name, ev in evs.items()
                if not figures.summary.get(f"{name}.{ev.info.key}", {}).get("n")]
    info = run.store.get_run(run.ctx.run_id)
    doc: dict[str, Any] = info.as_dict() if info is not None else {"id": run.ctx.run_id}
    doc["status"] = figures.status
    doc["usage"] = figures.usage
    doc["unscored_metrics"] = unscored
    doc.update(extra_info or {})
    return EvaluationResult(rows=rows, metrics=metrics, summary=figures.summary, run=doc, n_failed=n_failed)


def _feed_stored(run: RunSession) -> None:
    """Feed the stored results this call did not produce (a resume's earlier scores), page by page."""
    evs, acc = run.evs, run.acc
    for start in range(0, run.n, STORE_PAGE):
        stop = min(run.n, start + STORE_PAGE)
        unseen = {name: ~acc.seen(name)[start:stop] for name in evs}
        if not any(mask.any() for mask in unseen.values()):
            continue
        page = stored_page(run.store, run.ctx.run_id, evs, start, stop)
        for (idx, name), (out, usage) in page.items():
            if not unseen[name][idx - start]:
                continue
            lines = out.lines if type(out) is CompactOutcome else score_lines(out.scores)
            acc.add_result(name, idx, out, out.failed, lines, usage)
            if run.keep:
                run.scores[idx, name] = (out, usage)


def _rows_in_memory(
    run: RunSession, failures: Mapping[str, Outcome]
) -> tuple[list[dict[str, Any]], dict[str, Columns]]:
    """The rows of a small run as the SDK's frame makes them (:mod:`touchstone.engine.sdk_frame`), and each
    evaluator's columns."""
    records = run.source.records
    if records is None:
        records = [rec for _, batch in run.source.batches() for rec in batch]
    per_eval: dict[str, list[Outcome | None]] = {name: [] for name in run.evs}
    for i in range(run.n):
        for name in run.evs:
            out = run.scores.get((i, name), (None, None))[0]
            per_eval[name].append(failures.get(name) if out is None else out)
    targets: list[tuple[dict[str, Any] | None, str | None]] | None = None
    if run.acc.with_target:
        stored = {r.idx: (r.target, r.target_error) for r in run.store.get_rows(run.ctx.run_id)}
        targets = [run.targets.get(i, stored.get(i, (None, None))) for i in range(run.n)]
    return sdk_rows(
        [sdk_input(rec.data, rec.source) for rec in records],
        per_eval,
        {name: [o is None or o.failed for o in outs] for name, outs in per_eval.items()},
        targets,
    )
