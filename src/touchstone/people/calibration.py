"""How far a run's judge can be trusted against people: the judge's stored scores on a metric,
matched row by row with people's annotations of the same rows, compared by rank correlation and
agreement (with bootstrap intervals), and a verdict in plain words by fixed cut-offs.

Annotations are rows (CSV or JSONL) with ``row`` (the run row's ``id`` field where the run's data has
ids, else its 0-based index; ``id``, ``row_id``, ``idx`` and ``index`` are read too), ``annotator``,
``metric`` (or ``dimension``) and a numeric ``value``. Several annotators per row are averaged into
one consensus value; their agreement among themselves is reported beside (Krippendorff's ordinal
alpha), since a judge cannot be checked more closely than people agree with each other.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from touchstone.data.loaders import Record, load_records
from touchstone.errors import InputValidationError, Problem
from touchstone.stats.agreement import Estimate, cohen_kappa, judge_vs_people, krippendorff_alpha
from touchstone.store.base import Store

ROW_KEYS = ("row", "id", "row_id", "idx", "index")
METRIC_KEYS = ("metric", "dimension")
MIN_ROWS = 10
"""Fewer matched rows than this: no verdict (an interval over so few rows says little)."""
TRUST_SPEARMAN = 0.7
"""Spearman's rho at or above which (with its interval's lower end at or above
:data:`TRUST_SPEARMAN_LOWER` and adjacent agreement at or above :data:`TRUST_ADJACENT`) the judge
can stand in for people."""
TRUST_SPEARMAN_LOWER = 0.5
TRUST_ADJACENT = 0.9
CARE_SPEARMAN = 0.5
"""Spearman's rho at or above which (with adjacent agreement at or above :data:`CARE_ADJACENT`) the
judge follows people broadly but should be checked where a decision depends on it."""
CARE_ADJACENT = 0.75
PEOPLE_ALPHA = 0.667
"""Krippendorff's alpha among people below which their own agreement is called weak (the usual
lowest value for tentative conclusions)."""


@dataclass(frozen=True)
class Annotation:
    """One person's value for one metric on one row (``row`` as written in the file)."""

    row: str
    annotator: str
    metric: str
    value: float


@dataclass
class Calibration:
    """A judge metric against people on the rows both scored."""

    run_id: str
    metric: str
    matched: int
    statistics: dict[str, Estimate]
    kappa_quadratic: float | None
    people_alpha: float | None
    annotators: int
    verdict: str
    trust: str
    unmatched: list[str] = field(default_factory=list)
    judge_failed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "metric": self.metric,
            "matched_rows": self.matched,
            "statistics": {k: v.as_dict() for k, v in self.statistics.items()},
            "kappa_quadratic": self.kappa_quadratic,
            "people_alpha_ordinal": self.people_alpha,
            "annotators": self.annotators,
            "trust": self.trust,
            "verdict": self.verdict,
            "unmatched_rows": self.unmatched,
            "judge_failed_rows": self.judge_failed,
        }


def _first(data: dict[str, Any], keys: Sequence[str]) -> tuple[str | None, Any]:
    for key in keys:
        if key in data and data[key] not in (None, ""):
            return key, data[key]
    return None, None


def _annotation(record: Record) -> tuple[Annotation | None, list[Problem]]:
    data, problems = record.data, []
    _, row = _first(data, ROW_KEYS)
    if row is None or isinstance(row, (dict, list, bool)):
        problems.append(Problem(record.source, record.line, "row", "expected the row's id or 0-based index"))
    annotator = data.get("annotator")
    if not isinstance(annotator, (str, int)) or isinstance(annotator, bool) or str(annotator).strip() == "":
        problems.append(Problem(record.source, record.line, "annotator", "expected the annotator's id"))
    _, metric = _first(data, METRIC_KEYS)
    if not isinstance(metric, str) or not metric.strip():
        problems.append(
            Problem(record.source, record.line, "metric", "expected a metric (or dimension) name")
        )
    raw, value = data.get("value"), math.nan
    with contextlib.suppress(TypeError, ValueError):  # not a number: reported just below
        value = float(raw) if not isinstance(raw, bool) and raw not in (None, "") else math.nan
    if not math.isfinite(value):
        problems.append(Problem(record.source, record.line, "value", f"expected a number, got {raw!r}"[:120]))
    if problems:
        return None, problems
    return Annotation(str(row).strip(), str(annotator).strip(), str(metric).strip(), value), []


def load_annotations(source: str | Path | Sequence[dict[str, Any]]) -> list[Annotation]:
    """Annotations from CSV/JSONL (or dicts); :class:`InputValidationError` naming every bad row."""
    annotations, problems = [], []
    for record in load_records(source):
        ann, found = _annotation(record)
        problems.extend(found)
        if ann is not None:
            annotations.append(ann)
    if problems:
        raise InputValidationError(problems)
    if not annotations:
        raise InputValidationError([Problem(str(source), None, None, "no annotations")])
    return annotations


