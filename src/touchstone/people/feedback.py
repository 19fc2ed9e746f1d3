"""Feedback from production, linked to interactions by id: explicit (thumbs up or down, a 1-5
rating, an escalation to a person, an error report with its text) and implicit (session length,
a return visit, task completion, abandonment).

Events are validated by :func:`parse_event` / :func:`parse_events` (a :class:`FeedbackError` names
the field that is wrong and what was expected), written by :func:`record_feedback` to the store's
``feedback`` table, summed up per time window by :func:`aggregate`, and joined to a run's rows by
:func:`run_feedback` (a row's interaction id is its ``interaction_id`` or ``id`` input column, or
``<run id>:<row index>``), which makes feedback a column a run's rows can be filtered by
(:func:`filter_rows`). The web app's ``POST /api/feedback`` goes through the same functions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from touchstone.errors import InputValidationError, Problem
from touchstone.store.base import Store

EXPLICIT_KINDS = ("thumbs_up", "thumbs_down", "rating", "escalation", "error_report")
IMPLICIT_KINDS = ("session_length", "return_visit", "task_completion", "abandonment")
KINDS = EXPLICIT_KINDS + IMPLICIT_KINDS
FAILURE_KINDS = frozenset({"thumbs_down", "escalation", "error_report", "abandonment"})
"""Kinds that say the interaction went wrong for the user (what the active-learning queue ranks)."""

MAX_ID = 256
MAX_TEXT = 10_000
MAX_BATCH = 1000
FIELDS = ("interaction_id", "kind", "value", "text", "session_id", "user_id", "created")
WINDOWS = {"minute": 16, "hour": 13, "day": 10, "month": 7}
"""A time window as the length of the ISO 8601 prefix its events share (``2026-11-23T16`` an hour)."""

_INSERT = ("INSERT INTO feedback (interaction_id, kind, value, text, session_id, user_id, created, received) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


class FeedbackError(InputValidationError):
    """A feedback event is malformed; ``field`` names the offending field (``events[3].kind``)."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__([Problem(source="feedback", line=None, field=field_name, message=message)])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.field, self.problems[0].message))


def _rebuild(field_name: str, message: str) -> FeedbackError:
    return FeedbackError(field_name, message)


@dataclass(frozen=True)
class FeedbackEvent:
    """One feedback event about one interaction.

    ``value``: the rating (1-5) for ``rating``, seconds for ``session_length``, 1 (done) or 0 for
    ``task_completion`` (default 1); absent for the other kinds. ``text``: what the user wrote
    (required for ``error_report``). ``created``: when it happened (ISO 8601, UTC; default now)."""

    interaction_id: str
    kind: str
    value: float | None = None
    text: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    created: str = field(default_factory=lambda: _utc(datetime.now(timezone.utc)))

    def __post_init__(self) -> None:
        checked = parse_event(asdict(self))
        object.__setattr__(self, "value", checked.value)
        object.__setattr__(self, "created", checked.created)

    @property
    def failure(self) -> bool:
        """Whether the event reports that the interaction failed the user."""
        return self.kind in FAILURE_KINDS or (self.kind == "rating" and (self.value or 0) <= 2) or (
            self.kind == "task_completion" and self.value == 0)


def _utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def _string(body: Mapping[str, Any], name: str, where: str, *, required: bool, limit: int) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise FeedbackError(where + name, "is required (a non-empty string)")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise FeedbackError(where + name, f"must be a non-empty string, got {type(value).__name__}"
                            if not isinstance(value, str) else "must not be empty")
    if len(value) > limit:
        raise FeedbackError(where + name, f"is too long ({len(value)} characters; at most {limit})")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FeedbackError(where, f"must be a finite number, got {json.dumps(value, default=str)[:40]}")
    return float(value)


def _value(kind: str, value: Any, where: str) -> float | None:
    if kind == "rating":
        if value is None:
            raise FeedbackError(where, "is required for a rating (a number from 1 to 5)")
        number = _number(value, where)
        if not 1 <= number <= 5:
            raise FeedbackError(where, f"a rating must be between 1 and 5, got {number:g}")
        return number
    if kind == "session_length":
        if value is None:
            raise FeedbackError(where, "is required for session_length (seconds, >= 0)")
        number = _number(value, where)
        if number < 0:
            raise FeedbackError(where, f"a session length must be >= 0 seconds, got {number:g}")
        return number
    if kind == "task_completion":
        number = 1.0 if value is None else _number(value, where)
        if number not in (0.0, 1.0):
            raise FeedbackError(where, f"task_completion takes 1 (completed) or 0, got {number:g}")
        return number
    if value is not None:
        raise FeedbackError(where, f"{kind} takes no value (omit it or send null)")
    return None


