"""The comparison page's data: :func:`touchstone.compare.compare_runs` (paired differences, tests,
Holm's adjustment, verdicts) and :func:`~touchstone.compare.rows_changed_most` (with both runs' rows
side by side), as one JSON-ready dict."""

from __future__ import annotations

import math
from typing import Any

from touchstone.errors import InputValidationError
from touchstone.store.base import Store
from touchstone.ui.queries import NotFound, QueryError, finite_dict

CHANGED_ROWS = 20


def parse_alpha(text: str) -> float:
    """The significance level from the query string: a number strictly between 0 and 1."""
    try:
        alpha = float(text)
    except ValueError:
        raise QueryError(f"alpha must be a number between 0 and 1, got {text!r}") from None
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise QueryError(f"alpha must be a number between 0 and 1, got {text!r}")
    return alpha


def comparison_view(store: Store, run_a: str, run_b: str, alpha: str = "0.05",
                    limit: int = CHANGED_ROWS) -> dict[str, Any]:
    """Run B (the candidate) against run A: ``comparison`` (per metric: means, B - A with its
    interval, p-values, Holm's, McNemar's, the verdict) and ``changed`` (the rows that changed most,
    with both runs' inputs and outputs)."""
    from touchstone.compare import UnknownRunError, compare_runs, rows_changed_most

    level = parse_alpha(alpha)
    try:
        result = compare_runs(store, run_a, run_b, alpha=level)
        changed = rows_changed_most(store, run_a, run_b, limit=limit)
    except UnknownRunError as exc:
        raise NotFound(str(exc)) from None
    except InputValidationError as exc:
        raise QueryError(str(exc)) from None
    return finite_dict({"comparison": result.as_dict(), "changed": [c.as_dict() for c in changed]})
