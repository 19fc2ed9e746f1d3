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

# the kinds are the feedback table's words, kept by the store beside the SQL that reads them;
# json_data_sql and row_filter_sql are the store's too, named here for the dashboard's queries
from touchstone.store.people import (
    EXPLICIT_KINDS,
    FAILURE_KINDS,
    ID_COLUMNS,
    IMPLICIT_KINDS,
    ROW_FILTERS,
    json_data_sql,
    row_filter_sql,
)
from touchstone.store.people import FEEDBACK_KINDS as KINDS

MAX_ID = 256
MAX_TEXT = 10_000
MAX_BATCH = 1000
FIELDS = ("interaction_id", "kind", "value", "text", "session_id", "user_id", "created")
WINDOWS = {"minute": 16, "hour": 13, "day": 10, "month": 7}
"""A time window as the length of the ISO 8601 prefix its events share (``2026-11-23T16`` an hour)."""


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
    store.people.add_feedback(checked, _utc(datetime.now(timezone.utc)))
    return len(checked)


def feedback_for(store: Store, interaction_ids: Sequence[str] | None = None) -> list[FeedbackEvent]:
    """The stored events (of some interactions, or all), oldest first."""
    events = []
    new = object.__new__
    for r in store.people.feedback(interaction_ids):
        # as stored (checked when written): the fields are set straight, not validated again, which
        # is what lets a run's whole feedback be read quickly
        event = new(FeedbackEvent)
        event.__dict__.update(zip(FIELDS, r, strict=True))
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
    windows: dict[str, Window] = {}
    for line in store.people.feedback_by_kind(n, since, until):
        w = windows.setdefault(line.start, Window(line.start, {}, None, None, 0))
        w.counts[line.kind] = line.events
        if line.kind == "rating":
            w.mean_rating = line.mean
        elif line.kind == "session_length":
            w.mean_session_length = line.mean
    for totals in store.people.feedback_window_totals(n, since, until):
        windows[totals.start].counts["task_completion_done"] = totals.completed
        windows[totals.start].interactions = totals.interactions
    if run_id is not None and metric is not None:
        _judge_beside(store, windows, (n, since, until), run_id, metric, id_column)
    return [windows[k] for k in sorted(windows)]


def _judge_beside(store: Store, windows: dict[str, Window], span: tuple[int, str | None, str | None],
                  run_id: str, metric: str, id_column: str | None) -> None:
    ids = interaction_ids(store, run_id, id_column)
    values: dict[str, list[float]] = {}
    for sv in store.score_values(run_id, metric=metric):
        if sv.ok and sv.value is not None and sv.idx in ids:
            values.setdefault(ids[sv.idx], []).append(sv.value)
    seen: dict[str, set[str]] = {}
    for found in store.people.feedback_interactions(*span):
        seen.setdefault(found.start, set()).add(found.interaction_id)
    for start, w in windows.items():
        got = [v for i in seen.get(start, ()) for v in values.get(i, ())]
        w.judge_mean = sum(got) / len(got) if got else None


def interaction_ids(store: Store, run_id: str, id_column: str | None = None) -> dict[int, str]:
    """``{row index: interaction id}`` of a run: the row's ``id_column`` input (by default its
    ``interaction_id`` or ``id`` column), else ``<run id>:<row index>``."""
    out: dict[int, str] = {}
    for idx, data in store.people.row_inputs(run_id).items():
        try:
            decoded = json.loads(data)
        except (TypeError, ValueError):
            decoded = {}
        out[idx] = interaction_id_of(run_id, idx, decoded, id_column)
    return out


def interaction_id_of(run_id: str, idx: int, data: Any, id_column: str | None = None) -> str:
    """One row's interaction id (see :func:`interaction_ids`) from its decoded input ``data``."""
    for column in (id_column,) if id_column else ID_COLUMNS:
        value = data.get(column) if isinstance(data, dict) else None
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return f"{run_id}:{idx}"


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
    "interaction_ids",
    "json_data_sql",
    "parse_event",
    "parse_events",
    "record_feedback",
    "row_filter_sql",
    "run_feedback",
]
