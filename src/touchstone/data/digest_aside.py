"""The data digest of rows held in memory, computed in a forked child while the parent checks them.

Loading a list of dicts (or a DataFrame) for a run has three steps of about equal cost: the values
walked for what no file or store can hold, the evaluators' inputs validated, and the rows' digest
(:func:`~touchstone.data.streaming.data_digest`: every row as sorted-key JSON, hashed; what a resume
compares). The digest depends on nothing the checks find, so on a machine with a spare core it is
computed in a child process forked once the rows exist: the child reads the rows it inherited (no copy
is sent) and writes back 64 hex digits; the parent checks the rows meanwhile. The digest is the same
bytes hashed the same way, only elsewhere.

The child is forked only where that is safe and worth it: a ``fork`` platform, at least two usable
cores, a process with no other thread (a fork copies one thread, and a lock another thread held would
stay locked in the child), and between :data:`ASIDE_MIN_ROWS` and :data:`ASIDE_MAX_ROWS` rows (the
child's pages are shared until it touches them; reading every row touches them, so a very large
in-memory input would briefly need its memory twice). Otherwise, and whenever the child gives no
answer (killed, out of memory), the digest is computed in this process, as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Sequence

from touchstone.data.loaders import Record

ASIDE_MIN_ROWS = 5_000
"""Fewer rows are hashed in place: their digest costs less than starting a child."""
ASIDE_MAX_ROWS = 100_000
"""More rows are hashed in place, so a large in-memory input is never held twice."""

Digest = Callable[[Sequence[Sequence[Record]]], str]


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _single_threaded() -> bool:
    return threading.active_count() == 1


def can_fork_aside(n_rows: int) -> bool:
    """Whether the digest of ``n_rows`` in-memory rows is computed in a forked child."""
    return (
        ASIDE_MIN_ROWS <= n_rows <= ASIDE_MAX_ROWS
        and hasattr(os, "fork")
        and _usable_cpus() >= 2
        and _single_threaded()
    )


class PendingDigest:
    """The digest of ``records``, being computed (in a child when :func:`can_fork_aside`, else at
    :meth:`result`). Call :meth:`result` once, or :meth:`cancel` when the rows are refused."""

    def __init__(self, records: Sequence[Record], digest: Digest) -> None:
        self._records = records
        self._digest = digest
        self._pid = 0
        self._read = -1
        if can_fork_aside(len(records)):
            self._fork()

    def _fork(self) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: hash, answer, leave without running the parent's exit handlers
            code = 1
            try:
                os.close(read)
                os.write(write, self._digest([self._records]).encode("ascii"))
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self._pid, self._read = pid, read

    @property
    def forked(self) -> bool:
        """True while a child is computing the digest."""
        return self._pid != 0

    def result(self) -> str:
        """The digest: the child's answer, or computed here when there is no child or it gave none."""
        if self._pid:
            answer = self._collect()
            if len(answer) == 64:
                return answer
        return self._digest([self._records])

    def _collect(self) -> str:
        chunks = []
        try:
            while chunk := os.read(self._read, 128):
                chunks.append(chunk)
        except BaseException:  # e.g. Ctrl-C while waiting: the child is not waited for
            self._reap(kill=True)
            raise
        self._reap(kill=False)
        return b"".join(chunks).decode("ascii", "replace")

    def cancel(self) -> None:
        """Stop the child, if any (the rows were refused, or the run stopped)."""
        if self._pid:
            self._reap(kill=True)

    def _reap(self, *, kill: bool) -> None:
        pid, self._pid = self._pid, 0
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(self._read)
        self._read = -1
