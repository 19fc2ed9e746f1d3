"""``evaluate()``: load -> validate -> (target) -> score -> store -> aggregate.

This module checks the call (its options, the data, a resumed run's fingerprint), opens the store
and the run, then hands the run to :class:`~touchstone.engine.run.session.RunSession` (the passes
over the rows: :mod:`touchstone.engine.run`) and records its end. The rows are read in batches
(:mod:`touchstone.data.streaming`: a large file is validated in a first streaming pass, then read
again as it is scored; other inputs are loaded whole). Every row's result is written to the run
store as soon as it is produced, so a crash loses only what was in flight, and a run can be
resumed: stored scores are not computed again. A small run's rows are rendered at the end as a list;
a large run's are read back from the store on demand. Building the result writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from touchstone._exceptions import ErrorTarget
from touchstone._gc import collector_paused
from touchstone._version import __version__
from touchstone.data.loaders import DataSource
from touchstone.data.mapping import evaluator_mappings
from touchstone.data.streaming import RowSource, open_source
from touchstone.engine.context import RunContext
from touchstone.engine.executors import ExecutorChoice, open_dataset, reads_with_ray
from touchstone.engine.known_options import check_evaluate_options
from touchstone.engine.result import EvaluationResult
from touchstone.engine.rows_file import open_rows_file
from touchstone.engine.run.finish import run_result
from touchstone.engine.run.resume import check_resume, fingerprint, retry_kinds
from touchstone.engine.run.session import ProgressCallback, RunLimits, RunSession
from touchstone.errors import (
    EvaluatorFailedError,
    FailedScoresWarning,
    InputValidationError,
    RunAbortedError,
    warn_nothing_uploaded,
)
from touchstone.evaluators.base import Evaluator, EvaluatorLike
from touchstone.evaluators.custom import as_sdk_evaluator
from touchstone.store import Store, open_store
from touchstone.targets import HttpTarget, row_target

BATCH_ROWS = 2000
"""The largest chunk of rows the CPU-bound pass scores at once."""
PARALLEL_MIN_ROWS = 20_000
"""Rows from which CPU-bound metrics use every core by default."""
ROWS_IN_MEMORY = 100_000
"""Runs of at most this many rows return ``rows`` as a list (their Outcomes are kept for it); larger
ones as :class:`~touchstone.engine.stored_rows.StoredRows`, read from the store on demand."""


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
    :class:`~touchstone.engine.executors.RayExecutor`: where metrics run), ``target`` also as an
    http(s) URL or a :mod:`touchstone.targets` HTTP target (an OpenAI-compatible chat endpoint or a
    JSON POST: the row's query is sent, ``response`` read back),
    and ``options`` passed to run hooks (judge settings such as ``concurrency`` or ``cache``). An
    option outside those :mod:`touchstone.engine.known_options` lists raises
    :class:`~touchstone.errors.UnknownOptionError` naming the closest one, before anything is read.
    """
    check_evaluate_options(options)  # a misspelt option must not run with its default
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

    retry = retry_kinds(options.pop("retry_failed", None))
    run_store = open_store(store)
    config = _run_config(data, evs, evaluator_config, target, evaluation_name, options)
    config["n_rows"] = source.n_rows
    config["fingerprint"] = fingerprint(source.digest, config)
    config["process"] = {"pid": os.getpid(), "host": socket.gethostname()}
    if resume:
        check_resume(run_store, resume, config)
        run_id = resume
        run_store.set_status(run_id, "running")
    else:
        run_id = run_store.create_run(config, evaluation_name, __version__)

    ctx = RunContext(run_id=run_id, store=run_store, evaluators=evs, options=dict(options))
    runner = RunSession(
        ctx, source, evs, mappings, target,
        limits=RunLimits(ROWS_IN_MEMORY, PARALLEL_MIN_ROWS, BATCH_ROWS),
        progress=progress, workers=workers, executor=executor,
        resumed=bool(resume), retry=retry if resume else frozenset(),
        rows_file=open_rows_file(output_path),  # written as rows complete (engine/rows_file.py)
    )
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
        result = run_result(runner, ctx.info, aborted=str(exc))
        _finish(run_store, run_id, result)
        if runner.rows_file is not None:
            runner.rows_file.finish(result)
        exc.result = result  # type: ignore[attr-defined]
        raise
    except BaseException:
        with contextlib.suppress(Exception):  # a broken store must not hide the first error
            run_store.set_status(run_id, "failed")
        raise

    result = run_result(runner, ctx.info)
    _finish(run_store, run_id, result)
    if runner.rows_file is not None:
        runner.rows_file.finish(result)
    if fail_on_evaluator_errors and result.n_failed:
        raise EvaluationFailedError(_failure_message(result, run_id), target=ErrorTarget.EVAL_RUN)
    if result.n_failed:
        warnings.warn(_failures_in_brief(result, run_id), FailedScoresWarning, stacklevel=2)
    return result


def _failures_in_brief(result: EvaluationResult, run_id: str) -> str:
    """One line for a run with failed scores: how many, and the first cause (rows are read only up
    to the first failed one)."""
    first = next(
        (
            (key.split(".")[1], value) for row in result.rows for key, value in row.items()
            if key.startswith("outputs.") and key.endswith("_error") and isinstance(value, str) and value
        ),
        None,
    )
    text = f"{result.n_failed} scores could not be obtained in run {run_id}"
    if first is not None:
        text += f"; the first: {first[0]}: {first[1][:300]}"
    return text + " (each failed row carries its <metric>_error; the summary counts them as n_failed)"


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


def describe_source(data: Any, options: Mapping[str, Any]) -> str:
    """What a run's data was, for lists of runs: a file's path; a sample of a file (``touchstone eval
    --sample``) as that file; a monitor's window as the monitor and its window; rows given in memory
    as their kind and count (``a list of 40 rows``), never a bare ``<list>``."""
    if isinstance(data, (str, os.PathLike)):
        return str(data)
    sampling = options.get("sampling")
    monitor = options.get("monitor")
    try:
        count = f" of {len(data)} rows"
    except Exception:  # a Ray Dataset (no len: AttributeError) or another lazily counted source
        count = ""
    if isinstance(sampling, Mapping) and sampling.get("data"):
        return f"{sampling['data']} (a sample{count})"
    if isinstance(monitor, Mapping) and monitor.get("name"):
        window = f"{monitor.get('window_start')} .. {monitor.get('window_end')}"
        return f"monitor {monitor['name']}, window {window}"
    kind = {"list": "a list", "DataFrame": "a DataFrame", "tuple": "a tuple"}.get(type(data).__name__)
    return f"{kind or type(data).__name__}{count} (in memory)"


def _run_config(
    data: Any,
    evs: Mapping[str, Evaluator],
    evaluator_config: Mapping[str, Any] | None,
    target: Any,
    name: str | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    source = describe_source(data, options)
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
