"""What the engine and the command line need from a run store: the :class:`Store` protocol and the
values that cross it.

The engine depends on this protocol only; :class:`touchstone.store.sqlite.RunStore` (SQLite) and
:class:`touchstone.store.postgres.PostgresStore` (PostgreSQL) implement it, both through the shared
SQL of :class:`touchstone.store.sql.SqlStore`. A store keeps, per run: its configuration and
status, its input rows, one JSON document of the compatible SDK's flat outputs per (row, evaluator)
(what rebuilds ``evaluate()``'s rows), and beside it one typed line per (row, evaluator, metric) --
value, label, status, error kind, passed -- so that trends, comparisons, annotations and alerts are
queries, not JSON decoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from touchstone._exceptions import ErrorBlame, ErrorCategory
from touchstone.errors import ConfigurationError, StoreError
from touchstone.scores import Score, ScoreLine, Status

if TYPE_CHECKING:
    from touchstone.store.comparisons import ComparisonReads
    from touchstone.store.dashboard import DashboardReads
    from touchstone.store.people import PeopleRepository
    from touchstone.store.results import ResultsRepository


class StoreVersionError(ConfigurationError):
    """The store was written by a newer touchstone (its schema version is above the newest this
    version knows); nothing was changed in it."""


class StoreConnectionError(StoreError, ConnectionError):
    """The store's server cannot be reached, refused the login, or dropped the connection (a
    :class:`~touchstone.errors.StoreError` and a :class:`ConnectionError`). The message names the
    store by its URL without the password; nothing was written by the failed operation.
    ``touchstone`` commands exit with status 1 on it."""

    default_category = ErrorCategory.SERVICE_UNAVAILABLE
    default_blame = ErrorBlame.SYSTEM_ERROR


class StoreLocationWarning(UserWarning):
    """The default store location cannot be used; results are kept in memory only."""


@dataclass
class RunInfo:
    """One run as stored: its configuration, status, and (once finished) metrics and summary."""

    id: str
    name: str | None
    started: str
    finished: str | None
    status: str
    config: dict[str, Any]
    metrics: dict[str, Any] | None
    summary: dict[str, Any] | None
    version: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "started": self.started,
            "finished": self.finished,
            "status": self.status,
            "config": self.config,
            "package_version": self.version,
        }


@dataclass
class StoredRow:
    """One input row of a run: where it came from, its data, and the target's output (or error)."""

    idx: int
    source: str | None
    line: int | None
    data: dict[str, Any]
    target: dict[str, Any] | None
    target_error: str | None
    data_json: str | None = field(default=None, compare=False, repr=False)
    """``data`` as the store's JSON text, when it was encoded ahead (the engine has a pool's workers
    do it, so that the store's writing thread is left the database's own work)."""


class ScoreRecord(NamedTuple):
    """What :meth:`Store.put_scores` writes for one row of one evaluator.

    ``outputs`` is the compatible SDK's flat dict of the row, or that dict already JSON-encoded (a
    ``str`` made by :func:`touchstone.store.sqlite.encode_outputs`, so a worker process can encode
    it ahead); ``failed`` whether any score of the row failed; ``usage`` the model calls, tokens and
    cost spent on the row; ``scores`` the typed :class:`~touchstone.scores.Score` objects of the
    row, or their :data:`~touchstone.scores.ScoreLine` encoding (as worker processes send them),
    written to the queryable score columns (empty: only the JSON is written)."""

    idx: int
    outputs: dict[str, Any] | str
    failed: bool
    usage: dict[str, Any] | None
    scores: Sequence[Score] | Sequence[ScoreLine] = ()


def score_lines(scores: Iterable[Score]) -> tuple[ScoreLine, ...]:
    """The :data:`~touchstone.scores.ScoreLine` of each Score: how the queryable columns keep it."""
    lines: list[ScoreLine] = []
    for sc in scores:
        value = sc.value
        if value is not None and type(value) is not float:
            value = float(value)  # numpy scalars, ints, bools: one REAL column
        err = sc.error
        lines.append((  # the ScoreLine fields, in order
            sc.name,
            value,
            sc.label,
            sc.status.value,
            None if err is None else err.kind,
            None if sc.passed is None else int(sc.passed),
        ))
    return tuple(lines)


