"""Negotiating with a server what it takes: the structured-output mode and the optional parameters.

The structured-output mode is negotiated once per backend (server and key, see
:class:`~touchstone.judges.providers.base.StructuredOutput`): until a reply decides it, one call with
a schema is in flight and the others wait, so a server that rejects ``json_schema`` costs one
rejected request per mode, not one per row. A refused optional parameter (``logprobs``, ``seed``...)
is left out of that backend's later requests. Both are recorded per model as the session's
``fallbacks``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from touchstone.judges.config import ModelConfiguration
from touchstone.judges.errors import UnsupportedParameter
from touchstone.judges.providers.base import Backend

_T = TypeVar("_T")


class Negotiation:
    """What servers refused, per model name (:attr:`fallbacks`), and the structured-output gate."""

    __slots__ = ("fallbacks",)

    def __init__(self) -> None:
        self.fallbacks: dict[str, list[str]] = {}

    async def structured(self, backend: Backend, call: Callable[[], Awaitable[_T]]) -> _T:
        """``await call()`` for a request with a JSON schema: at once when the backend's mode is
        decided, else when this call may probe the mode (the others wait for the probe)."""
        structured = backend.structured
        if structured.open:
            return await call()
        if "response_format" in backend.unsupported:  # known up front
            structured.fix("text")
            return await call()
        probing = await structured.acquire()
        try:
            return await call()
        finally:
            if probing:
                structured.release()

    def on_refusal(
        self, config: ModelConfiguration, backend: Backend
    ) -> Callable[[UnsupportedParameter], bool]:
        """The retry loop's handler for one call's refused parameters: True (send again) after
        leaving the parameter out or moving to the next structured-output mode; False when the same
        refusal comes back although it was left out (the server means something else)."""
        refused: list[tuple[str, str | None]] = []

        def without(error: UnsupportedParameter) -> bool:
            seen = (error.param, error.value)
            if seen in refused:
                return False
            refused.append(seen)
            if error.param == "response_format":
                self._downgrade(backend, config, error.value or backend.structured.mode)
            elif error.param not in backend.unsupported:
                self._drop_param(backend, config, error.param)
            return bool(error.param)

        return without

    def _downgrade(self, backend: Backend, config: ModelConfiguration, rejected: str) -> None:
        """The server refused structured-output mode ``rejected``: the next one (recorded once)."""
        if backend.structured.downgrade(rejected) == "text" and "response_format" not in backend.unsupported:
            backend.unsupported.add("response_format")
            self.fallbacks.setdefault(config.model_name, []).append("response_format")

    def _drop_param(self, backend: Backend, config: ModelConfiguration, param: str) -> None:
        backend.unsupported.add(param)
        if param == "logprobs":
            backend.unsupported.add("top_logprobs")
        self.fallbacks.setdefault(config.model_name, []).append(param)
