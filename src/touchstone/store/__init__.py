"""The run store: the :class:`Store` protocol the engine depends on, and its two backends: SQLite
(embedded, the default) and PostgreSQL (a team's shared store, given a ``postgresql://`` URL).

:func:`open_store` is how the engine and the command line get a store from what the user passed (a
store, a path, a URL, or nothing for the default location, ``$TOUCHSTONE_STORE``).
"""

from __future__ import annotations

import os
from typing import TypeAlias

from touchstone.store.base import (
    RunInfo,
    ScoreRecord,
    ScoreValue,
    Store,
    StoreConnectionError,
    StoredRow,
    StoreLocationWarning,
    StoreVersionError,
)
from touchstone.store.postgres import PostgresStore
from touchstone.store.sqlite import RunStore, default_store_path, encode_outputs
from touchstone.store.urls import is_postgres_url, redact_url

__all__ = [
    "PostgresStore",
    "RunInfo",
    "RunStore",
    "ScoreRecord",
    "ScoreValue",
    "Store",
    "StoreConnectionError",
    "StoreLocationWarning",
    "StoreVersionError",
    "StoredRow",
    "default_store_path",
    "encode_outputs",
    "is_postgres_url",
    "open_store",
    "redact_url",
]

StoreSpec: TypeAlias = "Store | str | os.PathLike[str] | None"
"""What :func:`open_store` accepts."""


def open_store(path_or_store: StoreSpec = None) -> Store:
    """A store from what the user gave: a :class:`Store` is returned as it is; a
    ``postgresql://user:password@host:port/database`` URL opens the PostgreSQL store there
    (:class:`~touchstone.store.postgres.PostgresStore`, raising :class:`StoreConnectionError` when it
    cannot be reached); a path (or ``":memory:"``) opens a SQLite store there, raising
    :class:`~touchstone.errors.ConfigurationError` when it cannot be used; ``None`` opens the default
    location (``$TOUCHSTONE_STORE``, a URL or a path, else ``~/.touchstone/runs.db``, which falls
    back to memory with one warning when the home location cannot be used)."""
    if path_or_store is None:
        env = os.environ.get("TOUCHSTONE_STORE")
        if env and is_postgres_url(env):
            path_or_store = env
    if isinstance(path_or_store, (str, os.PathLike)) and is_postgres_url(path_or_store):
        return PostgresStore(str(os.fspath(path_or_store)))
    if path_or_store is None or isinstance(path_or_store, (str, os.PathLike)):
        return RunStore(path_or_store)
    if isinstance(path_or_store, Store):
        return path_or_store
    raise TypeError(f"store must be a Store, a path, a URL or None, not {type(path_or_store).__name__}")