def _created(value: Any, where: str) -> str:
    if value is None:
        return _utc(datetime.now(timezone.utc))
    if not isinstance(value, str):
        raise FeedbackError(where, "must be an ISO 8601 time (a string such as 2026-11-23T16:30:00Z)")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise FeedbackError(where, f"is not an ISO 8601 time: {value[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)  # a time without an offset is read as UTC
    return _utc(moment)


def parse_event(body: Any, where: str = "") -> FeedbackEvent:
    """A validated :class:`FeedbackEvent` from a JSON object; raises :class:`FeedbackError` naming the
    field (prefixed by ``where``, e.g. ``events[2].``) and what was expected."""
    if not isinstance(body, Mapping):
        raise FeedbackError(where.rstrip(".") or "body", "must be a JSON object")
    unknown = sorted(str(k) for k in body if k not in FIELDS)
    if unknown:
        raise FeedbackError(where + unknown[0], f"is not a feedback field (known: {', '.join(FIELDS)})")
    interaction = _string(body, "interaction_id", where, required=True, limit=MAX_ID)
    kind = body.get("kind")
    if kind not in KINDS:
        raise FeedbackError(where + "kind", f"must be one of {', '.join(KINDS)}, got "
                            f"{json.dumps(kind, default=str)[:40]}")
    text = _string(body, "text", where, required=kind == "error_report", limit=MAX_TEXT)
    event = object.__new__(FeedbackEvent)
    for name, value in (
        ("interaction_id", interaction), ("kind", kind),
        ("value", _value(kind, body.get("value"), where + "value")),
        ("text", text), ("session_id", _string(body, "session_id", where, required=False, limit=MAX_ID)),
        ("user_id", _string(body, "user_id", where, required=False, limit=MAX_ID)),
        ("created", _created(body.get("created"), where + "created")),
    ):
        object.__setattr__(event, name, value)
    return event


def parse_events(body: Any) -> list[FeedbackEvent]:
    """Events from a request body: one event object, a list of them, or ``{"events": [...]}`` (at
    most :data:`MAX_BATCH`); raises :class:`FeedbackError` on the first malformed one."""
    if isinstance(body, Mapping) and "events" in body:
        if set(body) != {"events"}:
            extra = sorted(str(k) for k in body if k != "events")[0]
            raise FeedbackError(extra, "is not allowed beside events")
        body = body["events"]
        if not isinstance(body, list):
            raise FeedbackError("events", "must be a list of event objects")
    if isinstance(body, list):
        if not body:
            raise FeedbackError("events", "must hold at least one event")
        if len(body) > MAX_BATCH:
            raise FeedbackError("events", f"holds {len(body)} events; at most {MAX_BATCH} per request")
        return [parse_event(item, f"events[{i}].") for i, item in enumerate(body)]
    return [parse_event(body)]


def record_feedback(store: Store, events: Iterable[FeedbackEvent | Mapping[str, Any]]) -> int:
    """Validate and write events (one transaction); returns how many were written. Nothing is
    written when one is malformed."""
    checked = [e if isinstance(e, FeedbackEvent) else parse_event(e) for e in events]
    received = _utc(datetime.now(timezone.utc))
    store.execute_many(_INSERT, [(e.interaction_id, e.kind, e.value, e.text, e.session_id, e.user_id,
                                  e.created, received) for e in checked])
    return len(checked)


def feedback_for(store: Store, interaction_ids: Sequence[str] | None = None) -> list[FeedbackEvent]:
    """The stored events (of some interactions, or all), oldest first."""
    sql = "SELECT interaction_id, kind, value, text, session_id, user_id, created FROM feedback"
    params: list[object] = []
    if interaction_ids is not None:
        if not interaction_ids:
            return []
        sql += f" WHERE interaction_id IN ({', '.join('?' for _ in interaction_ids)})"
        params = list(interaction_ids)
    events = []
    for r in store.fetch_all(sql + " ORDER BY created, id", params):
        event = object.__new__(FeedbackEvent)
        for name, value in zip(FIELDS, r, strict=True):
            object.__setattr__(event, name, value)
        events.append(event)
    return events


@dataclass
class Window:
    """The feedback of one time window: counts per kind and the rates derived from them."""

    start: str
    counts: dict[str, int]
    mean_rating: float | None
    mean_session_length: float | None
    interactions: int
    judge_mean: float | None = None
    """The judge metric's mean over the rows of the run linked to this window's interactions (when a
    run and a metric were given to :func:`aggregate`)."""

    @property
    def thumbs_up_rate(self) -> float | None:
        """Thumbs up among thumbs given."""
        up, down = self.counts.get("thumbs_up", 0), self.counts.get("thumbs_down", 0)
        return up / (up + down) if up + down else None

    @property
    def completion_rate(self) -> float | None:
        """Completed tasks among completions, failed completions and abandonments."""
        done = self.counts.get("task_completion_done", 0)
        total = self.counts.get("task_completion", 0) + self.counts.get("abandonment", 0)
        return done / total if total else None

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start, "counts": self.counts, "interactions": self.interactions,
                "thumbs_up_rate": self.thumbs_up_rate, "mean_rating": self.mean_rating,
                "mean_session_length": self.mean_session_length, "completion_rate": self.completion_rate,
                "judge_mean": self.judge_mean}


