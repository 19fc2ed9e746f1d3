"""The Ray executor: a run's metrics scored across a Ray cluster.

CPU-bound metrics run as Ray tasks, one per batch of rows (the driver sends each task the rows it
scores, never the whole dataset); Ray retries a task whose worker died, so no row is lost. I/O-bound
metrics (judges) run in async Ray actors, :data:`JUDGE_WORKERS` by default, each with its own judge
session (HTTP clients, cache, retries) whose concurrency limit is **one for the whole cluster**: a
limiter actor adapts it as a local run's limiter does, from the outcomes the workers report every
fraction of a second, and leases each worker a share of it (:mod:`touchstone.engine.executors.ray.limiter`);
no actor call is made per request. A judge worker that dies is restarted by Ray and the rows it
held are sent to it again. Results come
back to the driver, which writes the store as a local run does, so a run whose driver crashed
resumes from what the store holds; the workers' judge provenance and counters are merged into the
run's (:attr:`RayExecutor.run_info`). Ray is imported only when a run asks for it
(``pip install 'touchstone-genai[ray]'``, :mod:`~touchstone.engine.executors.ray.connect`).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from touchstone.data.loaders import Record
from touchstone.engine.executors.base import Plan, ScoredChunk, WireRow, run_bounded
from touchstone.engine.executors.ray.connect import connect
from touchstone.engine.executors.ray.limiter import Lease, LeasedLimiter, LimiterActor
from touchstone.engine.executors.scoring import direct_inputs, score_batch, score_wire, score_with_usage
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import Evaluator
from touchstone.scores import Outcome

JUDGE_WORKERS = 2
"""Async actors that make judge calls (they share one concurrency limit, so more only spread the
client's work)."""
JUDGE_BATCH = 32
"""Judge rows sent to an actor in one call..."""
JUDGE_BATCH_SECONDS = 0.005
"""...or fewer, after waiting this long for more."""
INFO_SECONDS = 10.0
"""How long the driver waits for the judge workers' provenance at the end of a run."""
Scored = tuple[Outcome, dict[str, Any]]
"""A judge row's Outcome and the usage of its calls."""
_BACKGROUND: set[asyncio.Task[None]] = set()
"""Tasks nobody awaits (the delivery of an actor's answers), kept referenced until they finish."""


def _background(coro: Awaitable[None]) -> asyncio.Task[None]:
    task: asyncio.Task[None] = asyncio.ensure_future(coro)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return task


class RayExecutor:
    """Run metrics on a Ray cluster: ``address`` (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``;
    default: ``$RAY_ADDRESS``, else a local cluster started for the run), ``judge_workers`` async
    actors for judge metrics. Pass it as ``evaluate(..., executor=RayExecutor(address=...))``."""

    parallel = True

    def __init__(self, address: str | None = None, *, judge_workers: int = JUDGE_WORKERS) -> None:
        if judge_workers < 1:
            raise ConfigurationError(f"judge_workers must be at least 1, got {judge_workers}")
        self.address = address
        self.judge_workers = judge_workers
        self._records: Sequence[Record] = ()
        self._options: dict[str, Any] = {}
        self._ray: Any = None
        self._ev_refs: dict[int, tuple[str, Any]] = {}
        self._actors: list[Any] = []
        self._limiter: Any = None
        self._load: list[int] = []
        self._pending: list[tuple[Evaluator, dict[str, Any], asyncio.Future[Scored]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: set[asyncio.Task[None]] = set()
        self._batch_task: Any = None
        self._wire_task: Any = None
        self._started: float | None = None
        self.run_info: dict[str, Any] = {}
        """What the run records of work done elsewhere: ``{"judge": ...}``, the judge workers'
        provenance and counters, once :meth:`close` has collected them."""

    def bind(self, records: Sequence[Record], options: Mapping[str, Any]) -> RayExecutor:
        """A copy of this executor for one part of a run over ``records`` (``options``: the run's
        judge settings), connected to the cluster."""
        bound = copy.copy(self)
        bound._records, bound._options = records, dict(options)
        bound._ev_refs, bound._actors, bound._pending, bound._waiting = {}, [], [], set()
        bound._limiter, bound._timer, bound._load = None, None, []
        bound._started, bound.run_info = None, {}
        bound._ray = ray = connect(self.address)
        # Ray retries a task whose worker process died (max_retries=-1: as often as it takes)
        bound._batch_task = ray.remote(max_retries=-1)(score_batch)
        bound._wire_task = ray.remote(max_retries=-1)(score_wire)
        return bound

    def _ev_ref(self, ev: Evaluator) -> tuple[str, Any]:
        """The evaluator put once in the object store, and the key workers cache it under."""
        entry = self._ev_refs.get(id(ev))
        if entry is None:
            entry = self._ev_refs[id(ev)] = (uuid.uuid4().hex, self._ray.put(ev))
        return entry

    # ------------------------------------------------------------------ CPU-bound metrics
    async def score_batch(self, ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
        result: list[Outcome] = await self._batch_task.remote(self._ev_ref(ev)[1], rows)
        return result

    async def score_indices(self, ev: Evaluator, plan: Plan, indices: list[int]) -> list[WireRow]:
        # Only the batch's own inputs travel: the records stay on the driver.
        rows = [direct_inputs(plan, self._records[i].data) for i in indices]
        result: list[WireRow] = await self._wire_task.remote(self._ev_ref(ev)[1], rows)
        return result

    def map_source(
        self, source: Any, evs: Mapping[str, Evaluator], plans: Mapping[str, Plan], stored: Mapping[str, Any]
    ) -> AsyncIterator[ScoredChunk] | None:
        """CPU metrics over a Ray Dataset input run in ``map_batches`` where its blocks are
        (:func:`~touchstone.engine.executors.ray.data.map_scores`): a :class:`ScoredChunk` as each
        comes. None when the input is not a dataset or a metric's inputs are not plain columns (the
        runner then sends batches as for any input). ``stored``: per metric, the rows already
        stored (a boolean mask by row index)."""
        from touchstone.engine.executors.ray.data import DatasetSource, map_scores

        if not isinstance(source, DatasetSource) or not all(plans.get(name) for name in evs):
            return None
        return map_scores(source, evs, plans, stored)

    # ------------------------------------------------------------------ I/O-bound metrics
    async def run_jobs(self, jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
        await run_bounded(jobs, concurrency)

    async def ascore(self, ev: Evaluator, inputs: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
        """Queue the row for a judge actor; rows are sent in small batches."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[Outcome, dict[str, Any]]] = loop.create_future()
        self._pending.append((ev, inputs, fut))
        if len(self._pending) >= JUDGE_BATCH:
            self._send()
        elif self._timer is None:
            self._timer = loop.call_later(JUDGE_BATCH_SECONDS, self._send)
        return await fut

    def _start_actors(self) -> None:
        ray = self._ray
        # named, so that a restarted judge worker finds it again by name
        name = f"touchstone-limiter-{uuid.uuid4().hex}"
        limiter = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)(LimiterActor)
        self._limiter = limiter.options(name=name).remote(self.judge_workers)
        worker = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1, scheduling_strategy="SPREAD")(
            JudgeWorker
        )
        self._actors = [worker.remote(self._options, name) for _ in range(self.judge_workers)]
        self._load = [0] * len(self._actors)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if not pending:
            return
        if not self._actors:
            self._started = time.monotonic()
            self._start_actors()
        by_ev: dict[int, list[tuple[Evaluator, dict[str, Any], asyncio.Future[Any]]]] = {}
        for item in pending:
            by_ev.setdefault(id(item[0]), []).append(item)
        for items in by_ev.values():
            key, ref = self._ev_ref(items[0][0])
            # to the worker with the fewest rows outstanding: one that is slower (a restart, a busy
            # core) gets fewer, rather than a growing queue while the other has nothing to do
            n = min(range(len(self._actors)), key=lambda k: (self._load[k], k))
            self._load[n] += len(items)
            # the evaluator's reference inside a list: Ray passes it as a reference, and the actor
            # fetches the evaluator only the first time it sees ``key``
            call = self._actors[n].score.remote(key, [ref], [inputs for _, inputs, _ in items])
            task = _background(_deliver(call, [fut for _, _, fut in items]))
            self._waiting.add(task)
            task.add_done_callback(self._waiting.discard)
            task.add_done_callback(functools.partial(self._unload, n, len(items)))

    def _unload(self, n: int, rows: int, _: object) -> None:
        self._load[n] -= rows

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for _, _, fut in self._pending:
            fut.cancel()
        self._pending = []
        for task in list(self._waiting):
            task.cancel()
        if self._ray is not None and self._actors:
            self.run_info = self._collect_info()
        if self._ray is not None:
            for actor in [*self._actors, *([self._limiter] if self._limiter is not None else [])]:
                self._ray.kill(actor)
        self._actors, self._limiter = [], None

    def _collect_info(self) -> dict[str, Any]:
        """The judge workers' provenance merged as one session's (empty when none can be had)."""
        try:
            infos = self._ray.get([actor.info.remote() for actor in self._actors], timeout=INFO_SECONDS)
            limits = self._ray.get(self._limiter.state.remote(), timeout=INFO_SECONDS)
        except Exception:  # a worker gone or hung: provenance is not worth holding the run's end
            return {}
        judge = merge_judge_info([info for info in infos if info])
        if judge is None:
            return {}
        judge["workers"] = len(self._actors)
        # without their keys, which hold a digest of the API key and the extra headers
        judge["cluster_limits"] = list(limits.values())
        if self._started is not None:
            judge["seconds"] = round(time.monotonic() - self._started, 3)
        return {"judge": judge}


CLUSTER_FIGURES: dict[str, Callable[[list[float]], float]] = {
    "concurrency_final": sum, "concurrency_min": min, "concurrency_decreases": max,
}
"""How the workers' per-model concurrency figures make the cluster's: each worker's final figure is
its share of the cluster's limit (they add up to it); its lowest limit and decreases are the
cluster's limit's as last heard (the latest heard wins)."""


def merge_judge_info(infos: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The judge sessions' provenance of several workers as one run's: models merged by provider,
    model and host (their concurrency figures summed), counters summed, settings as they are."""
    if not infos:
        return None
    models: dict[tuple[Any, ...], dict[str, Any]] = {}
    stats: dict[str, float] = {}
    for info in infos:
        for entry in info.get("models", []):
            key = (entry.get("provider"), entry.get("model"), entry.get("host"))
            merged = models.get(key)
            if merged is None:
                models[key] = dict(entry)
                continue
            for figure, combine in CLUSTER_FIGURES.items():
                values = [v for v in (merged.get(figure), entry.get(figure)) if isinstance(v, (int, float))]
                if values:
                    merged[figure] = combine(values)
            unsupported = {*merged.get("unsupported_params", []), *entry.get("unsupported_params", [])}
            merged["unsupported_params"] = sorted(unsupported)
        for name, value in info.get("stats", {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                stats[name] = stats.get(name, 0) + value
    return {"models": list(models.values()), "settings": infos[0].get("settings", {}), "stats": stats}


async def _deliver(call: Any, futures: list[asyncio.Future[Any]]) -> None:
    """Hand an actor's answers to the rows waiting for them (its error to all of them)."""
    try:
        results = await call
    except Exception as exc:
        cause = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
        for fut in futures:
            if not fut.done():
                fut.set_exception(cause)
        return
    for fut, result in zip(futures, results, strict=True):
        if not fut.done():
            fut.set_result(result)


# ------------------------------------------------------------------ in Ray workers
class JudgeWorker:
    """An async Ray actor scoring judge metrics with its own judge session, whose backends keep within
    the share of the cluster's limit this worker leases (:mod:`touchstone.engine.executors.ray.limiter`)."""

    def __init__(self, options: Mapping[str, Any], limiter: str) -> None:
        import ray

        from touchstone.judges.config import JudgeSettings

        self._settings = JudgeSettings.from_options(dict(options))
        # The actor id survives a restart; the lease's life does not: the limiter actor gives back
        # what a previous life of this worker held when this one first reports.
        owner = str(ray.get_runtime_context().get_actor_id())
        self._lease = Lease(ray.get_actor(limiter), owner)
        self._session: Any = None
        self._evaluators: dict[str, Evaluator] = {}

    def _open_session(self) -> Any:
        if self._session is None:
            from touchstone.judges.session import JudgeSession

            lease = self._lease

            class ClusterSession(JudgeSession):
                def backend(self, config: Any) -> Any:
                    backend = super().backend(config)
                    local = backend.limiter
                    if not isinstance(local, LeasedLimiter):
                        # the key without its last part, the identity of a token provider object,
                        # which differs from process to process: one limit per server and model
                        key = config.session_key().rsplit("|", 1)[0]
                        backend.limiter = lease.limiter(key, local.maximum, local.adaptive)
                    return backend

            self._session = ClusterSession(self._settings)
        return self._session

    async def score(
        self, key: str, ev_ref: list[Any], rows: list[dict[str, Any]]
    ) -> list[tuple[Outcome, dict[str, Any]]]:
        from touchstone.judges.session import _current  # the session judge calls find

        ev = self._evaluators.get(key)
        if ev is None:
            ev = self._evaluators[key] = await ev_ref[0]
        token = _current.set(self._open_session())
        try:
            return list(await asyncio.gather(*(score_with_usage(ev, row) for row in rows)))
        finally:
            _current.reset(token)

    async def info(self) -> dict[str, Any] | None:
        """This worker's judge provenance and counters (None before its first judge call)."""
        if self._session is None:
            return None
        info: dict[str, Any] = self._session.info()
        return info if info.get("models") else None
