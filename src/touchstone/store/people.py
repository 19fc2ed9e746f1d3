"""The store's repository for annotations, feedback and the active-learning queue (the
people-in-the-loop tables), and the feedback fragments other reads join on.

Every query text lives here (portable SQL with ``?`` placeholders; what differs between SQLite and
PostgreSQL -- reading the interaction id out of a row's JSON -- is written here for each); callers
outside ``store/`` use the typed methods of :class:`PeopleRepository` and the records below only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from touchstone.errors import InputValidationError

if TYPE_CHECKING:
    from touchstone.store.sql import SqlStore

# ---------------------------------------------------------------------- the feedback table's words
EXPLICIT_KINDS = ("thumbs_up", "thumbs_down", "rating", "escalation", "error_report")
IMPLICIT_KINDS = ("session_length", "return_visit", "task_completion", "abandonment")
FEEDBACK_KINDS = EXPLICIT_KINDS + IMPLICIT_KINDS
"""Every kind of event the ``feedback`` table holds."""
FAILURE_KINDS = frozenset({"thumbs_down", "escalation", "error_report", "abandonment"})
"""Kinds that say the interaction went wrong for the user (what the active-learning queue ranks)."""
ID_COLUMNS = ("interaction_id", "id")
"""The input columns that name a row's interaction, first found first."""
ROW_FILTERS = ("any", "none", "failure", *FEEDBACK_KINDS)
"""What a run's rows can be filtered by (:func:`row_filter_sql`): any feedback, none, a
user-reported failure, or at least one event of a kind."""


# ---------------------------------------------------------------------- records
@dataclass(frozen=True)
class Task:
    """An annotation task: its id, name, kind (``likert`` or ``pairwise``), dimensions, where its items
    came from, and when it was made."""

    id: str
    name: str | None
    kind: str
    dimensions: tuple[str, ...]
    source: str | None
    created: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "kind": self.kind, "dimensions": list(self.dimensions),
                "source": self.source, "created": self.created}


@dataclass(frozen=True)
class Item:
    """One item of a task: its number in the task, the row it came from, and its content
    (``query``, ``context``, ``responses`` as ``[{"system": ..., "text": ...}]``)."""

    item: int
    run_id: str | None
    idx: int | None
    row_key: str | None
    data: dict[str, Any]


class TaskCounts(NamedTuple):
    """A task with its number of items and of annotators who answered."""

    task: Task
    items: int
    annotators: int


class Answer(NamedTuple):
    """One stored answer: a number for Likert, ``a`` / ``b`` / ``tie`` (stored terms) for pairwise."""

    item: int
    annotator: str
    dimension: str
    value: float | str | None


class AnswerLine(NamedTuple):
    """One answer as written: Likert answers fill ``value``, pairwise ones ``choice``."""

    task_id: str
    item: int
    annotator: str
    dimension: str
    value: float | None
    choice: str | None
    created: str


