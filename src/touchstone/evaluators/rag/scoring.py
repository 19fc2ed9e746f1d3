"""The RAG metrics' formulas, as pure functions of verdicts (no judge, no I/O), so each can be
checked against its written-out definition and against ragas 0.4.3's scoring functions
(``tests/evaluators/rag/golden/``).

Where ragas returns NaN (nothing to count), these functions return ``None`` and the evaluator gives
the row a documented outcome instead (see each evaluator). ragas' smoothing constants are not
copied: ``context_precision`` divides by the number of useful chunks (ragas adds 1e-10, a relative
difference below 1e-10), and ``context_entity_recall`` by the number of distinct reference entities
(ragas adds 1e-8 to the length of the entity list)."""

from __future__ import annotations

from collections.abc import Sequence


def supported_share(verdicts: Sequence[bool]) -> float | None:
    """faithfulness and context_recall: ``supported / total`` over the claims; None without claims."""
    if not verdicts:
        return None
    return sum(1 for v in verdicts if v) / len(verdicts)


def average_precision(useful: Sequence[bool]) -> float:
    """context_precision: ``Σ_k precision@k · v_k / Σ_k v_k`` over the retrieved chunks in rank order
    (``v_k`` = 1 when chunk ``k`` is useful); 0.0 when no chunk is useful or none was retrieved."""
    hits = 0
    total = 0.0
    for k, v in enumerate(useful, 1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def entity_recall(reference_entities: Sequence[str], context_entities: Sequence[str]) -> float | None:
    """context_entity_recall: ``|E_ref ∩ E_ctx| / |E_ref|`` over distinct entities; None when the
    reference names no entity."""
    ref = set(reference_entities)
    if not ref:
        return None
    return len(ref & set(context_entities)) / len(ref)


def fbeta(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    """F-beta from counts: ``(1 + β²)·P·R / (β²·P + R)``, with P = tp/(tp+fp) and R = tp/(tp+fn)
    (each 0 when its denominator is 0), and 0.0 when P and R are both 0."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    if precision == 0 and recall == 0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall)


def claim_fbeta(
    response_supported: Sequence[bool], reference_covered: Sequence[bool], beta: float = 1.0
) -> float:
    """answer_correctness' factual part: TP = response claims the reference supports, FP = response
    claims it does not, FN = reference claims the response does not state; F-beta of those, and 1.0
    when neither text has a claim (as ragas)."""
    if not response_supported and not reference_covered:
        return 1.0
    tp = sum(1 for v in response_supported if v)
    fp = len(response_supported) - tp
    fn = sum(1 for v in reference_covered if not v)
    return fbeta(tp, fp, fn, beta)


def weighted_blend(values: Sequence[float], weights: Sequence[float]) -> float:
    """``Σ w_i·x_i / Σ w_i`` (numpy's ``average`` with weights); weights non-negative, not all 0."""
    total = float(sum(weights))
    if total <= 0 or any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative and not all zero")
    return sum(w * x for w, x in zip(weights, values, strict=True)) / total


__all__ = ["average_precision", "claim_fbeta", "entity_recall", "fbeta", "supported_share", "weighted_blend"]
