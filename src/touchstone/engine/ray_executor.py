"""The Ray executor: a run's metrics scored across a Ray cluster.

CPU-bound metrics run as Ray tasks, one per batch of rows (the driver sends each task the rows it
scores, never the whole dataset); Ray retries a task whose worker died, so no row is lost. I/O-bound
metrics (judges) run in async Ray actors, :data:`JUDGE_WORKERS` by default, each with its own judge
session (HTTP clients, cache, retries) whose concurrency limit is **one for the whole cluster**: a
limiter actor holds the :class:`~touchstone.judges.limiter.AdaptiveLimiter` of each judge backend
(the same adaptive logic as a local run, and the server's Retry-After pauses), and the workers take
and give back its slots. Results come back to the driver, which writes the store as a local run
does, so a run whose driver crashed resumes from what the store holds. Ray is imported only here,
when a run asks for it (``pip install 'touchstone[ray]'``).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from touchstone.data.loaders import Record
from touchstone.engine.executors import Plan, WireRow, direct_inputs, score_wire, score_with_usage
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import Evaluator
from touchstone.judges.limiter import AdaptiveLimiter, Ticket
from touchstone.scores import Outcome

JUDGE_WORKERS = 2
"""Async actors that make judge calls (they share one concurrency limit, so more only spread the
client's work)."""
JUDGE_BATCH = 32
"""Judge rows sent to an actor in one call..."""
JUDGE_BATCH_SECONDS = 0.005
"""...or fewer, after waiting this long for more."""
INSTALL_HINT = "pip install 'touchstone[ray]'"
Scored = tuple[Outcome, dict[str, Any]]
"""A judge row's Outcome and the usage of its calls."""
_BACKGROUND: set[asyncio.Task[None]] = set()
"""Tasks nobody awaits (slots given back late), kept referenced until they finish."""


def _background(coro: Awaitable[None]) -> asyncio.Task[None]:
    task: asyncio.Task[None] = asyncio.ensure_future(coro)
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)
    return task


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`ConfigurationError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigurationError(f"the Ray executor needs Ray: {INSTALL_HINT}") from None
    return ray


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
        self._next_actor = itertools.count()
        self._pending: list[tuple[Evaluator, dict[str, Any], asyncio.Future[Scored]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: set[asyncio.Task[None]] = set()
        self._batch_task: Any = None
        self._wire_task: Any = None

    def bind(self, records: Sequence[Record], options: Mapping[str, Any]) -> RayExecutor:
        """A copy of this executor for one part of a run over ``records`` (``options``: the run's
        judge settings), connected to the cluster."""
        bound = copy.copy(self)
        bound._records, bound._options = records, dict(options)
        bound._ev_refs, bound._actors, bound._pending, bound._waiting = {}, [], [], set()
        bound._limiter, bound._timer, bound._next_actor = None, None, itertools.count()
        bound._ray = ray = connect(self.address)
        # Ray retries a task whose worker process died (max_retries=-1: as often as it takes)
        bound._batch_task = ray.remote(max_retries=-1)(_score_batch)
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

    # ------------------------------------------------------------------ I/O-bound metrics
    async def run_jobs(self, jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
        it = iter(jobs)

        async def worker() -> None:
            for job in it:
                await job()

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))

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
        self._limiter = limiter.options(name=name).remote()
        worker = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1, scheduling_strategy="SPREAD")(
            JudgeWorker
        )
        self._actors = [worker.remote(self._options, name) for _ in range(self.judge_workers)]

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if not pending:
            return
        if not self._actors:
            self._start_actors()
        by_ev: dict[int, list[tuple[Evaluator, dict[str, Any], asyncio.Future[Any]]]] = {}
        for item in pending:
            by_ev.setdefault(id(item[0]), []).append(item)
        for items in by_ev.values():
            key, ref = self._ev_ref(items[0][0])
            actor = self._actors[next(self._next_actor) % len(self._actors)]
            # the evaluator's reference inside a list: Ray passes it as a reference, and the actor
            # fetches the evaluator only the first time it sees ``key``
            call = actor.score.remote(key, [ref], [inputs for _, inputs, _ in items])
            task = _background(_deliver(call, [fut for _, _, fut in items]))
            self._waiting.add(task)
            task.add_done_callback(self._waiting.discard)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for _, _, fut in self._pending:
            fut.cancel()
        self._pending = []
        for task in list(self._waiting):
            task.cancel()
        if self._ray is not None:
            for actor in [*self._actors, *([self._limiter] if self._limiter is not None else [])]:
                self._ray.kill(actor)
        self._actors, self._limiter = [], None


def connect(address: str | None) -> Any:
    """Ray, connected to the cluster at ``address`` (once per process)."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        except ConnectionError as exc:
            raise ConfigurationError(f"cannot reach the Ray cluster at {address!r}: {exc}") from None
    return ray


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
def _score_batch(ev: Evaluator, rows: list[dict[str, Any]]) -> list[Outcome]:
    return ev.score_batch(rows)


class LimiterActor:
    """One :class:`AdaptiveLimiter` per judge backend for the whole cluster (an async Ray actor)."""

    def __init__(self) -> None:
        self._limiters: dict[str, AdaptiveLimiter] = {}
        self._tickets: dict[tuple[str, int], tuple[Ticket, str]] = {}

    def _limiter(self, key: str, maximum: int, adaptive: bool) -> AdaptiveLimiter:
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = AdaptiveLimiter(maximum, adaptive=adaptive)
        return limiter

    async def acquire(
        self, key: str, maximum: int, adaptive: bool, owner: str
    ) -> tuple[Ticket, dict[str, Any]]:
        limiter = self._limiter(key, maximum, adaptive)
        ticket = await limiter.acquire()
        self._tickets[key, ticket.seq] = (ticket, owner)
        return ticket, _state(limiter)

    async def release(self, key: str, seq: int, outcome: str) -> None:
        held = self._tickets.pop((key, seq), None)
        if held is not None:  # unknown after a restart of this actor: nothing to give back
            self._limiters[key].release(held[0], outcome)

    async def forget(self, owner: str) -> int:
        """Give back the slots held by a judge worker that died (``owner``: its actor id, which its
        restarted self reports): its requests ended with it. The number given back."""
        dead = [(key, seq) for (key, seq), (_, who) in self._tickets.items() if who == owner]
        for key, seq in dead:
            await self.release(key, seq, "cancelled")
        return len(dead)

    async def detach(self, key: str, seq: int) -> None:
        held = self._tickets.get((key, seq))
        if held is not None:
            self._limiters[key].detach(held[0])

    async def pause(self, key: str, seconds: float) -> None:
        limiter = self._limiters.get(key)
        if limiter is not None:
            limiter.pause(seconds)

    async def state(self, key: str) -> dict[str, Any]:
        limiter = self._limiters.get(key)
        return {} if limiter is None else _state(limiter)


def _state(limiter: AdaptiveLimiter) -> dict[str, Any]:
    return {
        "current": limiter.current,
        "min_limit": limiter.min_limit,
        "decreases": limiter.decreases,
        "stall": limiter.stall_after(),
    }


class RemoteLimiter:
    """The limiter a judge worker's backend uses: slots taken from and given back to the cluster's
    :class:`LimiterActor` (same interface as :class:`AdaptiveLimiter` for the judge session)."""

    def __init__(self, actor: Any, key: str, maximum: int, adaptive: bool, owner: str) -> None:
        self._actor, self._key, self._owner = actor, key, owner
        self.maximum, self.adaptive = maximum, adaptive
        self.current, self.min_limit, self.decreases = maximum, float(maximum), 0
        self._stall: float | None = None

    def _update(self, state: Mapping[str, Any]) -> None:
        self.current = int(state.get("current", self.current))
        self.min_limit = float(state.get("min_limit", self.min_limit))
        self.decreases = int(state.get("decreases", self.decreases))
        self._stall = state.get("stall", self._stall)

    async def acquire(self) -> Ticket:
        ref = self._actor.acquire.remote(self._key, self.maximum, self.adaptive, self._owner)
        try:
            ticket, state = await ref
        except asyncio.CancelledError:
            # the slot may still be granted: give it back once it is
            _background(self._give_back(ref))
            raise
        self._update(state)
        ticket.started = time.monotonic()
        return ticket  # type: ignore[no-any-return]

    async def _give_back(self, ref: Any) -> None:
        ticket, _ = await ref
        self.release(ticket, "cancelled")

    def release(self, ticket: Ticket, outcome: str = "success") -> None:
        self._actor.release.remote(self._key, ticket.seq, outcome)

    def detach(self, ticket: Ticket) -> None:
        ticket.detached = True
        self._actor.detach.remote(self._key, ticket.seq)

    def pause(self, seconds: float) -> None:
        self._actor.pause.remote(self._key, seconds)

    def stall_after(self) -> float | None:
        return self._stall


class JudgeWorker:
    """An async Ray actor scoring judge metrics with its own judge session, whose backends take their
    concurrency slots from the cluster's limiter actor."""

    def __init__(self, options: Mapping[str, Any], limiter: str) -> None:
        import ray

        from touchstone.judges.config import JudgeSettings

        self._settings = JudgeSettings.from_options(dict(options))
        self._limiter = ray.get_actor(limiter)
        # The actor id survives a restart: slots a previous life of this worker held are given back
        # before this one takes any (calls from one caller reach the limiter in order).
        self._owner = str(ray.get_runtime_context().get_actor_id())
        self._limiter.forget.remote(self._owner)
        self._session: Any = None
        self._evaluators: dict[str, Evaluator] = {}

    def _open_session(self) -> Any:
        if self._session is None:
            from touchstone.judges.session import JudgeSession

            limiter, owner = self._limiter, self._owner

            class ClusterSession(JudgeSession):
                def backend(self, config: Any) -> Any:
                    backend = super().backend(config)
                    local = backend.limiter
                    if not isinstance(local, RemoteLimiter):
                        # the key without its last part, the identity of a token provider object,
                        # which differs from process to process: one limit per server and model
                        key = config.session_key().rsplit("|", 1)[0]
                        remote = RemoteLimiter(limiter, key, local.maximum, local.adaptive, owner)
                        backend.limiter = remote  # type: ignore[assignment]  # same interface
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