def aggregate(
    store: Store, window: str = "day", since: str | None = None, until: str | None = None,
    run_id: str | None = None, metric: str | None = None, id_column: str | None = None,
) -> list[Window]:
    """Feedback per time window (``minute``, ``hour``, ``day`` or ``month`` of ``created``, UTC),
    oldest first, between ``since`` and ``until`` (ISO 8601 prefixes, inclusive). With ``run_id``
    and ``metric``: beside each window, the judge metric's mean over the run's rows whose
    interactions got feedback in it."""
    if window not in WINDOWS:
        raise InputValidationError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    n = WINDOWS[window]
    where, params = _time_range(since, until)
    key = f"substr(created, 1, {n})"
    windows: dict[str, Window] = {}
    for start, kind, count, mean in store.fetch_all(
        f"SELECT {key}, kind, COUNT(*), AVG(value) FROM feedback{where} GROUP BY {key}, kind ORDER BY {key}",
        params,
    ):
        w = windows.setdefault(start, Window(start, {}, None, None, 0))
        w.counts[str(kind)] = int(count)
        if kind == "rating":
            w.mean_rating = float(mean)
        elif kind == "session_length":
            w.mean_session_length = float(mean)
    for start, done, people in store.fetch_all(
        f"SELECT {key}, SUM(CASE WHEN kind = 'task_completion' AND value = 1 THEN 1 ELSE 0 END), "
        f"COUNT(DISTINCT interaction_id) FROM feedback{where} GROUP BY {key}", params,
    ):
        windows[start].counts["task_completion_done"] = int(done or 0)
        windows[start].interactions = int(people)
    if run_id is not None and metric is not None:
        _judge_beside(store, windows, key, where, params, run_id, metric, id_column)
    return [windows[k] for k in sorted(windows)]


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


def _judge_beside(store: Store, windows: dict[str, Window], key: str, where: str, params: list[object],
                  run_id: str, metric: str, id_column: str | None) -> None:
    ids = interaction_ids(store, run_id, id_column)
    values: dict[str, list[float]] = {}
    for sv in store.score_values(run_id, metric=metric):
        if sv.ok and sv.value is not None and sv.idx in ids:
            values.setdefault(ids[sv.idx], []).append(sv.value)
    seen: dict[str, set[str]] = {}
    for start, interaction in store.fetch_all(f"SELECT DISTINCT {key}, interaction_id FROM feedback{where}",
                                              params):
        seen.setdefault(start, set()).add(str(interaction))
    for start, w in windows.items():
        got = [v for i in seen.get(start, ()) for v in values.get(i, ())]
        w.judge_mean = sum(got) / len(got) if got else None


ID_COLUMNS = ("interaction_id", "id")


def interaction_ids(store: Store, run_id: str, id_column: str | None = None) -> dict[int, str]:
    """``{row index: interaction id}`` of a run: the row's ``id_column`` input (by default its
    ``interaction_id`` or ``id`` column), else ``<run id>:<row index>``."""
    out: dict[int, str] = {}
    for idx, data in store.fetch_all("SELECT idx, data FROM rows WHERE run_id = ? ORDER BY idx", (run_id,)):
        try:
            decoded = json.loads(data)
        except (TypeError, ValueError):
            decoded = {}
        out[int(idx)] = interaction_id_of(run_id, int(idx), decoded, id_column)
    return out


def interaction_id_of(run_id: str, idx: int, data: Any, id_column: str | None = None) -> str:
    """One row's interaction id (see :func:`interaction_ids`) from its decoded input ``data``."""
    for column in (id_column,) if id_column else ID_COLUMNS:
        value = data.get(column) if isinstance(data, dict) else None
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return f"{run_id}:{idx}"


_NOT_JSON = ("NaN", "Infinity", "-Infinity")
"""What Python's encoder writes for float values JSON has no word for (the store allows them)."""


