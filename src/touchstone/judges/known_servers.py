"""What earlier runs learnt about judge servers, so a later run need not learn it again.

A new backend knows nothing of its server: its first request goes alone (the *contact* gate, so a
server that rejects everything costs a few calls, not one per row in flight), and the first request
with a JSON schema negotiates the structured-output mode. Both cost one round trip at the start of
every run; on a short run against a fast server that is several percent of the run (on the 1,000-row
safety benchmark, 0.2 s of about 3.5 s), and against a real model one full judge reply.

When a run's session closes, what it learnt about each server it reached (that the server answers,
the structured-output mode it takes, the optional parameters it refused) is kept for
:data:`REMEMBER_FOR` seconds in two places:

- in this process, keyed by the backend's session key (endpoint, model, a digest of the key), and
- in a small JSON file shared by the processes of this user (:func:`servers_path`: ``$TOUCHSTONE_SERVERS``,
  else ``~/.touchstone/servers.json``; ``TOUCHSTONE_SERVERS=off`` keeps nothing on disk), keyed by
  the configuration's cache identity and model: provider, host and path without any ``user:password@``,
  a salted digest of the credential (the judge cache's own key), never a secret. A file that cannot
  be read or written is passed over in silence: the run then only loses the head start.

A later backend for the same server starts from what was kept: no contact probe, the mode already
decided. Nothing is trusted blindly: a remembered server that now fails every call is still stopped
after its first identical failures (the session counts those until a success *in this run*, not from
memory; the first wave of requests is then sent at once, so a remembered server that has started to
refuse everything sees up to ``concurrency`` calls instead of one), and a remembered mode the server
now rejects is downgraded as usual.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from touchstone.judges.providers.base import Backend

REMEMBER_FOR = 3600.0
"""Seconds a server's traits are reused after the run that learnt them ended."""
MAX_SERVERS_ON_DISK = 256
"""Servers kept in the file; the oldest go first."""
_FILE_VERSION = 1


@dataclass(frozen=True)
class ServerTraits:
    """What one run learnt about a server: its structured-output mode (None: no schema call decided
    one), the optional parameters it refused, and when (``time.time()``)."""

    structured: str | None
    unsupported: frozenset[str]
    learnt_at: float
    source: str = "process"
    """Where a recalled server came from: ``process`` (this process's memory) or ``file`` (the
    shared file: a run of another process)."""

    def fresh(self) -> bool:
        return 0.0 <= time.time() - self.learnt_at <= REMEMBER_FOR


_KNOWN: dict[str, ServerTraits] = {}
_WRITTEN: dict[str, ServerTraits] = {}
"""What this process last wrote to the shared file, per server: a session that closes after every
standalone evaluator call must not rewrite the file each time with the same traits."""
REWRITE_AFTER = 600.0
"""Seconds after which unchanged traits are written again (so the file's entry stays fresh)."""
_LOCK = threading.Lock()


def servers_path() -> Path | None:
    """The file shared between processes, or None when ``$TOUCHSTONE_SERVERS`` is ``off`` (or no home
    directory exists)."""
    env = os.environ.get("TOUCHSTONE_SERVERS")
    if env is not None and env.strip().lower() in ("off", "none", "0", "false", ""):
        return None
    if env:
        return Path(env).expanduser()
    try:
        return Path.home() / ".touchstone" / "servers.json"
    except RuntimeError:
        return None


def remember(key: str, backend: Backend, disk_key: str | None = None) -> None:
    """Keep what ``backend`` learnt, when its server answered at least once in this run: in this
    process under ``key``, and in the shared file under ``disk_key`` when given."""
    if not backend.confirmed or not backend.learns:
        return
    structured = backend.structured.mode if backend.structured.decided else None
    traits = ServerTraits(structured, frozenset(backend.unsupported), time.time())
    with _LOCK:
        _KNOWN[key] = traits
        if disk_key is not None and not _written_lately(disk_key, traits):
            _write(disk_key, traits)
            _WRITTEN[disk_key] = traits


def _written_lately(disk_key: str, traits: ServerTraits) -> bool:
    """Whether this process wrote the same traits for the server less than :data:`REWRITE_AFTER` ago."""
    last = _WRITTEN.get(disk_key)
    return (
        last is not None and (last.structured, last.unsupported) == (traits.structured, traits.unsupported)
        and 0.0 <= traits.learnt_at - last.learnt_at < REWRITE_AFTER
    )


def recall(key: str, backend: Backend, disk_key: str | None = None) -> ServerTraits | None:
    """Start ``backend`` from what an earlier run learnt about its server (when recent enough): contact
    open, the structured-output mode decided, refused parameters left out. Looks in this process,
    then in the shared file (under ``disk_key``). Returns the traits used, or None."""
    if not backend.learns:
        return None
    with _LOCK:
        traits = _KNOWN.get(key)
        if traits is not None and not traits.fresh():
            del _KNOWN[key]
            traits = None
        if traits is None and disk_key is not None:
            traits = _read().get(disk_key)
            if traits is not None and not traits.fresh():
                traits = None
    if traits is None:
        return None
    backend.contact.open = True
    if traits.structured is not None:
        backend.structured.fix(traits.structured)
    backend.unsupported.update(traits.unsupported)
    return traits


def forget_all(*, disk: bool = False) -> None:
    """Forget every server in this process (tests start each from a process's first run); ``disk``:
    the shared file's too (a server never met)."""
    with _LOCK:
        _KNOWN.clear()
        _WRITTEN.clear()
        path = servers_path()
        if disk and path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def _read() -> dict[str, ServerTraits]:
    """The shared file's servers; nothing when it is missing, unreadable or not ours."""
    path = servers_path()
    if path is None:
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        entries = doc["servers"] if doc.get("version") == _FILE_VERSION else {}
        return {str(k): _traits(v) for k, v in entries.items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _traits(entry: Any) -> ServerTraits:
    structured = entry.get("structured")
    return ServerTraits(
        None if structured is None else str(structured),
        frozenset(str(p) for p in entry.get("unsupported", [])),
        float(entry["learnt_at"]),
        "file",
    )


def _write(disk_key: str, traits: ServerTraits) -> None:
    """Add (or replace) one server in the shared file: read, merge, drop what is stale, write a new
    file and move it into place (a reader never sees half a file; of two writers at once, the later
    wins, which loses at most a head start)."""
    path = servers_path()
    if path is None:
        return
    known = {k: v for k, v in _read().items() if v.fresh()}
    known[disk_key] = traits
    newest = sorted(known.items(), key=lambda kv: kv[1].learnt_at)[-MAX_SERVERS_ON_DISK:]
    doc = {"version": _FILE_VERSION, "servers": {
        k: {"structured": v.structured, "unsupported": sorted(v.unsupported), "learnt_at": v.learnt_at}
        for k, v in newest
    }}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".servers-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return
