"""The judge response cache: a SQLite file (WAL) shared by runs and processes.

Keys are SHA-256 hashes of the provider and endpoint, a salted digest of the credential (so a reply
got with one key is not served to another), the model, the messages and every generation parameter,
so a different prompt, model or setting is a different entry; API keys themselves never enter a key
or a value. An entry is written as soon as its reply arrives, before the score that uses it is
stored, so a run that crashes does not pay again for calls that completed.

Default location: ``$TOUCHSTONE_CACHE`` if set, else ``~/.touchstone/cache.db``. When that home
location cannot be used (no writable home directory, ``~/.touchstone`` is a file...), the cache warns
once and lives in memory for the process (calls repeated within it are still answered from it, no
later run finds them); a path given explicitly (``$TOUCHSTONE_CACHE`` or a configured
``cache_path``) that cannot be used raises :class:`~touchstone.errors.ConfigurationError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from touchstone.errors import ConfigurationError
from touchstone.errors import describe_os_error as _reason
from touchstone.judges.config import default_cache_path
from touchstone.judges.wire import messages_json
from touchstone.store.judge_cache import MEMORY, JudgeCacheError, JudgeCacheFile

CACHE_VERSION = 1
"""Part of every key: raising it retires every entry written before."""


def cache_key(payload: Any) -> str:
    """Stable hash of a JSON-able payload (keys sorted, no whitespace)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chat_cache_key(payload: dict[str, Any]) -> str:
    """:func:`cache_key` of a chat call's payload, its ``messages`` hashed as their JSON text from
    :func:`touchstone.judges.wire.messages_json` (a long rubric is encoded once per run, not once per
    call; the key still covers every character of every message)."""
    rest = {k: v for k, v in payload.items() if k != "messages"}
    head = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(head.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(messages_json(payload.get("messages") or []).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def chat_key(identity: str, model: str, request: Mapping[str, Any]) -> str:
    """The key of one chat call: the provider's cache identity (endpoint, credential digest), the
    model and the whole provider-neutral request."""
    payload = {"v": CACHE_VERSION, "kind": "chat", "provider": identity, "model": model, **request}
    return chat_cache_key(payload)


def text_key(kind: str, identity: str, model: str, text: str) -> str:
    """The key of one text's vector (``kind``: ``embed`` or ``prompt_logprobs``)."""
    return cache_key({"v": CACHE_VERSION, "kind": kind, "provider": identity, "model": model, "text": text})


_WARNED: set[str] = set()
"""Default locations already warned about in this process (the warning is given once per place)."""


class CacheLocationWarning(UserWarning):
    """The default cache location cannot be used; replies are cached in memory only."""


class CacheFailureWarning(UserWarning):
    """The cache failed while in use (damaged, full disk): the run goes on without it."""


_BROKEN_WARNED: set[str] = set()


def _home_default() -> Path | None:
    """The default location when it comes from the home directory (None when
    ``$TOUCHSTONE_CACHE`` names it: then it is explicit)."""
    if os.environ.get("TOUCHSTONE_CACHE"):
        return None
    return default_cache_path()


class JudgeCache:
    """Get and put judge replies and embedding vectors. Safe to share between threads.

    ``path``: the SQLite file; ``":memory:"`` for a cache of this process only; ``None`` (or the
    value of :func:`~touchstone.judges.config.default_cache_path` when it points into the home
    directory) for the default location, which falls back to memory with one warning when it cannot
    be used. Any other path that cannot be used raises
    :class:`~touchstone.errors.ConfigurationError` naming it. A file found damaged (or failing while
    in use: full disk, lost permission) is set aside with one warning: the cache is an optimisation,
    a row never fails because of it."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.broken = False
        """The cache failed once and is no longer read or written (see :meth:`_disable`)."""
        home = _home_default()
        if path is None:
            path = default_cache_path()
        self.path = Path(path)
        try:
            self.path = MEMORY if str(path) == ":memory:" else Path(path).expanduser()
            self._file = JudgeCacheFile(self.path)
        except JudgeCacheError as exc:
            if not exc.damaged:
                why = _reason(exc.cause)
                raise ConfigurationError(f"cannot use the judge cache {self.path}: {why}") from None
            self._disable(exc.cause)
            self.path = MEMORY
            self._file = JudgeCacheFile(MEMORY)
        except (OSError, RuntimeError) as exc:  # RuntimeError: no home directory
            if home is None or Path(path) != home:
                raise ConfigurationError(f"cannot use the judge cache {self.path}: {_reason(exc)}") from exc
            where = str(self.path)
            if where not in _WARNED:
                _WARNED.add(where)
                warnings.warn(
                    f"cannot use the default judge cache {where} ({_reason(exc)}); judge replies are "
                    "cached in memory only for this process (set TOUCHSTONE_CACHE to keep them)",
                    CacheLocationWarning,
                    stacklevel=2,
                )
            self.path = MEMORY
            self._file = JudgeCacheFile(MEMORY)

    @property
    def persistent(self) -> bool:
        """False when the cache lives in memory only."""
        return self.path != MEMORY

    def close(self) -> None:
        """Close the file (a later get or put finds the cache broken and warns)."""
        self._file.close()

    def _disable(self, exc: BaseException) -> None:
        """The cache failed (damaged file, full disk, lost permission): warn once and go on without it."""
        self.broken = True
        where = str(self.path)
        if where not in _BROKEN_WARNED:
            _BROKEN_WARNED.add(where)
            warnings.warn(
                f"the judge cache {where} cannot be used ({_reason(exc)}); going on without it "
                "(judge calls are made as if nothing were cached)",
                CacheFailureWarning,
                stacklevel=3,
            )

    def get_chat(self, key: str) -> dict[str, Any] | None:
        """The stored reply under ``key`` (see :func:`touchstone.judges.openai_replies.stored_reply`)."""
        if self.broken:
            return None
        try:
            text = self._file.get_chat(key)
            return None if text is None else dict(json.loads(text))
        except JudgeCacheError as exc:
            self._disable(exc.cause)
        except (ValueError, TypeError) as exc:  # not JSON of a reply: the file was tampered with
            self._disable(exc)
        return None

    def put_chat(self, key: str, model: str, reply: dict[str, Any]) -> None:
        if self.broken:
            return
        try:
            self._file.put_chat(key, model, json.dumps(reply, ensure_ascii=False, separators=(",", ":")))
        except JudgeCacheError as exc:
            self._disable(exc.cause)

    def get_embeddings(self, keys: Sequence[str]) -> dict[str, list[float]]:
        if self.broken:
            return {}
        try:
            return self._file.get_vectors(keys)
        except JudgeCacheError as exc:
            self._disable(exc.cause)
            return {}

    def put_embeddings(self, model: str, items: Sequence[tuple[str, Sequence[float]]]) -> None:
        if self.broken:
            return
        try:
            self._file.put_vectors(model, items)
        except JudgeCacheError as exc:
            self._disable(exc.cause)

    def count(self) -> int:
        """Entries held (chat replies and vectors)."""
        return self._file.count()