def json_data_sql(dialect: str, alias: str = "r") -> str:
    """SQL for the JSON text of row ``alias``'s inputs that the database's JSON functions accept:
    the store writes ``NaN`` and infinities as Python does, which neither SQLite's JSON functions
    nor PostgreSQL's ``jsonb`` read, so they become ``null`` (where the encoder puts values: after
    ``": "``, ``"["`` or ``", "``); for the id rule a non-finite number and null are alike. On
    SQLite anything else it cannot read is ``{}`` (as :func:`interaction_ids` reads it)."""
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
    """SQL for the interaction id of the ``rows`` table's row ``alias``, the rule of
    :func:`interaction_ids` (its ``interaction_id`` or ``id`` input when a non-empty string or a
    whole number, else ``<run id>:<row index>``) written for ``dialect`` (``sqlite`` or
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


ROW_FILTERS = ("any", "none", "failure", *KINDS)
"""What a run's rows can be filtered by (:func:`row_filter_sql`): any feedback, none, a
user-reported failure (see :attr:`FeedbackEvent.failure`), or at least one event of a kind."""

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


def feedback_columns(store: Store, interactions: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The feedback columns (as :func:`run_feedback` makes them, and ``last_error_report``: the text
    of the latest error report) of some interactions: ``{interaction id: {column: value}}`` for
    those with feedback. For a page of rows, not a whole run."""
    out: dict[str, dict[str, Any]] = {}
    unique = sorted(set(interactions))
    for i in range(0, len(unique), 500):  # well under both backends' limits on bound parameters
        for event in feedback_for(store, unique[i:i + 500]):
            columns = out.setdefault(event.interaction_id, {"_n": {}})
            _add(columns, event)
            if event.kind == "error_report":
                columns["last_error_report"] = event.text  # oldest first: the latest one stays
    for columns in out.values():
        _finish(columns)
    return out


FEEDBACK_COLUMNS = ("thumbs_up", "thumbs_down", "rating", "escalation", "error_report", "session_length",
                    "return_visit", "task_completion", "abandonment", "user_failure")


def run_feedback(store: Store, run_id: str, id_column: str | None = None) -> dict[int, dict[str, Any]]:
    """Feedback as columns of a run's rows: ``{row index: {column: value}}`` for the rows with
    feedback. Counts for thumbs, escalations, error reports, return visits and abandonments; the
    mean for ratings and session lengths; the completion rate; ``user_failure`` whether any event
    reported a failure (see :data:`FAILURE_KINDS`)."""
    ids = interaction_ids(store, run_id, id_column)
    by_interaction: dict[str, list[int]] = {}
    for idx, interaction in ids.items():
        by_interaction.setdefault(interaction, []).append(idx)
    out: dict[int, dict[str, Any]] = {}
    chunk = 500  # well under both backends' limits on bound parameters
    keys = sorted(by_interaction)
    for i in range(0, len(keys), chunk):
        part = keys[i:i + chunk]
        for event in feedback_for(store, part):
            for idx in by_interaction[event.interaction_id]:
                _add(out.setdefault(idx, {"_n": {}}), event)
    for columns in out.values():
        _finish(columns)
    return out


def _finish(columns: dict[str, Any]) -> None:
    counts = columns.pop("_n")
    for name in ("rating", "session_length", "task_completion"):
        if name in columns:
            columns[name] = columns[name] / counts[name]


def _add(columns: dict[str, Any], event: FeedbackEvent) -> None:
    counts: dict[str, int] = columns["_n"]
    kind = event.kind
    if kind in ("rating", "session_length", "task_completion"):
        columns[kind] = columns.get(kind, 0.0) + float(event.value or 0.0)
        counts[kind] = counts.get(kind, 0) + 1
    else:
        columns[kind] = columns.get(kind, 0) + 1
    columns["user_failure"] = bool(columns.get("user_failure")) or event.failure


def filter_rows(
    store: Store, run_id: str, column: str, minimum: float | None = None, maximum: float | None = None,
    id_column: str | None = None,
) -> list[int]:
    """The row indices of a run whose feedback ``column`` (one of :data:`FEEDBACK_COLUMNS`) is set
    and within ``[minimum, maximum]`` (``user_failure`` as 0/1)."""
    if column not in FEEDBACK_COLUMNS:
        raise InputValidationError(
            f"feedback column must be one of {', '.join(FEEDBACK_COLUMNS)}, got {column!r}")
    rows = []
    for idx, columns in sorted(run_feedback(store, run_id, id_column).items()):
        if column not in columns:
            continue
        value = float(columns[column])
        if (minimum is None or value >= minimum) and (maximum is None or value <= maximum):
            rows.append(idx)
    return rows


__all__ = [
    "EXPLICIT_KINDS",
    "FAILURE_KINDS",
    "FEEDBACK_COLUMNS",
    "IMPLICIT_KINDS",
    "KINDS",
    "ROW_FILTERS",
    "FeedbackError",
    "FeedbackEvent",
    "Window",
    "aggregate",
    "feedback_columns",
    "feedback_for",
    "filter_rows",
    "interaction_id_of",
    "interaction_id_sql",
    "interaction_ids",
    "json_data_sql",
    "parse_event",
    "parse_events",
    "record_feedback",
    "row_filter_sql",
    "run_feedback",
]
