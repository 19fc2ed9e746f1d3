"""A real PostgreSQL server for tests: ``initdb`` into a temporary folder, ``postgres`` on a free
loopback port (its unix socket in the same folder), password login, stopped at the end of the
session. As root the server runs as the ``postgres`` system user (else ``nobody``): PostgreSQL
refuses to run as root.

Fixtures (imported by ``tests/conftest.py``, so every test folder can use them):

- ``pg_server``: the session's server (:class:`PgServer`).
- ``pg_url``: a fresh, empty database on it for one test, as a ``postgresql://`` URL with a user
  and a password (:data:`PASSWORD`, which tests check never shows).

Without the PostgreSQL binaries the fixtures skip, naming what is missing, unless
``TOUCHSTONE_REQUIRE_POSTGRES`` is set (CI): then they fail.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

USER = "touchstone_test"
PASSWORD = "pw-Xq7-never-shown-93kd"
"""The test server's password: no message, file or table a test reads may contain it."""

_DATABASES = itertools.count()


def find_bindir() -> Path | None:
    """The folder of ``initdb`` and ``postgres``: ``$TOUCHSTONE_PG_BINDIR``, the newest
    ``/usr/lib/postgresql/*/bin``, or the PATH."""
    env = os.environ.get("TOUCHSTONE_PG_BINDIR")
    candidates = [Path(env)] if env else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One PostgreSQL server in a temporary folder."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="touchstone-pg-"))
        self.data = self.root / "data"
        self._run_as: dict[str, Any] = {}
        if os.geteuid() == 0:  # the server refuses to run as root: hand the folder to `postgres`
            import pwd

            try:
                entry = pwd.getpwnam("postgres")
            except KeyError:  # PostgreSQL installed without its system user
                entry = pwd.getpwnam("nobody")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self._run_as = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PgServer:
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._run_as:
            os.chown(pwfile, self._run_as["user"], self._run_as["group"])
        subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
             "--auth=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"],
            check=True, capture_output=True, **self._run_as,
        )
        pwfile.unlink()
        self._log = open(self.root / "server.log", "wb")  # noqa: SIM115 (kept open while it runs)
        self._proc = subprocess.Popen(
            [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-h", "127.0.0.1", "-k", str(self.root),
             # a test server: durability is not what is tested, speed is welcome
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=100"],
            stdout=self._log, stderr=subprocess.STDOUT, **self._run_as,
        )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {(self.root / 'server.log').read_text()[-2000:]}")
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def url(self, database: str, password: str | None = PASSWORD) -> str:
        """A URL of ``database`` on this server, with the test user (and its password unless None)."""
        auth = USER if password is None else f"{USER}:{password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database's name."""
        import psycopg

        name = f"t{os.getpid()}_{next(_DATABASES)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if hasattr(self, "_log"):
            self._log.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL server (started on first use)."""
    bindir = find_bindir()
    if bindir is None:
        reason = "PostgreSQL server binaries (initdb, postgres) not found in /usr/lib/postgresql/*/bin, PATH"
        if os.environ.get("TOUCHSTONE_REQUIRE_POSTGRES"):
            pytest.fail(reason + " and TOUCHSTONE_REQUIRE_POSTGRES is set")
        pytest.skip(reason + " (install postgresql, or set TOUCHSTONE_PG_BINDIR)")
    server = PgServer(bindir)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh empty database on the session's server, as a URL with user and password."""
    return pg_server.url(pg_server.create_database())
