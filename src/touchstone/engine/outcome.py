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


def unscored_metrics(
    evaluators: Iterable[str], rows: Sequence[Mapping[str, Any]], summary: Summary
) -> list[UnscoredMetric]:
    """The evaluators that produced no score on any row.

    An evaluator counts when its summary has an entry with ``n == 0``, or when every row of the result
    carries one of its ``*_error`` outputs (a summary may leave such an evaluator out altogether).
    The rows are read once, and only as far as needed: once every evaluator has a row without an
    error (and, for one with an empty entry, its first error is known), the rest cannot change the
    answer -- a large run's rows are read from its store."""
    names = list(evaluators)
    empty = {name: [(k, e) for k, e in _evaluator_entries(summary, name) if e.get("n") == 0]
             for name in names}
    failed = dict.fromkeys(names, 0)
    first: dict[str, tuple[str, str] | None] = dict.fromkeys(names)  # (error, score key)
    clean = dict.fromkeys(names, False)  # some row without an error of this evaluator

    def decided(name: str) -> bool:
        if not clean[name]:
            return False
        if not empty[name]:
            return True
        return first[name] is not None and bool(empty[name][0][1].get("n_failed"))

    pending = [name for name in names if not decided(name)]
    n_rows = 0
    complete = True
    for row in rows:
        n_rows += 1
        for name in pending:
            head = f"outputs.{name}."
            errors = [(k, v) for k, v in row.items() if k.startswith(head) and k.endswith("_error") and v]
            if errors:
                failed[name] += 1
                if first[name] is None:
                    key, value = errors[0]
                    first[name] = (str(value), key[len(head) : -len("_error")])
            else:
                clean[name] = True
        pending = [name for name in pending if not decided(name)]
        if not pending:
            complete = False
            break
    found: list[UnscoredMetric] = []
    for name in names:
        all_rows_failed = complete and n_rows > 0 and failed[name] == n_rows
        if not (empty[name] or all_rows_failed):
            continue
        error, score_key = first[name] or (None, None)
        if empty[name]:
            key, entry = empty[name][0]
            n_failed = int(entry.get("n_failed") or failed[name])
            score_key = key[len(name) + 1 :]
        else:
            n_failed = failed[name]
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