class FeedbackFields(Protocol):
    """What a feedback event written to the store has (the people module's validated events)."""

    @property
    def interaction_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def text(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def created(self) -> str: ...


class StoredFeedback(NamedTuple):
    """One feedback event as stored (fields in the order of the people module's events)."""

    interaction_id: str
    kind: str
    value: float | None
    text: str | None
    session_id: str | None
    user_id: str | None
    created: str


class KindCount(NamedTuple):
    """The events of one kind in one time window: how many, and the mean of their values."""

    start: str
    kind: str
    events: int
    mean: float | None


class WindowTotals(NamedTuple):
    """One time window's completed tasks and distinct interactions."""

    start: str
    completed: int
    interactions: int


class WindowInteraction(NamedTuple):
    """An interaction that got feedback in the time window starting at ``start``."""

    start: str
    interaction_id: str


# ---------------------------------------------------------------------- the repository
@runtime_checkable
class PeopleRepository(Protocol):
    """What callers outside the store may ask of it: annotations, feedback and the queue."""

    def add_task(self, task: Task, items: Sequence[Item]) -> None:
        """Write a new task and its items, in one transaction."""
        ...

    def task(self, task_id: str) -> Task | None:
        """One task, or None."""
        ...

    def tasks(self) -> list[TaskCounts]:
        """Every task, newest first (ties by id), with its counts."""
        ...

    def items(self, task_id: str) -> list[Item]:
        """A task's items, by number."""
        ...

    def item_count(self, task_id: str) -> int:
        """How many items a task has."""
        ...

    def answers(self, task_id: str, annotator: str | None = None) -> list[Answer]:
        """A task's answers (of one annotator, or all), by item, annotator, dimension."""
        ...

    def save_answers(self, lines: Iterable[AnswerLine]) -> None:
        """Write answers in one transaction, each replacing the same annotator's earlier answer to
        the same item and dimension."""
        ...

    def row_inputs(self, run_id: str) -> dict[int, str]:
        """Each row's input JSON text as stored (decoded by the caller, which decides what a text it
        cannot read means), by row index in index order."""
        ...

    def row_indices(self, run_id: str) -> list[int]:
        """The index of every stored row of a run."""
        ...

    def outputs_by_row(self, run_id: str) -> dict[tuple[int, str], dict[str, Any]]:
        """``{(row index, evaluator): flat outputs}`` of a run; results whose outputs are not a JSON
        object are left out."""
        ...

    def add_feedback(self, events: Iterable[FeedbackFields], received: str) -> None:
        """Write feedback events, received at ``received``, in one transaction."""
        ...

    def feedback(self, interaction_ids: Sequence[str] | None = None) -> list[StoredFeedback]:
        """The stored events (of some interactions, or all), oldest first (ties in arrival order)."""
        ...

    def feedback_by_kind(self, prefix: int, since: str | None, until: str | None) -> list[KindCount]:
        """Events per time window and kind, windows in order; a window is the first ``prefix``
        characters of ``created``; ``since`` and ``until`` bound it (ISO 8601 prefixes, inclusive)."""
        ...

    def feedback_window_totals(self, prefix: int, since: str | None, until: str | None) -> list[WindowTotals]:
        """Per time window (as :meth:`feedback_by_kind`): completed tasks and distinct interactions."""
        ...

    def feedback_interactions(
        self, prefix: int, since: str | None, until: str | None
    ) -> list[WindowInteraction]:
        """Each (time window, interaction) that has feedback (windows as :meth:`feedback_by_kind`)."""
        ...


_TASK_COLUMNS = "id, name, kind, dimensions, source, created"
_INSERT_TASK = f"INSERT INTO annotation_tasks ({_TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
_INSERT_ITEM = ("INSERT INTO annotation_items (task_id, item, run_id, idx, row_key, data) "
                "VALUES (?, ?, ?, ?, ?, ?)")
# ON CONFLICT ... DO UPDATE, not INSERT OR REPLACE: both backends read it the same way
_UPSERT_ANSWER = ("INSERT INTO annotations (task_id, item, annotator, dimension, value, choice, created) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, item, annotator, dimension) "
                  "DO UPDATE SET value = excluded.value, choice = excluded.choice, "
                  "created = excluded.created")
_INSERT_FEEDBACK = ("INSERT INTO feedback (interaction_id, kind, value, text, session_id, user_id, created, "
                    "received) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_FEEDBACK_SELECT = "SELECT interaction_id, kind, value, text, session_id, user_id, created FROM feedback"


def _task(row: Sequence[Any]) -> Task:
    return Task(row[0], row[1], row[2], tuple(json.loads(row[3])), row[4], row[5])


def _time_range(since: str | None, until: str | None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if since:
        clauses.append("created >= ?")
        params.append(since)
    if until:
        clauses.append("substr(created, 1, ?) <= ?")
        params.extend([len(until), until])
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


class SqlPeopleRepository:
    """:class:`PeopleRepository` over a SQL store (SQLite or PostgreSQL)."""

    def __init__(self, sql: SqlStore) -> None:
        self._sql = sql

    def _write(self, statement: str, lines: Sequence[Sequence[object]]) -> None:
        if lines:
            with self._sql._tx() as c:
                c.executemany(self._sql.dialect.sql(statement), lines)

    # ------------------------------------------------------------------ annotations
    def add_task(self, task: Task, items: Sequence[Item]) -> None:
        """Write a new task and its items, in one transaction."""
        lines = [(task.id, i.item, i.run_id, i.idx, i.row_key, json.dumps(i.data, ensure_ascii=False))
                 for i in items]
        head = (task.id, task.name, task.kind, json.dumps(list(task.dimensions)), task.source, task.created)
        with self._sql._tx() as c:
            self._sql._execute(c, _INSERT_TASK, head)
            if lines:
                c.executemany(self._sql.dialect.sql(_INSERT_ITEM), lines)

    def task(self, task_id: str) -> Task | None:
        """One task, or None."""
        found = self._sql._query(f"SELECT {_TASK_COLUMNS} FROM annotation_tasks WHERE id = ?", (task_id,))
        return _task(found[0]) if found else None

    def tasks(self) -> list[TaskCounts]:
        """Every task, newest first (ties by id), with its counts."""
        counts = {str(t): int(n) for t, n in self._sql._query(
            "SELECT task_id, COUNT(*) FROM annotation_items GROUP BY task_id")}
        people = {str(t): int(n) for t, n in self._sql._query(
            "SELECT task_id, COUNT(DISTINCT annotator) FROM annotations GROUP BY task_id")}
        tasks = [_task(r) for r in self._sql._query(
            f"SELECT {_TASK_COLUMNS} FROM annotation_tasks ORDER BY created DESC, id")]
        return [TaskCounts(t, counts.get(t.id, 0), people.get(t.id, 0)) for t in tasks]

    def items(self, task_id: str) -> list[Item]:
        """A task's items, by number."""
        return [Item(int(r[0]), r[1], None if r[2] is None else int(r[2]), r[3], json.loads(r[4]))
                for r in self._sql._query("SELECT item, run_id, idx, row_key, data FROM annotation_items "
                                          "WHERE task_id = ? ORDER BY item", (task_id,))]

    def item_count(self, task_id: str) -> int:
        """How many items a task has."""
        return int(self._sql._query(
            "SELECT COUNT(*) FROM annotation_items WHERE task_id = ?", (task_id,))[0][0])

    def answers(self, task_id: str, annotator: str | None = None) -> list[Answer]:
        """A task's answers (of one annotator, or all), by item, annotator, dimension."""
        sql = "SELECT item, annotator, dimension, value, choice FROM annotations WHERE task_id = ?"
        params: list[object] = [task_id]
        if annotator is not None:
            sql += " AND annotator = ?"
            params.append(annotator)
        return [Answer(int(i), str(a), str(d), c if c is not None else v)
                for i, a, d, v, c in self._sql._query(sql + " ORDER BY item, annotator, dimension", params)]

    def save_answers(self, lines: Iterable[AnswerLine]) -> None:
        """Write answers in one transaction (each replaces the annotator's earlier one)."""
        self._write(_UPSERT_ANSWER, list(lines))

    # ------------------------------------------------------------------ a run's rows and results
    def row_inputs(self, run_id: str) -> dict[int, str]:
        """Each row's input JSON text as stored, by row index in index order."""
        return {int(idx): data for idx, data in self._sql._query(
            "SELECT idx, data FROM rows WHERE run_id = ? ORDER BY idx", (run_id,))}

    def row_indices(self, run_id: str) -> list[int]:
        """The index of every stored row of a run."""
        return [int(r[0]) for r in self._sql._query("SELECT idx FROM rows WHERE run_id = ?", (run_id,))]

    def outputs_by_row(self, run_id: str) -> dict[tuple[int, str], dict[str, Any]]:
        """``{(row index, evaluator): flat outputs}``; outputs that are not a JSON object are left out."""
        out: dict[tuple[int, str], dict[str, Any]] = {}
        for idx, evaluator, outputs in self._sql._query(
            "SELECT idx, evaluator, outputs FROM scores WHERE run_id = ?", (run_id,)
        ):
            try:
                decoded = json.loads(outputs)
            except (TypeError, ValueError):
                continue
            if isinstance(decoded, dict):
                out[(int(idx), str(evaluator))] = decoded
        return out

    # ------------------------------------------------------------------ feedback
    def add_feedback(self, events: Iterable[FeedbackFields], received: str) -> None:
        """Write feedback events in one transaction."""
        self._write(_INSERT_FEEDBACK, [(e.interaction_id, e.kind, e.value, e.text, e.session_id, e.user_id,
                                        e.created, received) for e in events])

    def feedback(self, interaction_ids: Sequence[str] | None = None) -> list[StoredFeedback]:
        """The stored events (of some interactions, or all), oldest first."""
        sql = _FEEDBACK_SELECT
        params: list[object] = []
        if interaction_ids is not None:
            if not interaction_ids:
                return []
            sql += f" WHERE interaction_id IN ({', '.join('?' for _ in interaction_ids)})"
            params = list(interaction_ids)
        return list(map(StoredFeedback._make, self._sql._query(sql + " ORDER BY created, id", params)))

    def feedback_by_kind(self, prefix: int, since: str | None, until: str | None) -> list[KindCount]:
        """Events per time window and kind, windows in order."""
        key = f"substr(created, 1, {int(prefix)})"
        where, params = _time_range(since, until)
        return [KindCount(str(start), str(kind), int(count), None if mean is None else float(mean))
                for start, kind, count, mean in self._sql._query(
                    f"SELECT {key}, kind, COUNT(*), AVG(value) FROM feedback{where} "
                    f"GROUP BY {key}, kind ORDER BY {key}", params)]

    def feedback_window_totals(self, prefix: int, since: str | None, until: str | None) -> list[WindowTotals]:
        """Per time window: completed tasks and distinct interactions."""
        key = f"substr(created, 1, {int(prefix)})"
        where, params = _time_range(since, until)
        return [WindowTotals(str(start), int(done or 0), int(people))
                for start, done, people in self._sql._query(
                    f"SELECT {key}, SUM(CASE WHEN kind = 'task_completion' AND value = 1 THEN 1 ELSE 0 END), "
                    f"COUNT(DISTINCT interaction_id) FROM feedback{where} GROUP BY {key}", params)]

    def feedback_interactions(
        self, prefix: int, since: str | None, until: str | None
    ) -> list[WindowInteraction]:
        """Each (time window, interaction) that has feedback."""
        key = f"substr(created, 1, {int(prefix)})"
        where, params = _time_range(since, until)
        return [WindowInteraction(str(start), str(interaction)) for start, interaction in self._sql._query(
            f"SELECT DISTINCT {key}, interaction_id FROM feedback{where}", params)]


# ---------------------------------------------------------------------- fragments for other reads
_NOT_JSON = ("NaN", "Infinity", "-Infinity")
"""What Python's encoder writes for float values JSON has no word for (the store allows them)."""


def json_data_sql(dialect: str, alias: str = "r") -> str:
    """SQL for the JSON text of row ``alias``'s inputs that the database's JSON functions accept:
    the store writes ``NaN`` and infinities as Python does, which neither SQLite's JSON functions
    nor PostgreSQL's ``jsonb`` read, so they become ``null`` (where the encoder puts values: after
    ``": "``, ``"["`` or ``", "``); for the id rule a non-finite number and null are alike. On
    SQLite anything else it cannot read is ``{}`` (as the people module's ``interaction_ids`` reads it)."""
    text = f"{alias}.data"
    fixed = text
    for token in _NOT_JSON:
        for before in (": ", "[", ", "):
            fixed = f"REPLACE({fixed}, '{before}{token}', '{before}null')"
    if dialect == "postgresql":
        return (f"CASE WHEN POSITION('NaN' IN {text}) > 0 OR POSITION('Infinity' IN {text}) > 0 "
                f"THEN {fixed} ELSE {text} END")
    return f"CASE WHEN json_valid({text}) THEN {text} WHEN json_valid({fixed}) THEN {fixed} ELSE '{{}}' END"


def _sqlite_id(column: str, alias: str) -> str:
    path = f"'$.{column}'"
    value = f"json_extract({alias}.j, {path})"
    return (f"CASE WHEN json_type({alias}.j, {path}) IN ('text', 'integer') AND {value} <> '' "
            f"THEN CAST({value} AS TEXT) END")


def _postgres_id(column: str) -> str:
    # a whole number only, as Python reads it (42 is an id, 42.0 is not)
    return (f"CASE WHEN jsonb_typeof(d.j -> '{column}') = 'string' AND d.j ->> '{column}' <> '' "
            f"THEN d.j ->> '{column}' WHEN jsonb_typeof(d.j -> '{column}') = 'number' AND "
            f"(d.j ->> '{column}') ~ '^-?[0-9]+$' THEN d.j ->> '{column}' END")


def interaction_id_sql(dialect: str, alias: str = "r") -> str:
    """SQL for the interaction id of the ``rows`` table's row ``alias`` (its ``interaction_id`` or
    ``id`` input when a non-empty string or a whole number, else ``<run id>:<row index>``: the rule
    of the people module's ``interaction_ids``) written for ``dialect`` (``sqlite`` or
    ``postgresql``), so a query joins a run's rows to their feedback without reading them."""
    fallback = f"{alias}.run_id || ':' || CAST({alias}.idx AS TEXT)"
    data = json_data_sql(dialect, alias)
    if dialect == "postgresql":
        # the row's JSON decoded once per row (OFFSET 0 keeps the planner from inlining it per use)
        found = ", ".join(_postgres_id(c) for c in ID_COLUMNS)
        decoded = f"(SELECT CAST({data} AS jsonb) AS j OFFSET 0) d"
        return f"COALESCE((SELECT COALESCE({found}) FROM {decoded}), {fallback})"
    found = ", ".join(_sqlite_id(c, "d") for c in ID_COLUMNS)
    return f"COALESCE((SELECT COALESCE({found}) FROM (SELECT {data} AS j) d), {fallback})"


# the SQL of the people module's FeedbackEvent.failure
_FAILURE_SQL = ("(f.kind IN (" + ", ".join(f"'{k}'" for k in sorted(FAILURE_KINDS)) + ") OR "
                "(f.kind = 'rating' AND f.value <= 2) OR (f.kind = 'task_completion' AND f.value = 0))")


def row_filter_sql(dialect: str, having: str = "", rating_at_most: float | None = None,
                   alias: str = "r") -> tuple[str, list[object]]:
    """A ``WHERE`` condition (and its parameters) keeping the rows ``alias`` whose interaction has
    feedback ``having`` (one of :data:`ROW_FILTERS`; empty: no condition) and, with
    ``rating_at_most``, a mean rating at most that; ``("", [])`` when neither is asked. One index
    lookup in ``feedback`` per row (its ``interaction_id`` index), so it scales with the run."""
    if having and having not in ROW_FILTERS:
        raise InputValidationError(f"feedback must be one of {', '.join(ROW_FILTERS)}, got {having!r}")
    if rating_at_most is not None and not math.isfinite(rating_at_most):
        raise InputValidationError(f"rating_at_most must be a finite number, got {rating_at_most!r}")
    key = interaction_id_sql(dialect, alias)
    clauses: list[str] = []
    params: list[object] = []
    events = f"SELECT 1 FROM feedback f WHERE f.interaction_id = {key}"
    if having == "any":
        clauses.append(f"EXISTS ({events})")
    elif having == "none":
        clauses.append(f"NOT EXISTS ({events})")
    elif having == "failure":
        clauses.append(f"EXISTS ({events} AND {_FAILURE_SQL})")
    elif having:
        clauses.append(f"EXISTS ({events} AND f.kind = ?)")
        params.append(having)
    if rating_at_most is not None:
        clauses.append(f"(SELECT AVG(f.value) FROM feedback f WHERE f.interaction_id = {key} "
                       "AND f.kind = 'rating') <= ?")
        params.append(float(rating_at_most))
    return " AND ".join(clauses), params
