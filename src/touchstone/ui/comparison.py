"""The comparison page's data: :func:`touchstone.compare.compare_runs` (paired differences, tests,
Holm's adjustment, verdicts) and :func:`~touchstone.compare.rows_changed_most` (with both runs' rows
side by side), as one JSON-ready dict."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from touchstone.errors import InputValidationError
from touchstone.store.base import Store
from touchstone.ui.views import NotFound, QueryError, finite_dict, get_run

CHANGED_ROWS = 20

FEEDBACK_FILTERS = (
    ("any", "any feedback"), ("none", "no feedback"), ("failure", "a reported failure"),
    ("thumbs_down", "thumbs down"), ("thumbs_up", "thumbs up"), ("rating", "a rating"),
    ("error_report", "an error report"), ("escalation", "an escalation"), ("abandonment", "an abandonment"),
    ("task_completion", "a task completion"), ("session_length", "a session length"),
    ("return_visit", "a return visit"),
)
"""The feedback filter's choices (each of ``people.feedback.ROW_FILTERS``) and their labels."""


def parse_alpha(text: str) -> float:
    """The significance level from the query string: a number strictly between 0 and 1."""
    try:
        alpha = float(text)
    except ValueError:
        raise QueryError(f"alpha must be a number between 0 and 1, got {text!r}") from None
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise QueryError(f"alpha must be a number between 0 and 1, got {text!r}")
    return alpha


@dataclass(frozen=True)
class FeedbackRows:
    """Compare only the matched rows whose interaction got user feedback of a sort: ``feedback``
    one of :data:`~touchstone.people.feedback.ROW_FILTERS` (``any``, ``failure``, ``thumbs_down``...)
    and/or a mean rating at most ``rating_max``. A pair is kept when its row in A or its row in B
    has such feedback (a replay of production inputs shares their ids, and so their feedback)."""

    feedback: str = ""
    rating_max: float | None = None

    @property
    def active(self) -> bool:
        return bool(self.feedback) or self.rating_max is not None

    def describe(self) -> str:
        """The restriction in words: ``a reported failure and a mean rating <= 2``."""
        parts = [dict(FEEDBACK_FILTERS).get(self.feedback, self.feedback)] if self.feedback else []
        if self.rating_max is not None:
            parts.append(f"a mean rating <= {self.rating_max:g}")
        return " and ".join(parts)

    def rows(self, store: Store, run_id: str) -> set[int]:
        """The rows of ``run_id`` with such feedback (one read)."""
        try:
            return store.dashboard.rows_with_feedback(run_id, self.feedback, self.rating_max)
        except InputValidationError as exc:
            raise QueryError(str(exc)) from None


class _Keep:
    """The pairs to keep, counting the pairs it was asked about (all the matched ones)."""

    def __init__(self, rows_a: set[int], rows_b: set[int]) -> None:
        self.rows_a, self.rows_b = rows_a, rows_b
        self.asked = 0
        self.kept = 0

    def __call__(self, idx_a: int, idx_b: int) -> bool:
        self.asked += 1
        keep = idx_a in self.rows_a or idx_b in self.rows_b
        self.kept += keep
        return keep


def comparison_view(store: Store, run_a: str, run_b: str, alpha: str = "0.05",
                    limit: int = CHANGED_ROWS, only: FeedbackRows | None = None) -> dict[str, Any]:
    """Run B (the candidate) against run A: ``comparison`` (per metric: means, B - A with its
    interval, p-values, Holm's, McNemar's, the verdict) and ``changed`` (the rows that changed most,
    with both runs' inputs and outputs). With ``only`` (see :class:`FeedbackRows`): on the matched
    rows with that feedback, and ``restricted`` says how many of the matched rows remain."""
    from touchstone.compare import UnknownRunError, compare_runs, rows_changed_most

    level = parse_alpha(alpha)
    restricted: dict[str, Any] | None = None
    try:
        keep = None
        if only is not None and only.active:
            for run in (run_a, run_b):
                if get_run(store, run) is None:
                    raise NotFound(f"no run {run!r} in this store")
            keep = _Keep(only.rows(store, run_a), only.rows(store, run_b))
        result = compare_runs(store, run_a, run_b, alpha=level, keep=keep)
        if keep is not None and only is not None:
            restricted = {"filter": only.describe(), "feedback": only.feedback, "rating_max": only.rating_max,
                          "kept": keep.kept, "matched": keep.asked}
        changed = rows_changed_most(store, run_a, run_b, limit=limit, keep=keep)
    except UnknownRunError as exc:
        raise NotFound(str(exc)) from None
    except InputValidationError as exc:
        raise QueryError(str(exc)) from None
    return finite_dict({"comparison": result.as_dict(), "changed": [c.as_dict() for c in changed],
                        "restricted": restricted})
