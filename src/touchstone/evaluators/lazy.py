"""Lazily loaded model state that is never pickled (so process-pool workers load their own copy)."""

from __future__ import annotations

import threading
from typing import Any


class LazyModelState:
    """Keeps loaded objects in ``self._lazy`` behind ``self._lazy_lock``; both are dropped when the
    object is pickled and recreated empty when it is unpickled."""

    _lazy: dict[str, Any]
    _lazy_lock: threading.Lock

    def _init_lazy(self) -> None:
        self._lazy = {}
        self._lazy_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_lazy")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_lazy()