def _row_index(store: Store, run_id: str) -> dict[str, int]:
    """The run's rows by the key annotations name them with: their ``id`` where every row has one,
    else their index."""
    rows = store.get_rows(run_id)
    ids = [r.data.get("id") for r in rows]
    if rows and all(i is not None and not isinstance(i, (dict, list)) for i in ids):
        return {str(i).strip(): r.idx for i, r in zip(ids, rows, strict=True)}
    return {str(r.idx): r.idx for r in rows}


def _judge_values(store: Store, run_id: str, metric: str) -> dict[int, float | None]:
    lines = [v for v in store.score_values(run_id) if v.metric == metric]
    if not lines:
        lines = [v for v in store.score_values(run_id, evaluator=metric) if v.metric == f"{metric}_score"]
    if not lines:
        names = sorted({v.metric for v in store.score_values(run_id)})
        raise InputValidationError(
            [
                Problem(
                    "--metric",
                    None,
                    None,
                    f"the run has no scores for metric {metric!r}; it has: {', '.join(names) or 'none'}",
                )
            ]
        )
    return {v.idx: (v.value if v.ok and v.value is not None else None) for v in lines}


def verdict(n: int, stats: dict[str, Estimate], people_alpha: float | None) -> tuple[str, str]:
    """``(trust, sentence)`` by the documented cut-offs; trust is ``too_few_rows``, ``trusted``,
    ``with_care`` or ``not_trusted``."""
    rho, adjacent = stats["spearman"], stats["adjacent_agreement"].value
    if n < MIN_ROWS:
        trust, text = (
            "too_few_rows",
            f"only {n} rows matched (at least {MIN_ROWS} are needed to judge the judge)",
        )
    elif (
        rho.value is not None
        and rho.lower is not None
        and adjacent is not None
        and rho.value >= TRUST_SPEARMAN
        and rho.lower >= TRUST_SPEARMAN_LOWER
        and adjacent >= TRUST_ADJACENT
    ):
        trust, text = (
            "trusted",
            "the judge orders rows as people do and is rarely more than a point off: "
            "it can stand in for them",
        )
    elif (
        rho.value is not None
        and adjacent is not None
        and rho.value >= CARE_SPEARMAN
        and adjacent >= CARE_ADJACENT
    ):
        trust, text = (
            "with_care",
            "the judge follows people broadly; check with people where a decision depends on it",
        )
    else:
        trust, text = (
            "not_trusted",
            "the judge does not follow people closely enough to replace them on this metric",
        )
    if people_alpha is not None and people_alpha < PEOPLE_ALPHA:
        text += f" (people agree only weakly among themselves: alpha {people_alpha:.2f})"
    return trust, text


def calibrate(
    store: Store,
    run_id: str,
    annotations: Sequence[Annotation],
    metric: str | None = None,
    *,
    bootstrap: int = 1000,
    seed: int | None = 0,
) -> Calibration:
    """Compare the run's judge scores on ``metric`` (default: the one metric the annotations name)
    with people's annotations of the same rows."""
    if store.get_run(run_id) is None:
        raise InputValidationError([Problem("RUN", None, None, f"no run {run_id!r} in the store")])
    named = sorted({a.metric for a in annotations})
    if metric is None:
        if len(named) != 1:
            raise InputValidationError(
                [
                    Problem(
                        "--metric",
                        None,
                        None,
                        f"the annotations name several metrics ({', '.join(named)}); choose one",
                    )
                ]
            )
        metric = named[0]
    mine = [a for a in annotations if a.metric == metric]
    if not mine:
        raise InputValidationError(
            [
                Problem(
                    "--metric",
                    None,
                    None,
                    f"no annotation for metric {metric!r}; they name: {', '.join(named)}",
                )
            ]
        )
    judged = _judge_values(store, run_id, metric)
    rows = _row_index(store, run_id)
    by_row: dict[int, dict[str, float]] = defaultdict(dict)
    unmatched: list[str] = []
    for a in mine:
        idx = rows.get(a.row)
        if idx is None or idx not in judged:
            if a.row not in unmatched:
                unmatched.append(a.row)
            continue
        by_row[idx][a.annotator] = a.value
    failed = sorted(str(i) for i in by_row if judged[i] is None)
    matched = sorted(i for i in by_row if judged[i] is not None)
    judge = np.array([judged[i] for i in matched], dtype=float)
    people = np.array([np.mean(list(by_row[i].values())) for i in matched], dtype=float)
    stats = judge_vs_people(judge, people, bootstrap=bootstrap, seed=seed)
    kappa = (
        cohen_kappa(np.rint(judge).tolist(), np.rint(people).tolist(), "quadratic")
        if len(matched)
        else math.nan
    )
    annotators = sorted({a for i in matched for a in by_row[i]})
    alpha = None
    if len(annotators) >= 2:
        grid = np.full((len(annotators), len(matched)), np.nan)
        for u, i in enumerate(matched):
            for r, name in enumerate(annotators):
                grid[r, u] = by_row[i].get(name, np.nan)
        value = krippendorff_alpha(grid, "ordinal")
        alpha = None if math.isnan(value) else value
    trust, text = verdict(len(matched), stats, alpha)
    return Calibration(
        run_id,
        metric,
        len(matched),
        stats,
        None if math.isnan(kappa) else kappa,
        alpha,
        len(annotators),
        text,
        trust,
        unmatched,
        failed,
    )
