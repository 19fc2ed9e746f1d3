"""``evaluate()``: load -> validate -> (target) -> score -> store -> aggregate.

The rows are read in batches (:mod:`touchstone.data.streaming`: a large file is validated in a
first streaming pass, then read again as it is scored; other inputs are loaded whole). CPU-bound
evaluators are scored in chunks of a batch (``score_batch``) and I/O-bound ones (``is_async``) many
rows at once, both through an :class:`~touchstone.engine.executors.Executor` (threads and a process
pool locally). Every row's :class:`~touchstone.scores.Outcome` is written to the run store (any
:class:`~touchstone.store.base.Store`) as soon as it is produced, typed Scores included, so a crash
loses only what was in flight, and a run can be resumed: stored scores are not computed again.
Each result is also fed to a :class:`~touchstone.engine.accumulate.RunAccumulator`, which keeps
only what the metrics and summary need (float arrays by row); a large run's rows are then read back
from the store on demand (:class:`~touchstone.engine.stored_rows.StoredRows`), a small run's are
rendered at the end as a list. Building the result writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import hashlib
import inspect
import json
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

import numpy as np

from touchstone._exceptions import ErrorTarget
from touchstone._gc import collector_paused
from touchstone._version import __version__
from touchstone.data.kinds import check_value
from touchstone.data.loaders import DataSource, Record
from touchstone.data.mapping import ALIASES, Ref, evaluator_mappings
from touchstone.data.streaming import RowSource, data_digest, open_source
from touchstone.data.validation import evaluator_inputs
from touchstone.engine.accumulate import RunAccumulator
from touchstone.engine.context import RunContext, run_hooks
from touchstone.engine.executors import (
    Executor,
    ExecutorChoice,
    Plan,
    WireRow,
    default_processes,
    direct_inputs,
    make_executor,
    open_dataset,
    reads_with_ray,
)
from touchstone.engine.frame import Columns, sdk_input, sdk_metrics, sdk_rows
from touchstone.engine.result import EvaluationResult, own_aggregators
from touchstone.engine.rows_file import RowsFile, open_rows_file
from touchstone.engine.store_thread import StoreThread
from touchstone.engine.stored_rows import StoredRows
from touchstone.engine.stored_targets import StoredTargets, TargetResult
from touchstone.errors import (
    ConfigurationError,
    EvaluatorFailedError,
    InputValidationError,
    RunAbortedError,
    warn_nothing_uploaded,
)
from touchstone.evaluators.base import Evaluator, EvaluatorLike, describe_exception
from touchstone.evaluators.custom import as_sdk_evaluator
from touchstone.scores import CompactOutcome, Outcome, Score, ScoreLine, Status
from touchstone.store import Store, StoredRow, open_store
from touchstone.store.base import ScoreValue, score_lines
from touchstone.targets import HttpTarget, row_target

ProgressCallback = Callable[[int, int], None]
BATCH_ROWS = 2000
MIN_CHUNK = 8
CHUNK_SECONDS = 0.25
PARALLEL_MIN_ROWS = 20_000
FLUSH_SECONDS = 0.1
"""Results of I/O-bound evaluators wait at most this long before they are written (group commit)."""
FLUSH_ROWS = 256
"""...or until this many are waiting."""
ROWS_IN_MEMORY = 100_000
"""Runs of at most this many rows return ``rows`` as a list (their Outcomes are kept for it); larger
ones as :class:`~touchstone.engine.stored_rows.StoredRows`, read from the store on demand."""
STORE_PAGE = 5000
"""Rows read from the store at a time (a resume's stored results, the corpus figures)."""


class EvaluationFailedError(EvaluatorFailedError):
    """``fail_on_evaluator_errors=True`` and at least one score could not be obtained: an
    ``EvaluationException`` (category ``FAILED_EXECUTION``, blame ``UNKNOWN``, as the SDK raises it)."""


def evaluate(
    *,
    data: DataSource,
    evaluators: Mapping[str, EvaluatorLike],
    evaluator_config: Mapping[str, Any] | None = None,
    target: Callable[..., Any] | str | HttpTarget | None = None,
    output_path: str | os.PathLike[str] | None = None,
    evaluation_name: str | None = None,
    fail_on_evaluator_errors: bool = False,
    store: Store | str | os.PathLike[str] | None = None,
    resume: str | None = None,
    progress: ProgressCallback | None = None,
    workers: int | None = None,
    executor: ExecutorChoice = None,
    **options: Any,
) -> EvaluationResult:
    """Evaluate ``data`` (a JSONL/CSV/Parquet path, a DataFrame or a list of dicts) with ``evaluators``.

    Compatible with ``azure-ai-evaluation``'s ``evaluate()``. On top of it: ``store`` (a
    :class:`~touchstone.store.base.Store`, a path, or a ``postgresql://`` URL; default
    ``$TOUCHSTONE_STORE`` or ``~/.touchstone/runs.db``, in memory with one warning when that location
    cannot be used), ``resume`` (a run id whose stored scores are reused), ``progress`` (called with
    done and total scores), ``workers`` (processes for CPU-bound metrics; default: all cores on large
    inputs), ``executor`` (``"local"``, ``"ray"`` or a
    :class:`~touchstone.engine.ray_executor.RayExecutor`: where metrics run), ``target`` also as an
    http(s) URL or a :mod:`touchstone.targets` HTTP target (an OpenAI-compatible chat endpoint or a
    JSON POST: the row's query is sent, ``response`` read back),
    and ``options`` passed to run hooks (judge settings such as ``concurrency`` or ``cache``).
    """
    if not evaluators:
        raise InputValidationError("no evaluators given; pass evaluators={'name': evaluator}")
    if isinstance(target, (str, HttpTarget)):  # an application behind HTTP (touchstone.targets)
        target = row_target(target)
    if target is not None and not callable(target):
        raise InputValidationError(f"target must be a callable or a URL, got {type(target).__name__}")
    if options.get("azure_ai_project") is not None:
        warn_nothing_uploaded()
    evs = {name: as_sdk_evaluator(ev, name) for name, ev in evaluators.items()}
    mappings = evaluator_mappings(list(evs), evaluator_config)
    # A large file is checked in one streaming pass and read again in batches as it is scored;
    # anything else is loaded whole (data/streaming.py). Either way every problem is reported here,
    # before the store is opened or anything is scored.
    if reads_with_ray(data, executor):  # a Ray Dataset, or a file under the Ray executor (engine/ray_data.py)
        source: RowSource = open_dataset(data, evs, mappings, has_target=target is not None,
                                         executor=executor)
    else:
        with collector_paused():  # rows copied, checked and hashed: no cycles (see touchstone._gc)
            source = open_source(data, evs, mappings, has_target=target is not None)

    retry = _retry_kinds(options.pop("retry_failed", None))
    run_store = open_store(store)
    config = _run_config(data, evs, evaluator_config, target, evaluation_name, options)
    config["n_rows"] = source.n_rows
    config["fingerprint"] = _fingerprint(source.digest, config)
    config["process"] = {"pid": os.getpid(), "host": socket.gethostname()}
    if resume:
        _check_resume(run_store, resume, config)
        run_id = resume
        run_store.set_status(run_id, "running")
    else:
        run_id = run_store.create_run(config, evaluation_name, __version__)

    ctx = RunContext(run_id=run_id, store=run_store, evaluators=evs, options=dict(options))
    runner = _Runner(ctx, source, evs, mappings, target, progress, workers, executor)
    runner.resumed = bool(resume)
    runner.retry = retry if resume else frozenset()
    runner.rows_file = open_rows_file(output_path)  # written as rows complete (engine/rows_file.py)
    try:
        if _in_running_loop():  # e.g. called from a notebook: run on a private loop in a thread
            _run_in_thread(runner.execute)
        else:
            asyncio.run(runner.execute())
    except KeyboardInterrupt as exc:
        with contextlib.suppress(Exception):  # the store may be what failed
            runner.flush()
            run_store.set_status(run_id, "interrupted")
        exc.run_id = run_id  # type: ignore[attr-defined]  # the command line prints how to resume
        raise
    except RunAbortedError as exc:
        # Every remaining call would fail the same way: what was scored is kept, the rest is counted
        # as failed with the cause, and the summary is written before the error reaches the caller.
        result = runner.result(ctx.info, aborted=str(exc))
        _finish(run_store, run_id, result)
        if runner.rows_file is not None:
            runner.rows_file.finish(result)
        exc.result = result  # type: ignore[attr-defined]
        raise
    except BaseException:
        with contextlib.suppress(Exception):  # a broken store must not hide the first error
            run_store.set_status(run_id, "failed")
        raise

    result = runner.result(ctx.info)
    _finish(run_store, run_id, result)
    if runner.rows_file is not None:
        runner.rows_file.finish(result)
    if fail_on_evaluator_errors and result.n_failed:
        raise EvaluationFailedError(_failure_message(result, run_id), target=ErrorTarget.EVAL_RUN)
    return result


RETRIED_BY_DEFAULT = frozenset({"judge_call", "aborted", "transient", "rate_limit"})
"""Error kinds of stored failed scores that a resumed run scores again by default: failures of the
moment (a judge outage, a run stopped early), not of the row."""


def _retry_kinds(choice: Any) -> frozenset[str]:
    """Which stored failures a resume scores again: ``None``/``"transient"`` the failures of the moment
    (:data:`RETRIED_BY_DEFAULT`), ``True``/``"all"`` every failed score, ``False``/``"none"`` none."""
    if choice is None or choice == "transient":
        return RETRIED_BY_DEFAULT
    if choice is True or choice == "all":
        return frozenset({"*"})
    if choice is False or choice == "none":
        return frozenset()
    raise ConfigurationError(f"retry_failed must be 'transient', 'all' or 'none', got {choice!r}")


def run_fingerprint(records: Sequence[Record], config: Mapping[str, Any]) -> dict[str, str]:
    """Hashes of the rows' data and of the evaluator configuration (metrics, their options, column
    mapping), kept in the run's config: a resume over other data or other metrics is refused."""
    return _fingerprint(data_digest([records]), config)


def _fingerprint(digest: str, config: Mapping[str, Any]) -> dict[str, str]:
    setup = {key: config.get(key) for key in ("evaluators", "evaluator_config", "target")}
    evaluators = hashlib.sha256(json.dumps(setup, sort_keys=True, default=_opaque).encode())
    return {"data": digest, "evaluators": evaluators.hexdigest()}


def _opaque(value: Any) -> str:
    """An object JSON cannot hold, by its type only (its repr may hold a memory address)."""
    return f"<{type(value).__qualname__}>"


def _check_resume(run_store: Store, resume: str, config: Mapping[str, Any]) -> None:
    """Refuse to resume a run that is missing, or was over other rows, data or metrics."""
    info = run_store.get_run(resume)
    if info is None:
        raise ConfigurationError(f"no run {resume!r} in the store {run_store.path}")
    n_rows = config["n_rows"]
    if info.config.get("n_rows") != n_rows:
        raise ConfigurationError(
            f"run {resume} was over {info.config.get('n_rows')} rows; this data has {n_rows}"
        )
    stored = info.config.get("fingerprint")
    if not isinstance(stored, dict):
        return  # stored by a version without fingerprints: the row count is all there is to check
    ours = config["fingerprint"]
    if stored.get("data") != ours["data"]:
        raise ConfigurationError(
            f"run {resume} was scored on other data than {config.get('data')} (same {n_rows} rows, "
            "different contents): resuming would mix scores of different inputs; start a new run instead"
        )
    if stored.get("evaluators") != ours["evaluators"]:
        raise ConfigurationError(
            f"run {resume} was scored with another evaluator configuration (metrics, options or column "
            "mapping): resume it with its own settings, or start a new run"
        )


def _failure_message(result: EvaluationResult, run_id: str) -> str:
    """How many scores failed, and the first failing evaluator's share of failed rows and first error."""
    text = f"{result.n_failed} scores could not be obtained (run {run_id}); see the *_error columns"
    errors = [
        (key, value) for row in result.rows for key, value in row.items()
        if key.startswith("outputs.") and key.endswith("_error") and isinstance(value, str) and value
    ]
    if errors:
        key, first = errors[0]
        evaluator = key.split(".")[1]
        failed_rows = sum(1 for row in result.rows if isinstance(row.get(key), str) and row.get(key))
        share = failed_rows * 100 // max(1, len(result.rows))
        text += f". Evaluator {evaluator} failed on {failed_rows} of {len(result.rows)} rows ({share}%): "
        text += first
    return text


def _finish(store: Store, run_id: str, result: EvaluationResult) -> None:
    """Record the run's end: its status, the SDK metrics and the summary document."""
    doc = {key: value for key, value in result.run.items() if key in ("usage", "judge", "unscored_metrics")}
    store.finish_run(run_id, result.run["status"], result.metrics, {"summary": result.summary, **doc})
    info = store.get_run(run_id)
    if info is not None:
        result.run.update(finished=info.finished)


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_in_thread(fn: Callable[[], Any]) -> None:
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, fn()).result()


