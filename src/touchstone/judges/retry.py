"""The one retry loop every judge call goes through, whatever its provider.

It dispatches on the error an attempt raises (see :mod:`touchstone.judges.errors`): a rate limit
waits as the server asks; a transient fault (5xx, timeout, dropped connection, malformed body) backs
off exponentially with jitter; a reply that failed the caller's validation is asked again at once; a
refused optional parameter is handed to the call's negotiation (:mod:`touchstone.judges.negotiation`);
a refused row fails this call; anything else stops the run (:class:`~touchstone.judges.abort.AbortState`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from touchstone.judges.abort import AbortState
from touchstone.judges.accounting import Accounting
from touchstone.judges.config import JudgeSettings, ModelConfiguration
from touchstone.judges.errors import (
    JudgeCallError,
    ProviderError,
    RateLimited,
    RowRejected,
    TransientError,
    UnsupportedParameter,
)
from touchstone.judges.providers.base import Backend, Unreachable

_T = TypeVar("_T")

SAME_FIRST_FAILURES = 4
"""A backend whose first calls (none has succeeded yet) all fail with this many identical HTTP 500
errors (or find no server: connection refused, unknown host) stops the run: a server fault that
retrying every row will not fix (an overload varies, is a 502/503/504, or comes after successes)."""

_DETERMINISTIC_STATUSES = (500, 501)


class InvalidReply(TransientError):
    """A reply that failed the caller's validation: asked again at once (never cached)."""

    kind = "invalid_output"


class RetryLoop:
    """Retries within a session's settings, counting retries and failures."""

    __slots__ = ("_abort", "_accounting", "_rng", "_settings")

    def __init__(self, settings: JudgeSettings, accounting: Accounting, abort: AbortState) -> None:
        self._settings = settings
        self._accounting = accounting
        self._abort = abort
        self._rng = random.Random()

    async def run(
        self,
        config: ModelConfiguration,
        backend: Backend,
        attempt: Callable[[], Awaitable[_T]],
        *,
        label: str,
        unsupported: Callable[[UnsupportedParameter], bool] | None = None,
    ) -> _T:
        """``await attempt()`` until it returns; a call that cannot succeed raises
        :class:`JudgeCallError`, one no call can raises the run's abort error. ``unsupported`` says
        whether to try again after a refused parameter (it adjusted the request)."""
        settings, count = self._settings, self._accounting.count
        errors = rate_limited = 0
        while True:
            started = time.monotonic()
            try:
                return await attempt()
            except RateLimited as exc:
                rate_limited += 1
                if rate_limited > settings.max_rate_limit_retries:
                    raise self._give_up(
                        f"{label} still rate limited after {rate_limited} attempts: {exc}", exc.kind
                    ) from None
                count(retries=1, rate_limited=1)
                wait = exc.retry_after
                wait = self._backoff(rate_limited) if wait is None else wait * self._rng.uniform(1.0, 1.1)
                await asyncio.sleep(min(wait, settings.max_retry_wait))
            except TransientError as exc:
                errors += 1
                if errors > settings.max_retries:
                    raise self._give_up(f"{label} failed after {errors} attempts: {exc}", exc.kind) from None
                if isinstance(exc, InvalidReply):
                    count(retries=1, invalid_replies=1)
                    continue  # the server answered: ask again at once
                self._check_first_failures(config, backend, exc)
                count(retries=1)
                # The backoff spaces attempts out: an attempt that itself took long (a hang that ended
                # in a dropped connection or a timeout) has waited already.
                wait = max(self._backoff(errors), exc.retry_after or 0.0) - (time.monotonic() - started)
                await asyncio.sleep(min(max(0.0, wait), settings.max_retry_wait))
            except UnsupportedParameter as exc:
                if unsupported is not None and unsupported(exc):
                    continue
                raise self._give_up(f"{label} rejected: {exc}", exc.kind) from None
            except RowRejected as exc:
                raise self._give_up(f"{label} rejected: {exc}", exc.kind) from None
            except ProviderError as exc:  # fatal, quota: every call would fail the same way
                self._abort.stop_for(config, backend.host, exc)

    def _backoff(self, attempt: int) -> float:
        settings = self._settings
        base: float = min(settings.backoff_max, settings.backoff_base * 2 ** max(0, attempt - 1))
        return base * self._rng.uniform(0.5, 1.0)

    def _give_up(self, message: str, kind: str) -> JudgeCallError:
        self._accounting.count(failed_calls=1)
        return JudgeCallError(message, kind=kind)

    def _check_first_failures(
        self, config: ModelConfiguration, backend: Backend, error: TransientError
    ) -> None:
        """Stop the run when the backend's first calls all met the same HTTP 500 or found no server
        (see :data:`SAME_FIRST_FAILURES`); anything after a success keeps its retries."""
        if backend.confirmed:
            return
        if error.status not in _DETERMINISTIC_STATUSES and not isinstance(error, Unreachable):
            return
        if error.message == backend.first_failure:
            backend.first_failures += 1
        else:
            backend.first_failure, backend.first_failures = error.message, 1
        if backend.first_failures >= SAME_FIRST_FAILURES:
            self._abort.stop_for(config, backend.host, error, because=(
                f"the first {backend.first_failures} calls all failed with this same error and none has "
                "succeeded: a server fault that retrying will not fix"
            ))