@dataclass(frozen=True)
class ScoreValue:
    """One metric's typed result on one row, as the queryable score columns keep it."""

    run_id: str
    idx: int
    evaluator: str
    metric: str
    value: float | None
    label: str | None
    status: Status
    error_kind: str | None
    passed: bool | None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK


@runtime_checkable
class Store(Protocol):
    """A run store: runs, their input rows, and their scores (JSON outputs and typed columns).

    Implementations must be safe to share between the threads of one process; each write method is
    one transaction (a crash loses at most the writes in flight)."""

    @property
    def path(self) -> Path | str:
        """Where the store lives, for messages: a file (``:memory:`` when nothing is kept on disk),
        or a server's URL with its password removed."""
        ...

    @property
    def persistent(self) -> bool:
        """False when results are kept in memory only (the default location could not be used)."""
        ...

    def close(self) -> None:
        """Release the connection; the store is not used afterwards."""
        ...

    # repositories: every query beyond the methods below goes through one of these
    @property
    def dashboard(self) -> DashboardReads:
        """The dashboard's read models."""
        ...

    @property
    def comparisons(self) -> ComparisonReads:
        """What comparisons of runs and the monitor read."""
        ...

    @property
    def people(self) -> PeopleRepository:
        """Annotations, feedback and the active-learning queue."""
        ...

    @property
    def results(self) -> ResultsRepository:
        """A run's rows and results as the engine, compare and monitor read them back."""
        ...

    # runs
    def create_run(self, config: dict[str, Any], name: str | None, version: str) -> str:
        """Record a new run with status ``running``; returns its id."""
        ...

    def set_status(self, run_id: str, status: str) -> None:
        """Change a run's status (``running``, ``interrupted``, ``failed``...)."""
        ...

    def finish_run(self, run_id: str, status: str, metrics: dict[str, Any], summary: dict[str, Any]) -> None:
        """Record the end of a run: its final status, metrics and summary."""
        ...

    def get_run(self, run_id: str) -> RunInfo | None:
        """One run, or None when there is no such run."""
        ...

    def list_runs(self, limit: int = 50) -> list[RunInfo]:
        """The most recent runs, newest first."""
        ...

    # rows and scores
    def put_rows(self, run_id: str, rows: Iterable[StoredRow]) -> None:
        """Write (or replace) input rows of a run."""
        ...

    def get_rows(self, run_id: str) -> list[StoredRow]:
        """Every stored input row of a run, by index."""
        ...

    def put_scores(self, run_id: str, evaluator: str, scores: Iterable[ScoreRecord]) -> None:
        """Write (or replace) the results of one evaluator on some rows, in one transaction: the
        JSON outputs of each row and, when given, its typed scores (see :class:`ScoreRecord`)."""
        ...

    def get_scores(self, run_id: str) -> dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any] | None]]:
        """``{(row index, evaluator): (outputs, usage)}`` for every stored result of the run."""
        ...

    def score_keys(self, run_id: str) -> set[tuple[int, str]]:
        """``{(row index, evaluator)}`` of every stored result of the run (nothing decoded)."""
        ...

    def count_scores(self, run_id: str) -> int:
        """How many (row, evaluator) results the run has stored."""
        ...

    def score_values(
        self, run_id: str, evaluator: str | None = None, metric: str | None = None
    ) -> list[ScoreValue]:
        """The typed score columns of a run, optionally of one evaluator and/or one metric, ordered
        by evaluator, row, metric."""
        ...

    # server-side queries (the dashboard, comparisons)
    def fetch_all(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read-only query over the store's tables, as tuples.

        ``sql`` is portable SQL (what SQLite and PostgreSQL both accept) with ``?`` placeholders,
        one per item of ``params``; each backend translates the placeholders to its own. Values come
        back as the backend keeps them (JSON columns as text, ``passed`` as 0/1)."""
        ...

    def execute_many(self, sql: str, rows: Iterable[Sequence[object]]) -> None:
        """Run one write statement (portable SQL with ``?`` placeholders, as :meth:`fetch_all`) once
        per item of ``rows``, in one transaction; nothing when ``rows`` is empty. For the tables
        outside runs (annotations, feedback); runs, rows and scores are written by the methods above."""
        ...
