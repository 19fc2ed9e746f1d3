"""A session's abort state: once a call fails in a way every call would (bad key, unknown model,
exhausted quota, a server fault every first call meets), every later call raises the same
:class:`~touchstone.errors.RunAbortedError` at once, without a request."""

from __future__ import annotations

from typing import NoReturn

from touchstone.errors import RunAbortedError
from touchstone.judges.config import ModelConfiguration
from touchstone.judges.errors import ProviderError, redact


class AbortState:
    """Whether the run was stopped, and why (:attr:`error`)."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: RunAbortedError | None = None

    def check(self) -> None:
        """Raise the run's abort error when it was stopped."""
        if self.error is not None:
            raise RunAbortedError(str(self.error))

    def raise_copy(self) -> NoReturn:
        """Raise a fresh copy of the abort error (each call its own traceback)."""
        assert self.error is not None
        raise RunAbortedError(str(self.error))

    def stop(self, message: str) -> NoReturn:
        """Stop the run with ``message`` (the first reason given stays) and raise."""
        if self.error is None:
            self.error = RunAbortedError(message)
        self.raise_copy()

    def stop_for(
        self, config: ModelConfiguration, host: str, error: ProviderError, *, because: str | None = None
    ) -> NoReturn:
        """Stop the run because of a provider's ``error`` (secrets redacted) and raise."""
        if self.error is None:
            text = redact(error.message, [config.resolved_api_key()])
            why = because or "every remaining call would fail the same way"
            self.error = RunAbortedError(
                f"judge model {config.model_name!r} at {host}: {text}. The run was stopped: {why}."
            )
        self.raise_copy()
