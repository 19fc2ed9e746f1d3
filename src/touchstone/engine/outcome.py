"""What a finished run means for a gate: the metrics that produced no score at all, and the means
below a required minimum. Used by the command line to choose its exit status; nothing here prints."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from touchstone.errors import InputValidationError, Problem

Summary = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class UnscoredMetric:
    """An evaluator none of whose rows got a score: ``n_failed`` rows failed, the first with ``error``
    (None when the rows do not say why). ``score_key`` is the output key its score would have had."""

    evaluator: str
    n_failed: int
    error: str | None
    score_key: str

    def describe(self, limit: int = 300) -> str:
        """One line: which metric, how many rows, and the first row's error (cut at ``limit``)."""
        rows = "row" if self.n_failed == 1 else "rows"
        line = f"metric {self.evaluator} produced no score (all {self.n_failed} {rows} failed)"
        if self.error:
            why = " ".join(self.error.split())
            line += "; first error: " + (why if len(why) <= limit else why[: limit - 1] + "…")
        return line


def _evaluator_entries(summary: Summary, name: str) -> list[tuple[str, Mapping[str, Any]]]:
    return [(key, entry) for key, entry in summary.items() if key.startswith(name + ".")]


def _row_errors(rows: Sequence[Mapping[str, Any]], name: str) -> tuple[int, str | None, str | None]:
    """For evaluator ``name``: (rows with a set error, the first error message, the key prefix of
    that error, e.g. ``groundedness`` for ``outputs.groundedness.groundedness_error``)."""
    head = f"outputs.{name}."
    failed = 0
    first: str | None = None
    score_key: str | None = None
    for row in rows:
        errors = [(k, v) for k, v in row.items() if k.startswith(head) and k.endswith("_error") and v]
        if errors:
            failed += 1
            if first is None:
                key, value = errors[0]
                first, score_key = str(value), key[len(head) : -len("_error")]
    return failed, first, score_key


def unscored_metrics(
    evaluators: Iterable[str], rows: Sequence[Mapping[str, Any]], summary: Summary
) -> list[UnscoredMetric]:
    """The evaluators that produced no score on any row.

    An evaluator counts when its summary has an entry with ``n == 0``, or when every row of the result
    carries one of its ``*_error`` outputs (a summary may leave such an evaluator out altogether)."""
    found: list[UnscoredMetric] = []
    for name in evaluators:
        failed, error, score_key = _row_errors(rows, name)
        entries = _evaluator_entries(summary, name)
        empty = [(key, entry) for key, entry in entries if entry.get("n") == 0]
        all_rows_failed = bool(rows) and failed == len(rows)
        if not (empty or all_rows_failed):
            continue
        if empty:
            key, entry = empty[0]
            n_failed = int(entry.get("n_failed") or failed)
            score_key = key[len(name) + 1 :]
        else:
            n_failed = failed
        found.append(UnscoredMetric(name, n_failed, error, score_key or name))
    return found


def with_unscored(
    summary: Summary, unscored: Sequence[UnscoredMetric], order: Iterable[str]
) -> dict[str, Any]:
    """``summary`` with an ``n = 0`` entry for each unscored evaluator it leaves out, in evaluator
    order (``order``), so that a table still lists the metric with its failures."""
    missing = {u.evaluator: u for u in unscored if not _evaluator_entries(summary, u.evaluator)}
    if not missing:
        return dict(summary)
    merged: dict[str, Any] = {}
    for name in order:
        for key, entry in _evaluator_entries(summary, name):
            merged.setdefault(key, entry)
        if name in missing:
            u = missing[name]
            merged[f"{name}.{u.score_key}"] = {
                "mean": None,
                "n": 0,
                "n_failed": u.n_failed,
                "n_rows": u.n_failed,
                "ci95": [None, None],
            }
    for key, entry in summary.items():
        merged.setdefault(key, entry)
    return merged


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def gate_failures(summary: Summary, minimums: Mapping[str, float], *, source: str = "--min") -> list[str]:
    """One line per mean below its minimum; a key may be a metric name or ``<evaluator>.<output key>``.
    A metric with no mean (no score) is below any minimum. An unknown key is an input error."""
    failures = []
    for key, minimum in minimums.items():
        candidates = [k for k in summary if k == key or k == f"{key}.{key}" or k.startswith(f"{key}.")]
        entry_key = next(
            (k for k in candidates if k in (key, f"{key}.{key}")), candidates[0] if candidates else None
        )
        if entry_key is None:
            raise InputValidationError(
                [Problem(source, None, key, f"no such metric in the results; have {list(summary)}")]
            )
        entry = summary[entry_key]
        mean = entry.get("mean", entry.get("value"))
        if mean is None or mean < minimum:
            failures.append(f"{entry_key} mean {_fmt(mean)} is below the minimum {minimum}")
    return failures