def _run_config(
    data: Any,
    evs: Mapping[str, Evaluator],
    evaluator_config: Mapping[str, Any] | None,
    target: Any,
    name: str | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    source = str(data) if isinstance(data, (str, os.PathLike)) else f"<{type(data).__name__}>"
    config: dict[str, Any] = _without_secrets(
        {
            "data": source,
            "evaluators": {
                n: {
                    "metric": ev.metric,
                    "class": f"{type(ev).__module__}.{type(ev).__qualname__}",
                    "options": ev.options(),
                }
                for n, ev in evs.items()
            },
            "evaluator_config": dict(evaluator_config or {}),
            "target": None if target is None else getattr(target, "__qualname__", repr(target)),
            "evaluation_name": name,
            "options": {k: v for k, v in options.items() if _json_safe(v)},
            "package_version": __version__,
            "python": sys.version.split()[0],
        }
    )
    return config


_SECRET_KEYS = frozenset({"api_key", "azure_ad_token_provider", "credential", "token", "password", "secret"})


def _without_secrets(value: Any) -> Any:
    """The stored configuration never holds a key, even one passed inside a plain-dict option."""
    if isinstance(value, Mapping):
        return {k: _without_secrets(v) for k, v in value.items() if str(k).lower() not in _SECRET_KEYS}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


def _json_safe(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


class _Runner:
    """One call of :func:`evaluate`: the rows are read in batches (:class:`RowSource`), each batch's
    work is handed to an executor, each result is written to the store and fed to a
    :class:`RunAccumulator` as it arrives, and nothing else of it is kept, except on small runs
    (:data:`ROWS_IN_MEMORY` rows at most), whose Outcomes are kept to give ``rows`` as a list."""

    def __init__(
        self,
        ctx: RunContext,
        source: RowSource,
        evs: dict[str, Evaluator],
        mappings: dict[str, dict[str, Ref]],
        target: Callable[..., Any] | None,
        progress: ProgressCallback | None,
        workers: int | None,
        executor: ExecutorChoice = None,
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
        self.keep = self.n <= ROWS_IN_MEMORY
        """Small run: Outcomes kept for the rows of the result (a list, as the SDK gives)."""
        self.targets: StoredTargets | dict[int, TargetResult] = (
            StoredTargets(ctx.store, ctx.run_id) if target is not None else {}
        )
        """The target's output or error per row (in the store, read back a page at a time)."""
        self.scores: dict[tuple[int, str], tuple[Outcome, dict[str, Any] | None]] = {}
        """Outcomes produced by this call, on a small run."""
        self.acc = RunAccumulator(self.n, list(evs), keep=list(own_aggregators(evs)), columns=not self.keep)
        self.stored: dict[str, np.ndarray] = {}
        """Per evaluator, the rows whose stored result a resume keeps."""
        self._plans: dict[str, Plan] = {}
        self.resumed = False
        self.retry: frozenset[str] = frozenset()
        """Error kinds of stored failed scores to score again (``"*"``: all)."""
        self._writer: _GroupWriter | None = None
        self.rows_file: RowsFile | None = None
        """``output_path``'s files, appended to as rows complete (it watches the store's writes)."""
        self._writes = StoreThread()
        """The CPU-bound pass's store writes (input rows and results), made off the event loop."""
        self.rows_with_sync = False
        """The CPU-bound pass stores the input rows as it reads them (no target)."""
        self.done = 0
        self.total = 0

    async def execute(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                for hook in run_hooks():
                    await stack.enter_async_context(hook(self.ctx))
                if self.rows_file is not None:
                    await stack.enter_async_context(self.rows_file.during(self))
                await self._execute()
        except BaseException:
            with contextlib.suppress(Exception):  # what was scored is written; a broken store must
                self._writes.close()  # not hide the error that stopped the run
            raise
        self._writes.close()

    async def _execute(self) -> None:
        self.stored = self._stored_results()
        sync = {n: ev for n, ev in self.evs.items() if not ev.is_async}
        asynchronous = {n: ev for n, ev in self.evs.items() if ev.is_async}
        # Without a target, the CPU-bound pass stores the rows of each batch it reads (one read
        # of the file less); otherwise the rows (and the target's outputs) come first.
        self.rows_with_sync = self.target is None and any(self._pending(n) for n in sync)
        if not self.rows_with_sync:
            await self._rows_pass()
        self.total = self.n * len(self.evs)
        self.done = sum(int(mask.sum()) for mask in self.stored.values())
        self._tick(0)
        await asyncio.gather(self._run_sync(sync), self._run_async(asynchronous))

    def _pending(self, name: str) -> int:
        """Rows evaluator ``name`` has to score in this call."""
        return self.n - int(self.stored[name].sum())

    def _stored_results(self) -> dict[str, np.ndarray]:
        """On a resume, which stored results stand (those whose failure is to be scored again do not)."""
        masks = {name: np.zeros(self.n, dtype=bool) for name in self.evs}
        if not self.resumed:
            return masks
        run_id = self.ctx.run_id
        for start in range(0, self.n, STORE_PAGE):
            for idx, name in self.store.fetch_all(
                "SELECT idx, evaluator FROM scores WHERE run_id = ? AND idx >= ? AND idx < ?",
                (run_id, start, start + STORE_PAGE),
            ):
                if name in masks and 0 <= idx < self.n:
                    masks[name][idx] = True
        if self.retry:
            everything = "*" in self.retry
            for idx, name, kind in self.store.fetch_all(
                "SELECT idx, evaluator, error_kind FROM score_values WHERE run_id = ? AND status <> 'ok'",
                (run_id,),
            ):
                if name in masks and 0 <= idx < self.n and (everything or (kind or "") in self.retry):
                    masks[name][idx] = False
        return masks

    def flush(self) -> None:
        """Write what waits to be written (the run is stopping)."""
        self._writes.close()
        if self._writer is not None:
            self._writer.flush()

    def _tick(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)

    def _todo(self, name: str, start: int, count: int) -> list[int]:
        """Rows ``start`` to ``start + count`` that evaluator ``name`` still has to score."""
        mask = self.stored[name][start : start + count]
        return (np.flatnonzero(~mask) + start).tolist()  # type: ignore[no-any-return]

    def _record(self, name: str, i: int, out: Outcome, usage: dict[str, Any] | None) -> None:
        """Feed one result produced by this call to the figures (and keep it on a small run)."""
        lines = out.lines if type(out) is CompactOutcome and out.lines_current else score_lines(out.scores)
        self.acc.add_result(name, i, out, out.failed, lines, usage)
        if self.keep:
            self.scores[i, name] = (out, usage)

    # ------------------------------------------------------------------ input rows and target
    async def _rows_pass(self) -> None:
        """Store the input rows (running the target on those that need it) batch by batch, and feed
        every row to the figures."""
        for start, batch in self.source.batches():
            await self._batch_rows(start, batch)

    async def _batch_rows(
        self, start: int, batch: list[Record],
        encode: Callable[[list[int]], Awaitable[list[str] | None]] | None = None,
    ) -> None:
        """Store one batch's input rows (running the target on those that need it) and feed them
        to the figures. ``encode``: gives the rows' JSON for the store (a pool's workers make it)."""
        stop = start + len(batch)
        stored: dict[int, tuple[dict[str, Any] | None, str | None]] = {}
        if self.resumed:
            for idx, target, error in self.store.fetch_all(
                "SELECT idx, target, target_error FROM rows WHERE run_id = ? AND idx >= ? AND idx < ?",
                (self.ctx.run_id, start, stop),
            ):
                stored[int(idx)] = (json.loads(target) if target else None, error)
        missing = [i for i in range(start, stop) if i not in stored]
        if self.target is None:
            recs = [(i, batch[i - start]) for i in missing]
            texts = await encode(missing) if encode is not None and missing else None
            self._writes.submit(self.store.put_rows, self.ctx.run_id, [
                StoredRow(i, rec.source, rec.line, rec.data, None, None, None if texts is None else texts[k])
                for k, (i, rec) in enumerate(recs)
            ])
        else:
            self.targets.update(stored)
            await self._run_target(start, batch, missing)
        add_row = self.acc.add_row
        if self.target is None and not stored:
            for offset, rec in enumerate(batch):
                add_row(start + offset, rec.data, rec.source)
            return
        for offset, rec in enumerate(batch):
            i = start + offset
            got = self.targets.get(i) if self.target is not None else stored.get(i)
            add_row(i, rec.data, rec.source, *(got or (None, None)))

    async def _run_target(self, start: int, batch: list[Record], missing: list[int]) -> None:
        limit = asyncio.Semaphore(int(self.ctx.options.get("target_concurrency", 8)))
        fn = self.target
        assert fn is not None
        params = inspect.signature(fn).parameters
        takes_all = any(p.kind == p.VAR_KEYWORD for p in params.values())

        async def call(i: int) -> None:
            rec = batch[i - start]
            data = rec.data
            kwargs = data if takes_all else {k: v for k, v in data.items() if k in params}
            async with limit:
                try:
                    if inspect.iscoroutinefunction(fn):
                        out = await fn(**kwargs)
                    else:
                        out = await asyncio.to_thread(fn, **kwargs)
                    if not isinstance(out, Mapping):
                        raise TypeError(f"the target must return a dict, it returned {type(out).__name__}")
                    result: tuple[dict[str, Any] | None, str | None] = (dict(out), None)
                except Exception as exc:
                    result = (None, describe_exception(exc))
            self.targets[i] = result
            self.store.put_rows(
                self.ctx.run_id, [StoredRow(i, rec.source, rec.line, rec.data, result[0], result[1])]
            )

        await asyncio.gather(*(call(i) for i in missing))

    # ------------------------------------------------------------------ inputs
    def _plan(self, name: str) -> Plan:
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = _direct_plan(
                self.evs[name], self.mappings.get(name, {}), self.target is not None
            )
        return plan

    def inputs_for(self, name: str, i: int, data: Mapping[str, Any]) -> dict[str, Any] | str:
        """The evaluator's inputs for row ``i`` (whose data is ``data``), or why they cannot be built
        (a target failure, or a target output of the wrong type)."""
        plan = self._plan(name)
        if plan:  # plain column lookups (validated before the run): no mapping, no target
            return direct_inputs(plan, data)
        ev = self.evs[name]
        target_out, target_error = self.targets.get(i, (None, None))
        if target_error:
            return f"the target failed on this row: {target_error}"
        inputs = evaluator_inputs(ev, self.mappings.get(name, {}), data, target_out)
        if self.target is not None:
            modes = ev.required_modes()
            if not any(set(m) <= set(inputs) for m in modes):
                missing = sorted(set(modes[0]) - set(inputs))
                return f"missing input(s) {', '.join(missing)} after the target ran"
            for key, value in inputs.items():
                spec = ev.input_spec(key)
                err = check_value(spec.kind, value) if spec else None
                if err:
                    return f"input {key}: {err}"
        return inputs

    # ------------------------------------------------------------------ CPU-bound evaluators
    async def _run_sync(self, evs: dict[str, Evaluator]) -> None:
        pending = sum(self._pending(n) for n in evs)
        if not pending:
            return
        window = RecordWindow(self.n, self.source.records)
        executor = make_executor(
            self.executor_choice, window, self.ctx.options,
            processes=default_processes(self.workers, pending, PARALLEL_MIN_ROWS), whole=self.source.records,
        )
        try:
            if executor.parallel:
                await self._sync_parallel(evs, executor, window)
            else:
                await self._sync_inline(evs, executor, window)
        finally:
            executor.close()

    def _store_outcomes(self, name: str, pairs: list[tuple[int, Outcome]]) -> None:
        self._writes.submit(
            self.store.put_scores, self.ctx.run_id, name,
            [(i, out, out.failed, None, out.scores) for i, out in pairs],
        )
        for i, out in pairs:
            self._record(name, i, out, None)

    def _store_wire(self, name: str, ev: Evaluator, chunk: list[int], wire: list[WireRow]) -> None:
        """Write what worker processes sent back as it is, and feed it to the figures."""
        self._writes.submit(
            self.store.put_scores, self.ctx.run_id, name,
            [(i, enc, failed, None, lines) for i, (enc, _, failed, lines) in zip(chunk, wire, strict=True)],
        )
        error_key = f"{ev.info.prefix}_error"
        acc, keep, scores = self.acc, self.keep, self.scores
        for i, (_, outputs, failed, lines) in zip(chunk, wire, strict=True):
            acc.add_result(name, i, outputs, failed, lines)
            if keep:
                error = outputs.get(error_key) if failed else None
                message = None if error is None else str(error)
                scores[i, name] = (CompactOutcome(outputs, lines, failed, message), None)

    async def _score_chunk(self, name: str, ev: Evaluator, executor: Executor, window: RecordWindow,
                           chunk: list[int]) -> None:
        plan = self._plan(name)
        if executor.parallel and plan:
            wire = await executor.score_indices(ev, plan, chunk)
            self._store_wire(name, ev, chunk, wire)
        else:
            prepared = [(i, self.inputs_for(name, i, window[i].data)) for i in chunk]
            good = [(i, inp) for i, inp in prepared if isinstance(inp, dict)]
            outs = await executor.score_batch(ev, [inp for _, inp in good])
            by_idx = {i: out for (i, _), out in zip(good, outs, strict=True)}
            pairs = [(i, by_idx[i] if isinstance(inp, dict) else ev.failure(str(inp))) for i, inp in prepared]
            self._store_outcomes(name, pairs)
        self._tick(len(chunk))

    async def _sync_parallel(
        self, evs: dict[str, Evaluator], executor: Executor, window: RecordWindow
    ) -> None:
        """Large input: fixed chunks of a batch, a few in flight per worker process; a batch is let go
        once its chunks are done."""
        in_flight = asyncio.Semaphore(max(1, self.workers or (os.cpu_count() or 1)) * 2)

        async def limited(name: str, ev: Evaluator, chunk: list[int]) -> None:
            try:
                await self._score_chunk(name, ev, executor, window, chunk)
            finally:
                in_flight.release()

        async def retire(start: int, tasks: list[asyncio.Task[None]]) -> None:
            try:
                await asyncio.gather(*tasks)
            finally:
                window.release(start)

        mapped = getattr(executor, "map_source", None)  # a Ray Dataset: map_batches where its blocks are
        results = mapped(self.source, evs, {n: self._plan(n) for n in evs}, self.stored) if mapped else None
        if results is not None:
            if self.rows_with_sync:
                for start, batch in self.source.batches():
                    await self._batch_rows(start, batch)
            async for name, chunk, wire in results:
                self._store_wire(name, evs[name], chunk, wire)
                self._tick(len(chunk))
            return
        retiring: list[asyncio.Task[None]] = []
        encode = getattr(executor, "encoded_rows", None)
        for start, batch in self.source.batches():
            tasks: list[asyncio.Task[None]] = []
            if self.rows_with_sync:
                # The rows' JSON is made by a worker beside the batch's scoring (rows of ranked
                # lists are large: encoding them was a third of what the store's thread did).
                tasks.append(asyncio.create_task(self._batch_rows(start, batch, encode)))
            window.hold(start, batch)
            if self.keep:
                # The results held so far leave the collector's view (the pool's close gives them
                # back): each older-generation pass walked all of them again, 2 s of the parent's
                # 15 s of CPU on 100,000 rows of five metrics.
                gc.freeze()
            for name, ev in evs.items():
                todo = self._todo(name, start, len(batch))
                for s in range(0, len(todo), BATCH_ROWS):
                    await in_flight.acquire()
                    tasks.append(asyncio.create_task(limited(name, ev, todo[s : s + BATCH_ROWS])))
            retiring.append(asyncio.create_task(retire(start, tasks)))
            done = [t for t in retiring if t.done()]
            for t in done:
                retiring.remove(t)
                t.result()  # a failed chunk stops the run here
        await asyncio.gather(*retiring)

    async def _sync_inline(self, evs: dict[str, Evaluator], executor: Executor, window: RecordWindow) -> None:
        """In process: chunks sized to take about CHUNK_SECONDS each, so a slow metric (a user's
        function) still stores its scores every fraction of a second, and a fast one pays little
        per-chunk overhead. A model metric (embeddings, BERTScore) asks for larger batches through
        ``min_batch_rows``: its batched forward passes need them more than it needs frequent writes."""
        sizes = {name: max(MIN_CHUNK, ev.min_batch_rows) for name, ev in evs.items()}
        for start, batch in self.source.batches():
            if self.rows_with_sync:
                await self._batch_rows(start, batch)
            window.hold(start, batch)
            for name, ev in evs.items():
                floor = max(MIN_CHUNK, ev.min_batch_rows)
                indices = self._todo(name, start, len(batch))
                pos = 0
                while pos < len(indices):
                    chunk = indices[pos : pos + sizes[name]]
                    started = time.perf_counter()
                    await self._score_chunk(name, ev, executor, window, chunk)
                    elapsed = max(time.perf_counter() - started, 1e-6)
                    pos += len(chunk)
                    sizes[name] = int(max(floor, min(BATCH_ROWS, len(chunk) * CHUNK_SECONDS / elapsed)))
            window.release(start)

    # ------------------------------------------------------------------ I/O-bound evaluators
    async def _run_async(self, evs: dict[str, Evaluator]) -> None:
        names = sorted(evs)  # row by row, so the rows that finish first are whole
        pending = sum(self.n - int(self.stored[n].sum()) for n in names)
        if not pending:
            return
        # Twice the judge's concurrency: a prepared request waits for each slot a reply frees. More
        # only delays the first requests (every worker renders its first prompt before the first
        # connection is made: 8x cost 0.5-0.7 points of the fake server's capacity on 2,000 rows).
        n_workers = max(
            1,
            int(self.ctx.options.get("workers_async", 0))
            or 2 * int(self.ctx.options.get("concurrency") or 32),
        )

        async def job(i: int, name: str, inputs: dict[str, Any] | str) -> None:
            ev = self.evs[name]
            if isinstance(inputs, dict):
                out, usage = await executor.ascore(ev, inputs)
            else:
                out, usage = ev.failure(inputs), {}
            if usage and out.scores:
                out.scores[0].usage = usage
            writer.add(name, (i, out, out.failed, usage or None, out.scores))
            self._record(name, i, out, usage or None)
            self._tick(1)

        def jobs() -> Iterator[Callable[[], Awaitable[None]]]:
            # Inputs are made as each job is handed out: only the batch being read is held.
            for start, batch in self.source.batches():
                todo = {name: set(self._todo(name, start, len(batch))) for name in names}
                for offset, rec in enumerate(batch):
                    i = start + offset
                    for name in names:
                        if i in todo[name]:
                            yield functools.partial(job, i, name, self.inputs_for(name, i, rec.data))

        writer = self._writer = _GroupWriter(self.store, self.ctx.run_id)
        flusher = asyncio.create_task(writer.every(FLUSH_SECONDS))
        window = RecordWindow(self.n, self.source.records)
        executor = make_executor(self.executor_choice, window, self.ctx.options)
        try:
            await executor.run_jobs(jobs(), min(n_workers, pending))
        finally:
            executor.close()
            # judge calls made elsewhere (Ray workers): their provenance, as the judge session's hook gives it
            self.ctx.info.update(getattr(executor, "run_info", None) or {})
            flusher.cancel()
            writer.close()  # also when the run stops early: nothing that was scored is lost

    # ------------------------------------------------------------------ the result
    def result(
        self, extra_info: Mapping[str, Any] | None = None, *, aborted: str | None = None
    ) -> EvaluationResult:
        """Rows, metrics and summary of the run (reads the store, writes nothing). ``aborted``: the
        cause of a run that stopped early; pairs it left unscored count as failed with it (they are
        not stored, so a resume scores them)."""
        if self.resumed:
            self._feed_stored()
        missing = self.acc.missing()
        failures: dict[str, Outcome] = {}
        if aborted is not None:
            for name, ev in self.evs.items():
                unseen = np.flatnonzero(~self.acc.seen(name))
                if not len(unseen):
                    continue
                out = ev.failure(f"not scored: the run was stopped: {aborted}", kind="aborted")
                failures[name] = out
                lines = score_lines(out.scores)
                for i in unseen.tolist():
                    self.acc.add_result(name, i, out, True, lines)
        evs = self.evs
        corpus = self._corpus()
        figures = self.acc.finish(
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
        if self.keep:  # the rows are here: the SDK's frame gives the metrics from their columns
            with collector_paused():  # a million cells, no cycles: see touchstone._gc
                rows, columns = self._rows_in_memory(failures)
                metrics = sdk_metrics(columns, own_aggregators(evs))
            for name, values in corpus.items():
                metrics.update({f"{name}.{k}": v for k, v in values.items()})
        else:
            assert figures.schema is not None
            rows = StoredRows(
                self.store, self.ctx.run_id, self.n, figures.schema, records=self.source.records,
                unscored=lambda name, i: failures.get(name),
            )
            n_failed = figures.n_failed
        unscored = [name for name, ev in evs.items()
                    if not figures.summary.get(f"{name}.{ev.info.key}", {}).get("n")]
        info = self.store.get_run(self.ctx.run_id)
        run: dict[str, Any] = info.as_dict() if info is not None else {"id": self.ctx.run_id}
        run["status"] = figures.status
        run["usage"] = figures.usage
        run["unscored_metrics"] = unscored
        run.update(extra_info or {})
        return EvaluationResult(rows=rows, metrics=metrics, summary=figures.summary, run=run,
                                n_failed=n_failed)

    def _feed_stored(self) -> None:
        """Feed the stored results this call did not produce (a resume's earlier scores), page by page."""
        evs = self.evs
        for start in range(0, self.n, STORE_PAGE):
            stop = min(self.n, start + STORE_PAGE)
            unseen = {name: ~self.acc.seen(name)[start:stop] for name in evs}
            if not any(mask.any() for mask in unseen.values()):
                continue
            page = _stored_page(self.store, self.ctx.run_id, evs, start, stop)
            for (idx, name), (out, usage) in page.items():
                if not unseen[name][idx - start]:
                    continue
                lines = out.lines if type(out) is CompactOutcome else score_lines(out.scores)
                self.acc.add_result(name, idx, out, out.failed, lines, usage)
                if self.keep:
                    self.scores[idx, name] = (out, usage)

    def _rows_in_memory(
        self, failures: Mapping[str, Outcome]
    ) -> tuple[list[dict[str, Any]], dict[str, Columns]]:
        """The rows of a small run as the SDK's frame makes them (engine/frame.py), and each
        evaluator's columns."""
        records = self.source.records
        if records is None:
            records = [rec for _, batch in self.source.batches() for rec in batch]
        per_eval: dict[str, list[Outcome | None]] = {name: [] for name in self.evs}
        for i in range(self.n):
            for name in self.evs:
                out = self.scores.get((i, name), (None, None))[0]
                per_eval[name].append(failures.get(name) if out is None else out)
        targets: list[tuple[dict[str, Any] | None, str | None]] | None = None
        if self.acc.with_target:
            stored = {r.idx: (r.target, r.target_error) for r in self.store.get_rows(self.ctx.run_id)}
            targets = [self.targets.get(i, stored.get(i, (None, None))) for i in range(self.n)]
        return sdk_rows(
            [sdk_input(rec.data, rec.source) for rec in records],
            per_eval,
            {name: [o is None or o.failed for o in outs] for name, outs in per_eval.items()},
            targets,
        )

    def _corpus(self) -> dict[str, dict[str, float]]:
        """Corpus-level figures of the evaluators that compute them, over the rows they scored: the
        inputs read again from the source, the outputs from the store, one page at a time."""
        corpus: dict[str, dict[str, float]] = {}
        for name, ev in self.evs.items():
            if type(ev).corpus_metrics is Evaluator.corpus_metrics:
                continue
            scores = self.acc.scores[name]
            ok = scores.seen & ~scores.failed
            count = int(ok.sum())
            inputs = _Pass(count, lambda name=name, ok=ok: self._corpus_inputs(name, ok))  # type: ignore[misc]
            outputs = _Pass(count, lambda name=name, ok=ok: self._corpus_outputs(name, ok))  # type: ignore[misc]
            corpus[name] = ev.corpus_metrics(inputs, outputs)
        return corpus

    def _corpus_inputs(self, name: str, ok: np.ndarray) -> Iterator[dict[str, Any]]:
        ev, plan = self.evs[name], self._plan(name)
        mapping = self.mappings.get(name, {})
        for start, batch in self.source.batches():
            for offset in np.flatnonzero(ok[start : start + len(batch)]).tolist():
                data = batch[offset].data
                if plan:
                    yield direct_inputs(plan, data)
                else:
                    target = self.targets.get(start + offset, (None, None))[0]
                    yield evaluator_inputs(ev, mapping, data, target)

    def _corpus_outputs(self, name: str, ok: np.ndarray) -> Iterator[Outcome]:
        if self.keep:  # a small run holds its results
            scores = self.scores
            for i in np.flatnonzero(ok).tolist():
                yield scores[i, name][0]
            return
        for start in range(0, self.n, STORE_PAGE):
            stop = min(self.n, start + STORE_PAGE)
            if not ok[start:stop].any():
                continue
            lines = self.store.fetch_all(
                "SELECT idx, outputs FROM scores WHERE run_id = ? AND evaluator = ? AND idx >= ? AND idx < ? "
                "ORDER BY idx",
                (self.ctx.run_id, name, start, stop),
            )
            for idx, text in lines:
                if ok[idx]:
                    yield CompactOutcome(json.loads(text), (), False)


class _Pass(Sequence[Any]):
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


class RecordWindow(Sequence[Record]):
    """Records by their index in the run, for the batches being worked on (what an executor's
    ``score_indices`` looks rows up in): every record when the run holds them, else the batches
    :meth:`hold` keeps until :meth:`release`."""

    def __init__(self, n_rows: int, records: Sequence[Record] | None = None) -> None:
        self._n, self._all = n_rows, records
        self._batches: dict[int, list[Record]] = {}

    def hold(self, start: int, batch: list[Record]) -> None:
        if self._all is None:
            self._batches[start] = batch

    def release(self, start: int) -> None:
        self._batches.pop(start, None)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if self._all is not None:
            return self._all[index]
        for start, batch in self._batches.items():
            if start <= index < start + len(batch):
                return batch[index - start]
        raise IndexError(f"row {index} is not in a batch being worked on")


_Group = dict[str, list[tuple[int, Outcome, bool, "dict[str, Any] | None", list[Score]]]]
"""Results waiting to be written, by evaluator name."""


class _GroupWriter:
    """Writes the results of I/O-bound evaluators in groups: at most :data:`FLUSH_SECONDS` after
    they are produced, or once :data:`FLUSH_ROWS` wait, and whatever waits when the run ends or
    stops. One transaction per group instead of one per row: a judge run of 2,000 rows spent more of
    its client CPU committing rows one by one than on its HTTP requests' bookkeeping.

    The groups are written by one thread of the writer's own, in order, so the event loop goes on
    reading judge replies meanwhile (a group of a one-call safety run is about 30 rows of 10 kB:
    written on the loop, the groups held it up 4% of the run). A store error is raised by the next
    ``add`` or ``flush``; :meth:`flush` returns once everything handed over is written."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self._waiting: _Group = {}
        self._count = 0
        self._thread = StoreThread()

    def add(self, name: str, record: tuple[int, Outcome, bool, dict[str, Any] | None, list[Score]]) -> None:
        self._waiting.setdefault(name, []).append(record)
        self._count += 1
        if self._count >= FLUSH_ROWS:
            self._hand_over()

    def _hand_over(self) -> None:
        """Give what waits to the writing thread (raising a store error an earlier group met)."""
        waiting, self._waiting, self._count = self._waiting, {}, 0
        if waiting:
            self._thread.submit(self._write, waiting)

    def _write(self, waiting: _Group) -> None:
        for name, records in waiting.items():
            self.store.put_scores(self.run_id, name, records)

    def flush(self) -> None:
        """Write what waits and return once every group handed over is written."""
        self._hand_over()
        self._thread.drain()

    def close(self) -> None:
        """:meth:`flush`, then stop the writing thread (a later flush writes in the caller's thread)."""
        try:
            self._hand_over()
        finally:
            self._thread.close()

    async def every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self._hand_over()


def _direct_plan(
    ev: Evaluator, mapping: Mapping[str, Ref], has_target: bool
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """For an evaluator whose inputs are plain columns of the row -- no column mapping, no target,
    one input mode, no conversation built from ``messages`` -- the ``(input, candidate columns)``
    lookups that give exactly what :func:`evaluator_inputs` gives; empty when that does not apply."""
    if has_target or mapping or len(ev.required_modes()) > 1:
        return ()
    if any(spec.name == "conversation" for spec in ev.inputs):
        return ()
    return tuple((spec.name, (spec.name, *ALIASES.get(spec.name, ()))) for spec in ev.inputs)


def stored_outcomes(
    store: Store, run_id: str, evs: Mapping[str, Evaluator]
) -> dict[tuple[int, str], tuple[Outcome, dict[str, Any] | None]]:
    """The run's stored Outcomes: the typed score columns with the flat outputs beside them (rows
    stored by a version without typed columns are read through :meth:`Evaluator.as_outcome`)."""
    typed: dict[tuple[int, str], list[ScoreValue]] = {}
    for sv in store.score_values(run_id):
        typed.setdefault((sv.idx, sv.evaluator), []).append(sv)
    out: dict[tuple[int, str], tuple[Outcome, dict[str, Any] | None]] = {}
    for (idx, name), (outputs, usage) in store.get_scores(run_id).items():
        ev = evs.get(name)
        if ev is None:
            continue
        lines = typed.get((idx, name))
        if lines is None:
            out[idx, name] = (ev.as_outcome(outputs), usage)
            continue
        main = ev.info.key
        lines.sort(key=lambda sv: sv.metric != main)  # the main score first
        error = outputs.get(f"{ev.info.prefix}_error")
        out[idx, name] = (
            CompactOutcome(
                outputs,
                [(sv.metric, sv.value, sv.label, sv.status.value, sv.error_kind, sv.passed) for sv in lines],
                any(not sv.ok for sv in lines),
                None if error is None else str(error),
            ),
            usage,
        )
    return out


def _stored_page(
    store: Store, run_id: str, evs: Mapping[str, Evaluator], start: int, stop: int
) -> dict[tuple[int, str], tuple[Outcome, dict[str, Any] | None]]:
    """:func:`stored_outcomes` of the rows ``start`` to ``stop`` (exclusive)."""
    typed: dict[tuple[int, str], list[ScoreLine]] = {}
    for evaluator in evs:  # one query per evaluator: the typed lines are keyed by evaluator, then row
        for idx, name, metric, value, label, status, kind, passed in store.fetch_all(
            "SELECT idx, evaluator, metric, value, label, status, error_kind, passed FROM score_values "
            "WHERE run_id = ? AND evaluator = ? AND idx >= ? AND idx < ? ORDER BY idx, metric",
            (run_id, evaluator, start, stop),
        ):
            typed.setdefault((int(idx), str(name)), []).append(
                (metric, value, label, status, kind, None if passed is None else bool(passed))
            )
    out: dict[tuple[int, str], tuple[Outcome, dict[str, Any] | None]] = {}
    for idx, name, text, usage_text in store.fetch_all(
        "SELECT idx, evaluator, outputs, usage FROM scores WHERE run_id = ? AND idx >= ? AND idx < ?",
        (run_id, start, stop),
    ):
        ev = evs.get(name)
        if ev is None:
            continue
        outputs = json.loads(text)
        usage = json.loads(usage_text) if usage_text else None
        lines = typed.get((int(idx), str(name)))
        if lines is None:
            out[int(idx), name] = (ev.as_outcome(outputs), usage)
            continue
        main = ev.info.key
        lines.sort(key=lambda line: line[0] != main)  # the main score first
        error = outputs.get(f"{ev.info.prefix}_error")
        failed = any(line[3] != Status.OK.value for line in lines)
        message = None if error is None else str(error)
        out[int(idx), name] = (CompactOutcome(outputs, lines, failed, message), usage)
    return out


def load_run_result(store: Store, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Stored metrics and summary document of a finished run (for ``touchstone show``)."""
    info = store.get_run(run_id)
    if info is None:
        raise ConfigurationError(f"no run {run_id!r} in the store {store.path}")
    return info.as_dict(), {"metrics": info.metrics or {}, **(info.summary or {})}
