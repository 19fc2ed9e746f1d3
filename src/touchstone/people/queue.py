"""The active-learning queue: which interactions of a run people should annotate first.

Each row gets three signals in [0, 1] and a priority, their weighted sum:

- **uncertainty** of the judge: with the score's distribution over the scale (``score_mode=
  "logprobs"`` keeps it as ``score_probabilities`` in the score's properties) the normalised entropy
  ``H(p) / log K`` (K the number of points on the scale); otherwise how near the score sits to the
  metric's threshold, ``1 - |v - t| / max(t - low, high - t)`` on the metric's scale. The largest over
  the row's metrics counts.
- **disagreement**: between two judges of the same metric (two evaluators writing it, or named
  ``pairs``), ``|a - b|`` with each score brought to [0, 1] on its scale; and between a judge and the
  user (thumbs, ratings, reported failures as 1 / 0, a rating r as ``(r - 1) / 4``), ``|judge - user|``.
  The largest counts.
- **failure**: 1 when a user reported the interaction failed (thumbs down, escalation, error
  report, abandonment, a rating of 2 or less, a task not completed), else 0.

:func:`rank` orders hand-made :class:`Signals`; :func:`build_queue` reads them from a run (and its
feedback) in the store; a budget keeps the first ``budget`` items. The queue feeds annotation tasks
(:func:`touchstone.people.annotations.create_task_from_run` with the queue's row indices).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from touchstone.errors import InputValidationError
from touchstone.people.feedback import run_feedback
from touchstone.store.base import Store


@dataclass(frozen=True)
class JudgeSignal:
    """One metric's score on one row, with what its uncertainty needs: the threshold, the scale's
    ends, and (from ``score_mode="logprobs"``) the probability of each point of the scale."""

    value: float
    threshold: float | None = None
    low: float = 1.0
    high: float = 5.0
    probabilities: Mapping[str, float] | None = None
    group: str | None = None
    """Scores with the same group are judges of the same thing (disagreement is measured between them)."""

    def normalised(self) -> float:
        """The value brought to [0, 1] on its scale (clamped)."""
        span = self.high - self.low
        return 0.5 if span <= 0 else min(1.0, max(0.0, (self.value - self.low) / span))


@dataclass(frozen=True)
class Signals:
    """What is known about one row: its judges' scores (by name) and its users' feedback (the
    columns of :func:`touchstone.people.feedback.run_feedback`)."""

    run_id: str
    idx: int
    judges: Mapping[str, JudgeSignal] = field(default_factory=dict)
    feedback: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Weights:
    """How much each signal counts in the priority."""

    uncertainty: float = 1.0
    disagreement: float = 1.0
    failure: float = 1.0


@dataclass(frozen=True)
class QueueItem:
    """One row in the queue: its priority, the three signals, and why (short texts)."""

    run_id: str
    idx: int
    priority: float
    uncertainty: float
    disagreement: float
    failure: float
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "idx": self.idx, "priority": self.priority,
                "uncertainty": self.uncertainty, "disagreement": self.disagreement, "failure": self.failure,
                "reasons": list(self.reasons)}


def entropy_uncertainty(probabilities: Mapping[str, float], points: int | None = None) -> float:
    """Normalised entropy ``-Σ p log p / log K`` of a score's distribution over K scale points
    (``points``, by default the number given); 1 is a uniform guess, 0 a certain score."""
    probs = [float(p) for p in probabilities.values() if p and p > 0]
    k = max(points or len(probabilities), 2)
    total = sum(probs)
    if total <= 0:
        return 0.0
    h = -sum((p / total) * math.log(p / total) for p in probs)
    return min(1.0, h / math.log(k))


def threshold_uncertainty(signal: JudgeSignal) -> float:
    """``1 - |v - t| / max(t - low, high - t)``: 1 on the threshold, 0 at the far end of the scale;
    0 when the metric has no threshold."""
    t = signal.threshold
    if t is None:
        return 0.0
    reach = max(t - signal.low, signal.high - t)
    if reach <= 0:
        return 0.0
    return max(0.0, 1.0 - abs(signal.value - t) / reach)


def uncertainty_of(signal: JudgeSignal) -> float:
    """The judge's uncertainty on one score: entropy when the distribution is known, else nearness
    to the threshold."""
    if signal.probabilities:
        points = round(signal.high - signal.low) + 1 if signal.high > signal.low else None
        return entropy_uncertainty(signal.probabilities, points)
    return threshold_uncertainty(signal)


def user_signal(feedback: Mapping[str, Any]) -> float | None:
    """What the users said, in [0, 1] (1 good): a reported failure 0, else the mean rating as
    ``(r - 1) / 4``, else the share of thumbs up; None when they said nothing of quality."""
    if feedback.get("user_failure"):
        return 0.0
    if feedback.get("rating") is not None:
        return (float(feedback["rating"]) - 1) / 4
    up, down = int(feedback.get("thumbs_up") or 0), int(feedback.get("thumbs_down") or 0)
    if up + down:
        return up / (up + down)
    return None


def _score(signals: Signals, pairs: Sequence[tuple[str, str]], weights: Weights) -> QueueItem:
    reasons: list[str] = []
    uncertainty = 0.0
    for name, judge in signals.judges.items():
        u = uncertainty_of(judge)
        if u > uncertainty:
            uncertainty = u
            how = "score distribution entropy" if judge.probabilities else "near the threshold"
            reasons = [f"{name}: uncertain ({how}, {u:.2f})"]
    disagreement = 0.0
    why = ""
    groups: dict[str, list[str]] = {}
    for name, judge in signals.judges.items():
        groups.setdefault(judge.group or name, []).append(name)
    compared = [p for names in groups.values() for p in combinations(sorted(names), 2)] + list(pairs)
    for a, b in compared:
        if a in signals.judges and b in signals.judges:
            d = abs(signals.judges[a].normalised() - signals.judges[b].normalised())
            if d > disagreement:
                disagreement, why = d, f"{a} and {b} disagree ({d:.2f})"
    user = user_signal(signals.feedback)
    if user is not None:
        for name, judge in signals.judges.items():
            d = abs(judge.normalised() - user)
            if d > disagreement:
                disagreement, why = d, f"{name} and the users disagree ({d:.2f})"
    if why:
        reasons.append(why)
    failure = 1.0 if signals.feedback.get("user_failure") else 0.0
    if failure:
        reasons.append("a user reported a failure")
    priority = (weights.uncertainty * uncertainty + weights.disagreement * disagreement
                + weights.failure * failure)
    return QueueItem(signals.run_id, signals.idx, round(priority, 9), round(uncertainty, 9),
                     round(disagreement, 9), failure, tuple(reasons))


def rank(
    items: Sequence[Signals], budget: int | None = None, weights: Weights | None = None,
    pairs: Sequence[tuple[str, str]] = (),
) -> list[QueueItem]:
    """The rows by priority, highest first (ties by run and row index), at most ``budget`` of them;
    rows with no signal at all (priority 0) are left out."""
    if budget is not None and budget < 0:
        raise InputValidationError(f"budget must be >= 0, got {budget}")
    scored = [_score(s, pairs, weights or Weights()) for s in items]
    queue = sorted((q for q in scored if q.priority > 0), key=lambda q: (-q.priority, q.run_id, q.idx))
    return queue if budget is None else queue[:budget]


def _scale(values: list[float], threshold: float | None, probabilities: Mapping[str, float] | None,
           given: tuple[float, float] | None) -> tuple[float, float]:
    if given is not None:
        return given
    if probabilities:
        points = [float(k) for k in probabilities if _is_number(k)]
        if points:
            return min(points), max(points)
    # a judge's 1-5 scale unless the values say otherwise (0-1 metrics, 0-7 severities)
    lo, hi = (0.0, 1.0) if values and max(values) <= 1 and min(values) >= 0 else (1.0, 5.0)
    known = values + ([threshold] if threshold is not None else [])
    return min([lo, *known]), max([hi, *known])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def run_signals(
    store: Store, run_id: str, metrics: Sequence[str] | None = None,
    thresholds: Mapping[str, float] | None = None, scales: Mapping[str, tuple[float, float]] | None = None,
    id_column: str | None = None,
) -> list[Signals]:
    """Each row's :class:`Signals` from a stored run: its metrics' typed scores (all numeric ones,
    or ``metrics``), thresholds (``thresholds``, else the one stored with the score), score
    distributions (``score_probabilities`` in the properties), and the feedback linked to it."""
    values = [v for v in store.score_values(run_id) if v.ok and v.value is not None
              and (metrics is None or v.metric in metrics)]
    evaluators_of: dict[str, set[str]] = {}
    for v in values:
        evaluators_of.setdefault(v.metric, set()).add(v.evaluator)
    outputs = store.people.outputs_by_row(run_id)
    by_metric: dict[str, list[float]] = {}
    for v in values:
        by_metric.setdefault(v.metric, []).append(float(v.value or 0.0))
    judges: dict[int, dict[str, JudgeSignal]] = {}
    for v in values:
        out = outputs.get((v.idx, v.evaluator), {})
        props = out.get(f"{v.metric}_properties")
        probs = props.get("score_probabilities") if isinstance(props, dict) else None
        probs = probs if isinstance(probs, dict) and probs else None
        t = (thresholds or {}).get(v.metric, out.get(f"{v.metric}_threshold"))
        t = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
        lo, hi = _scale(by_metric[v.metric], t, probs, (scales or {}).get(v.metric))
        name = v.metric if len(evaluators_of[v.metric]) == 1 else f"{v.evaluator}.{v.metric}"
        judges.setdefault(v.idx, {})[name] = JudgeSignal(float(v.value or 0.0), t, lo, hi, probs, v.metric)
    feedback = run_feedback(store, run_id, id_column)
    rows = set(store.people.row_indices(run_id))
    return [Signals(run_id, i, judges.get(i, {}), feedback.get(i, {})) for i in sorted(rows | set(judges))]


def build_queue(
    store: Store, run_id: str, budget: int | None = 50, metrics: Sequence[str] | None = None,
    thresholds: Mapping[str, float] | None = None, weights: Weights | None = None,
    pairs: Sequence[tuple[str, str]] = (), scales: Mapping[str, tuple[float, float]] | None = None,
    id_column: str | None = None,
) -> list[QueueItem]:
    """The run's rows ranked for annotation (see the module), at most ``budget``."""
    signals = run_signals(store, run_id, metrics, thresholds, scales, id_column)
    return rank(signals, budget, weights, pairs)


__all__ = ["JudgeSignal", "QueueItem", "Signals", "Weights", "build_queue", "entropy_uncertainty", "rank",
           "run_signals", "threshold_uncertainty", "uncertainty_of", "user_signal"]
