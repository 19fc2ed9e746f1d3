"""One row's page: its inputs and target outputs, each evaluator's outputs (reasons, per-turn
results, properties), its typed scores, and the claim-level evidence of claim-based metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone.store.base import RunInfo, Store
from touchstone.ui.views import finite_dict

EVIDENCE_LISTS = (("claims", "claim"), ("sentences", "sentence"))
"""Where a result's properties keep claim-level evidence: a list of dicts under ``claims`` (each with
``claim``, ``verdict``, ``document``, ``reason``) or ``sentences`` (``sentence``, ``verdict``...)."""


def claim_evidence(
    scores: Mapping[tuple[int, str], tuple[Mapping[str, Any], Any]],
) -> list[dict[str, Any]]:
    """Every claim-level verdict of some results (``{(row, evaluator): (outputs, usage)}``), in row
    order: ``{row, evaluator, metric, claim, verdict, document, reason}``, read from the
    ``<m>_properties`` of each result."""
    found: list[dict[str, Any]] = []
    for (row, evaluator), (outputs, _) in sorted(scores.items()):
        for key, props in outputs.items():
            if not (key.endswith("_properties") and isinstance(props, Mapping)):
                continue
            for list_key, text_key in EVIDENCE_LISTS:
                items = props.get(list_key)
                if not isinstance(items, list):
                    continue
                for item in items:
                    if isinstance(item, Mapping) and text_key in item and "verdict" in item:
                        found.append({"row": row, "evaluator": evaluator,
                                      "metric": key[: -len("_properties")], "claim": str(item[text_key]),
                                      "verdict": str(item["verdict"]), "document": item.get("document"),
                                      "reason": str(item.get("reason") or "")})
    return found


def per_turn(value: Any) -> dict[str, Any] | None:
    """The SDK's ``evaluation_per_turn`` (``{key: [value of turn 1, turn 2, ...]}``) as a table:
    ``{"columns": keys, "rows": one list of cells per turn}``; None when there is none."""
    if not isinstance(value, dict) or not value:
        return None
    # each turn's properties (prompt, tokens, samples) are long and stay in "all outputs"
    kept = {str(k): v for k, v in value.items() if not str(k).endswith("_properties")}
    if not kept:
        return None
    columns = list(kept)
    lists = [v if isinstance(v, list) else [v] for v in kept.values()]
    turns = max(len(v) for v in lists)
    return {"columns": columns, "rows": [[v[t] if t < len(v) else None for v in lists] for t in range(turns)]}


def row_detail(store: Store, info: RunInfo, idx: int) -> dict[str, Any] | None:
    """Everything stored about one row: inputs, target outputs, each evaluator's outputs (reasons,
    per-turn results, properties), typed scores and claim-level evidence; None when there is no
    such row."""
    reads = store.dashboard
    row = reads.row(info.id, idx)
    if row is None:
        return None
    results: dict[str, dict[str, Any]] = {}
    for r in reads.evaluator_results(info.id, idx):
        decoded = r.outputs if isinstance(r.outputs, dict) else {}
        results[r.evaluator] = {
            "outputs": decoded, "failed": r.failed, "usage": r.usage,
            "reasons": [(str(k), v) for k, v in decoded.items()
                        if str(k).endswith(("_reason", "_error")) and v not in (None, "")],
            "per_turn": per_turn(decoded.get("evaluation_per_turn")),
        }
    # the evaluators named, so the key's prefix (run, evaluator, idx) finds the lines directly
    evaluators = sorted(set(results) | set(info.config.get("evaluators") or {}))
    scores = [
        {"evaluator": s.evaluator, "metric": s.metric, "value": s.value, "label": s.label,
         "status": s.status, "error_kind": s.error_kind, "passed": s.passed}
        for s in reads.metric_scores(info.id, [idx], evaluators)
    ]
    evidence = claim_evidence({(idx, ev): (r["outputs"], None) for ev, r in results.items()})
    return finite_dict({
        "run_id": info.id, "idx": idx, "source": row.source, "line": row.line, "inputs": row.data,
        "target": row.target, "target_error": row.target_error, "results": results, "scores": scores,
        "evidence": evidence,
    })
