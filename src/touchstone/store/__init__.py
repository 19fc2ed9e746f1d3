"""The run store: the :class:`Store` protocol the engine depends on, and its SQLite implementation.

:func:`open_store` is how the engine gets a store from what the user passed (a store, a path, or
nothing for the default location).
"""

from __future__ import annotations

import os
from typing import TypeAlias

from touchstone.store.base import (
    PutScoresItem,
    RunInfo,
    ScoreRecord,
    ScoreValue,
    Store,
    StoredRow,
    StoreLocationWarning,
    StoreVersionError,
)
from touchstone.store.sqlite import RunStore, default_store_path, encode_outputs

__all__ = [
    "PutScoresItem",
    "RunInfo",
    "RunStore",
    "ScoreRecord",
    "ScoreValue",
    "Store",
    "StoreLocationWarning",
    "StoreVersionError",
    "StoredRow",
    "default_store_path",
    "encode_outputs",
    "open_store",
]

StoreSpec: TypeAlias = "Store | str | os.PathLike[str] | None"
"""What :func:`open_store` accepts."""


def open_store(path_or_store: StoreSpec = None) -> Store:
    """A store from what the user gave: a :class:`Store` is returned as it is; a path (or
    ``":memory:"``) opens a SQLite store there, raising :class:`~touchstone.errors.ConfigurationError`
    when it cannot be used; ``None`` opens the default location (``$TOUCHSTONE_STORE``, else
    ``~/.touchstone/runs.db``), which falls back to memory with one warning when the home location
    cannot be used."""
    if path_or_store is None or isinstance(path_or_store, (str, os.PathLike)):
        return RunStore(path_or_store)
    if isinstance(path_or_store, Store):
        return path_or_store
    raise TypeError(f"store must be a Store, a path or None, not {type(path_or_store).__name__}")
