"""``evaluate()``: load -> validate -> (target) -> score -> store -> aggregate.

CPU-bound evaluators are scored in batches (``score_batch``) and I/O-bound ones (``is_async``) many
rows at once, both through an :class:`~touchstone.engine.executors.Executor` (threads and a process
pool locally). Every row's :class:`~touchstone.scores.Outcome` is written to the run store (any
:class:`~touchstone.store.base.Store`) as soon as it is produced, typed Scores included, so a crash
loses only what was in flight, and a run can be resumed: stored scores are not computed again.
The summary is made from the Scores; building the result writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

from touchstone._exceptions import ErrorTarget
from touchstone._version import __version__
from touchstone.data.kinds import check_value
from touchstone.data.loaders import DataSource, Record, load_records
from touchstone.data.mapping import ALIASES, Ref, evaluator_mappings
from touchstone.data.validation import evaluator_inputs, validate_records
from touchstone.engine.context import RunContext, run_hooks
from touchstone.engine.executors import (
    Executor,
    ExecutorChoice,
    Plan,
    WireRow,
    default_processes,
    direct_inputs,
    make_executor,
)
from touchstone.engine.frame import sdk_input, sdk_metrics, sdk_rows
from touchstone.engine.result import EvaluationResult, own_aggregators
from touchstone.errors import (
    ConfigurationError,
    EvaluatorFailedError,
    InputValidationError,
    RunAbortedError,
    warn_nothing_uploaded,
)
from touchstone.evaluators.base import Evaluator, EvaluatorLike, describe_exception
from touchstone.evaluators.custom import as_sdk_evaluator
from touchstone.scores import CompactOutcome, Outcome, Score
from touchstone.stats.aggregate import summarize
from touchstone.store import Store, StoredRow, open_store
from touchstone.store.base import ScoreValue
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
    records = load_records(data)
    mappings = evaluator_mappings(list(evs), evaluator_config)
    validate_records(records, evs, mappings, has_target=target is not None)

    retry = _retry_kinds(options.pop("retry_failed", None))
    run_store = open_store(store)
    config = _run_config(data, evs, evaluator_config, target, evaluation_name, options)
    config["n_rows"] = len(records)
    config["fingerprint"] = run_fingerprint(records, config)
    config["process"] = {"pid": os.getpid(), "host": socket.gethostname()}
    if resume:
        _check_resume(run_store, resume, config)
        run_id = resume
        run_store.set_status(run_id, "running")
    else:
        run_id = run_store.create_run(config, evaluation_name, __version__)

    ctx = RunContext(run_id=run_id, store=run_store, evaluators=evs, options=dict(options))
    runner = _Runner(ctx, records, evs, mappings, target, progress, workers, executor)
    runner.retry = retry if resume else frozenset()
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
        result = build_result(run_store, run_id, records, evs, mappings, ctx.info, scores=runner.scores,
                              targets=runner.targets, aborted=str(exc))
        _finish(run_store, run_id, result)
        if output_path is not None:
            result.write(output_path)
        exc.result = result  # type: ignore[attr-defined]
        raise
    except BaseException:
        with contextlib.suppress(Exception):  # a broken store must not hide the first error
            run_store.set_status(run_id, "failed")
        raise

    result = build_result(
        run_store, run_id, records, evs, mappings, ctx.info, scores=runner.scores, targets=runner.targets
    )
    _finish(run_store, run_id, result)
    if output_path is not None:
        result.write(output_path)
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


def run_fingerprint(records: list[Record], config: Mapping[str, Any]) -> dict[str, str]:
    """Hashes of the rows' data and of the evaluator configuration (metrics, their options, column
    mapping), kept in the run's config: a resume over other data or other metrics is refused."""
    data = hashlib.sha256()
    for rec in records:
        data.update(json.dumps(rec.data, sort_keys=True, default=_opaque).encode("utf-8", "surrogatepass"))
        data.update(b"\n")
    setup = {key: config.get(key) for key in ("evaluators", "evaluator_config", "target")}
    evaluators = hashlib.sha256(json.dumps(setup, sort_keys=True, default=_opaque).encode())
    return {"data": data.hexdigest(), "evaluators": evaluators.hexdigest()}


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
    def __init__(
        self,
        ctx: RunContext,
        records: list[Record],
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
        self.records = records
        self.evs = evs
        self.mappings = mappings
        self.target = target
        self.progress = progress
        self.workers = workers
        self.targets: dict[int, tuple[dict[str, Any] | None, str | None]] = {}
        self.scores: dict[tuple[int, str], tuple[Outcome, dict[str, Any] | None]] = {}
        """Outcomes produced by this call (as stored), so the result needs no read-back of the store."""
        self._plans: dict[str, Plan] = {}
        self.retry: frozenset[str] = frozenset()
        """Error kinds of stored failed scores to score again (``"*"``: all)."""
        self._writer: _GroupWriter | None = None
        self.done = 0
        self.total = 0

    async def execute(self) -> None:
        async with AsyncExitStack() as stack:
            for hook in run_hooks():
                await stack.enter_async_context(hook(self.ctx))
            await self._run_target()
            stored = self.store.score_keys(self.ctx.run_id) - self._to_retry()
            todo = {
                name: [i for i in range(len(self.records)) if (i, name) not in stored] for name in self.evs
            }
            self.total = len(self.records) * len(self.evs)
            self.done = self.total - sum(len(v) for v in todo.values())
            self._tick(0)
            sync = {n: ev for n, ev in self.evs.items() if not ev.is_async}
            asynchronous = {n: ev for n, ev in self.evs.items() if ev.is_async}
            await asyncio.gather(self._run_sync(sync, todo), self._run_async(asynchronous, todo))

    def _to_retry(self) -> set[tuple[int, str]]:
        """The stored failed scores a resume scores again (their error kind is in :attr:`retry`)."""
        if not self.retry:
            return set()
        everything = "*" in self.retry
        return {
            (sv.idx, sv.evaluator) for sv in self.store.score_values(self.ctx.run_id)
            if sv.evaluator in self.evs and not sv.ok and (everything or (sv.error_kind or "") in self.retry)
        }

    def flush(self) -> None:
        """Write what waits to be written (the run is stopping)."""
        if self._writer is not None:
            self._writer.flush()

    def _tick(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)

    # ------------------------------------------------------------------ target
    async def _run_target(self) -> None:
        stored = {r.idx: r for r in self.store.get_rows(self.ctx.run_id)}
        for idx, row in stored.items():
            self.targets[idx] = (row.target, row.target_error)
        missing = [i for i in range(len(self.records)) if i not in stored]
        if not missing:
            return
        if self.target is None:
            for i in missing:
                self.targets[i] = (None, None)
            self.store.put_rows(
                self.ctx.run_id,
                [
                    StoredRow(
                        i, self.records[i].source, self.records[i].line, self.records[i].data, None, None
                    )
                    for i in missing
                ],
            )
            return
        limit = asyncio.Semaphore(int(self.ctx.options.get("target_concurrency", 8)))
        fn = self.target
        params = inspect.signature(fn).parameters
        takes_all = any(p.kind == p.VAR_KEYWORD for p in params.values())

        async def call(i: int) -> None:
            data = self.records[i].data
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
            rec = self.records[i]
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

    def inputs_for(self, name: str, i: int) -> dict[str, Any] | str:
        """The evaluator's inputs for row ``i``, or why they cannot be built (a target failure, or a
        target output of the wrong type)."""
        plan = self._plan(name)
        if plan:  # plain column lookups (validated before the run): no mapping, no target
            return direct_inputs(plan, self.records[i].data)
        ev = self.evs[name]
        target_out, target_error = self.targets.get(i, (None, None))
        if target_error:
            return f"the target failed on this row: {target_error}"
        inputs = evaluator_inputs(ev, self.mappings.get(name, {}), self.records[i].data, target_out)
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
    async def _run_sync(self, evs: dict[str, Evaluator], todo: dict[str, list[int]]) -> None:
        pending = sum(len(todo[n]) for n in evs)
        if not pending:
            return
        executor = make_executor(
            self.executor_choice, self.records, self.ctx.options,
            processes=default_processes(self.workers, pending, PARALLEL_MIN_ROWS),
        )
        try:
            for name, ev in evs.items():
                await self._run_sync_one(name, ev, todo[name], executor)
        finally:
            executor.close()

    def _store_outcomes(self, name: str, pairs: list[tuple[int, Outcome]]) -> None:
        records: list[tuple[int, Outcome, bool, None, list[Score]]] = []
        scores = self.scores
        for i, out in pairs:
            records.append((i, out, out.failed, None, out.scores))
            scores[i, name] = (out, None)
        self.store.put_scores(self.ctx.run_id, name, records)

    def _store_wire(self, name: str, ev: Evaluator, chunk: list[int], wire: list[WireRow]) -> None:
        """Write what worker processes sent back as it is, and rebuild the Outcomes from it."""
        self.store.put_scores(
            self.ctx.run_id, name, [(i, enc, failed, None, lines) for i, (enc, _, failed, lines) in zip(
                chunk, wire, strict=True)]
        )
        scores = self.scores
        error_key = f"{ev.info.prefix}_error"
        for i, (_, outputs, failed, lines) in zip(chunk, wire, strict=True):
            error = outputs.get(error_key) if failed else None
            message = None if error is None else str(error)
            scores[i, name] = (CompactOutcome(outputs, lines, failed, message), None)

    async def _run_sync_one(self, name: str, ev: Evaluator, indices: list[int], executor: Executor) -> None:
        plan = self._plan(name)

        async def one(chunk: list[int]) -> None:
            if executor.parallel and plan:
                wire = await executor.score_indices(ev, plan, chunk)
                self._store_wire(name, ev, chunk, wire)
            else:
                prepared = [(i, self.inputs_for(name, i)) for i in chunk]
                good = [(i, inp) for i, inp in prepared if isinstance(inp, dict)]
                outs = await executor.score_batch(ev, [inp for _, inp in good])
                by_idx = {i: out for (i, _), out in zip(good, outs, strict=True)}
                pairs = [
                    (i, by_idx[i] if isinstance(inp, dict) else ev.failure(str(inp))) for i, inp in prepared
                ]
                self._store_outcomes(name, pairs)
            self._tick(len(chunk))

        if executor.parallel:  # large input: fixed chunks, a few in flight per worker process
            in_flight = asyncio.Semaphore(max(1, self.workers or (os.cpu_count() or 1)) * 2)

            async def limited(chunk: list[int]) -> None:
                async with in_flight:
                    await one(chunk)

            chunks = [indices[s : s + BATCH_ROWS] for s in range(0, len(indices), BATCH_ROWS)]
            await asyncio.gather(*(limited(c) for c in chunks))
            return
        # In process: chunks sized to take about CHUNK_SECONDS each, so a slow metric (a user's
        # function) still stores its scores every fraction of a second, and a fast one pays little
        # per-chunk overhead.
        # A model metric (embeddings, BERTScore) asks for larger batches through ``min_batch_rows``:
        # its batched forward passes need them more than it needs frequent writes.
        floor = max(MIN_CHUNK, ev.min_batch_rows)
        size, pos = floor, 0
        while pos < len(indices):
            chunk = indices[pos : pos + size]
            started = time.perf_counter()
            await one(chunk)
            elapsed = max(time.perf_counter() - started, 1e-6)
            pos += len(chunk)
            size = int(max(floor, min(BATCH_ROWS, len(chunk) * CHUNK_SECONDS / elapsed)))

    # ------------------------------------------------------------------ I/O-bound evaluators
    async def _run_async(self, evs: dict[str, Evaluator], todo: dict[str, list[int]]) -> None:
        queue: list[tuple[int, str]] = [(i, n) for n in evs for i in todo[n]]
        queue.sort()  # row by row, so the rows that finish first are whole
        if not queue:
            return
        n_workers = max(
            1,
            int(self.ctx.options.get("workers_async", 0))
            or 8 * int(self.ctx.options.get("concurrency") or 32),
        )

        async def job(i: int, name: str) -> None:
            ev = self.evs[name]
            inputs = self.inputs_for(name, i)
            if isinstance(inputs, dict):
                out, usage = await executor.ascore(ev, inputs)
            else:
                out, usage = ev.failure(inputs), {}
            if usage and out.scores:
                out.scores[0].usage = usage
            writer.add(name, (i, out, out.failed, usage or None, out.scores))
            self.scores[i, name] = (out, usage or None)
            self._tick(1)

        writer = self._writer = _GroupWriter(self.store, self.ctx.run_id)
        flusher = asyncio.create_task(writer.every(FLUSH_SECONDS))
        executor = make_executor(self.executor_choice, self.records, self.ctx.options)
        try:
            jobs = (functools.partial(job, i, n) for i, n in queue)
            await executor.run_jobs(jobs, min(n_workers, len(queue)))
        finally:
            executor.close()
            # judge calls made elsewhere (Ray workers): their provenance, as the judge session's hook gives it
            self.ctx.info.update(getattr(executor, "run_info", None) or {})
            flusher.cancel()
            writer.flush()  # also when the run stops early: nothing that was scored is lost


class _GroupWriter:
    """Writes the results of I/O-bound evaluators in groups: at most :data:`FLUSH_SECONDS` after
    they are produced, or once :data:`FLUSH_ROWS` wait, and whatever waits when the run ends or
    stops. One transaction per group instead of one per row: a judge run of 2,000 rows spent more of
    its client CPU committing rows one by one than on its HTTP requests' bookkeeping."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self._waiting: dict[str, list[tuple[int, Outcome, bool, dict[str, Any] | None, list[Score]]]] = {}
        self._count = 0

    def add(self, name: str, record: tuple[int, Outcome, bool, dict[str, Any] | None, list[Score]]) -> None:
        self._waiting.setdefault(name, []).append(record)
        self._count += 1
        if self._count >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        waiting, self._waiting, self._count = self._waiting, {}, 0
        for name, records in waiting.items():
            self.store.put_scores(self.run_id, name, records)

    async def every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.flush()


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


def build_result(
    store: Store,
    run_id: str,
    records: list[Record],
    evs: Mapping[str, Evaluator],
    mappings: Mapping[str, Mapping[str, Ref]],
    extra_info: Mapping[str, Any] | None = None,
    *,
    scores: Mapping[tuple[int, str], tuple[Outcome, dict[str, Any] | None]] | None = None,
    targets: Mapping[int, tuple[dict[str, Any] | None, str | None]] | None = None,
    aborted: str | None = None,
) -> EvaluationResult:
    """Assemble rows, metrics and summary (reads the store, writes nothing).

    ``scores`` and ``targets``: what the run just produced, when it covers every row and evaluator;
    otherwise (a resumed or aborted run) what is stored is read back. ``aborted``: the cause of a run
    that stopped early; rows it left unscored count as failed with it (they are not stored, so a
    resume scores them)."""
    if scores is None or len(scores) < len(records) * len(evs):
        scores = {**stored_outcomes(store, run_id, evs), **(scores or {})}
    if targets is None or len(targets) < len(records):
        targets = {r.idx: (r.target, r.target_error) for r in store.get_rows(run_id)}
    per_eval: dict[str, list[Outcome | None]] = {name: [] for name in evs}
    usage_total: dict[str, float] = {}
    missing = 0
    for i in range(len(records)):
        for name in evs:
            out, usage = scores.get((i, name), (None, None))
            if out is None:
                missing += 1
                if aborted is not None:
                    out = evs[name].failure(f"not scored: the run was stopped: {aborted}", kind="aborted")
            per_eval[name].append(out)
            for k, v in (usage or {}).items():
                if isinstance(v, (int, float)):
                    usage_total[k] = usage_total.get(k, 0) + v
    # The rows and metrics as the compatible SDK's data frame makes them (engine/frame.py).
    with_target = any(t != (None, None) for t in targets.values())
    rows, columns = sdk_rows(
        [sdk_input(rec.data, rec.source) for rec in records],
        per_eval,
        {name: [o is None or o.failed for o in outs] for name, outs in per_eval.items()},
        [targets.get(i, (None, None)) for i in range(len(records))] if with_target else None,
    )
    corpus = _corpus_metrics(records, evs, mappings, targets, per_eval)
    metrics = sdk_metrics(columns, own_aggregators(evs))
    for name, figures in corpus.items():
        metrics.update({f"{name}.{k}": v for k, v in figures.items()})
    summary = summarize({name: ev.info for name, ev in evs.items()}, per_eval, corpus,
                        {name: ev.aggregator_options() for name, ev in evs.items()})
    unscored = [name for name, ev in evs.items() if not summary.get(f"{name}.{ev.info.key}", {}).get("n")]
    info = store.get_run(run_id)
    run: dict[str, Any] = info.as_dict() if info is not None else {"id": run_id}
    run["status"] = _run_status(per_eval, missing=missing, aborted=aborted)
    run["usage"] = usage_total
    run["unscored_metrics"] = unscored
    run.update(extra_info or {})
    return EvaluationResult(rows=rows, metrics=metrics, summary=summary, run=run)


def _corpus_metrics(
    records: list[Record],
    evs: Mapping[str, Evaluator],
    mappings: Mapping[str, Mapping[str, Ref]],
    targets: Mapping[int, tuple[dict[str, Any] | None, str | None]],
    per_eval: Mapping[str, list[Outcome | None]],
) -> dict[str, dict[str, float]]:
    """Corpus-level figures of the evaluators that compute them, over the rows they scored."""
    corpus: dict[str, dict[str, float]] = {}
    has_target = any(t[0] is not None for t in targets.values())
    for name, ev in evs.items():
        if type(ev).corpus_metrics is Evaluator.corpus_metrics:
            continue
        ok = [i for i, out in enumerate(per_eval[name]) if out is not None and not out.failed]
        plan = _direct_plan(ev, mappings.get(name, {}), has_target)
        if plan:
            ins = [direct_inputs(plan, records[i].data) for i in ok]
        else:
            ins = [
                evaluator_inputs(ev, mappings.get(name, {}), records[i].data, targets.get(i, (None, None))[0])
                for i in ok
            ]
        corpus[name] = ev.corpus_metrics(ins, [per_eval[name][i] or Outcome([]) for i in ok])
    return corpus


def _run_status(per_eval: Mapping[str, list[Outcome | None]], *, missing: int, aborted: str | None) -> str:
    """The run's status: aborted, incomplete (scores missing), completed with failures, or completed."""
    if aborted is not None:
        return "aborted"
    if missing:
        return "incomplete"
    any_failed = any(o is None or o.failed for outs in per_eval.values() for o in outs)
    return "completed_with_failures" if any_failed else "completed"


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


def load_run_result(store: Store, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Stored metrics and summary document of a finished run (for ``touchstone show``)."""
    info = store.get_run(run_id)
    if info is None:
        raise ConfigurationError(f"no run {run_id!r} in the store {store.path}")
    return info.as_dict(), {"metrics": info.metrics or {}, **(info.summary or {})}
