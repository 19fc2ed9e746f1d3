"""Conversations (SPEC 2.2, 3.2): splitting into assistant turns, and aggregating per-turn scores.

Each assistant turn is judged with the history before it, the user message(s) it answers and the
documents retrieved for it (its own ``context``, then the conversation's global ``context``). The
output has the conversation's aggregate under the usual keys and, as the compatible SDK does, every
per-turn output under ``evaluation_per_turn`` (``{key: [value per turn]}``). When a turn cannot be
scored the conversation has no honest aggregate: the row gets ``m_error`` naming the turn, and the
turns that did score stay visible in ``evaluation_per_turn``.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from touchstone.data.kinds import context_documents
from touchstone.errors import RunAbortedError
from touchstone.evaluators.base import Evaluator, Outputs
from touchstone.scores import ErrorKind

if TYPE_CHECKING:
    # judging imports this module to score conversations; the evaluator type is named here only
    # for the checker, so there is no import cycle at run time.
    from touchstone.evaluators.judging import JudgeEvaluator


@dataclass
class Turn:
    """One assistant turn and what it is judged with."""

    index: int
    """1-based number of the assistant turn."""
    response: str
    query: str | None
    history: list[dict[str, str]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)
    ground_truth: str | None = None

    @property
    def history_text(self) -> str | None:
        from touchstone.evaluators.prompting import format_history

        return format_history(self.history) if self.history else None


def _documents(value: Any, default_prefix: str) -> list[dict[str, Any]]:
    docs = context_documents(value)
    if isinstance(value, str):
        docs[0]["id"] = default_prefix
    return docs


def split_turns(conversation: Mapping[str, Any]) -> list[Turn]:
    """The assistant turns of ``conversation`` (``{"messages": [...], "context"?: ...}``).

    A turn's query is the user message(s) since the previous assistant turn (None when the assistant
    speaks first); its history is every message before those; its documents are the ones attached to
    the assistant message and to the user message(s) it answers, then the global context's."""
    messages: Sequence[Mapping[str, Any]] = conversation.get("messages") or []
    global_docs = (
        _documents(conversation.get("context"), "conversation-context") if conversation.get("context") else []
    )
    turns: list[Turn] = []
    pending: list[int] = []  # indices of user messages since the last assistant turn
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user":
            pending.append(i)
        elif role == "assistant":
            first = pending[0] if pending else i
            history = [
                {"role": str(m.get("role")), "content": str(m.get("content", ""))} for m in messages[:first]
            ]
            query = "\n\n".join(str(messages[j].get("content", "")) for j in pending) if pending else None
            docs: list[dict[str, Any]] = []
            for j in pending:
                if messages[j].get("context"):
                    docs.extend(_documents(messages[j]["context"], f"turn-{len(turns) + 1}-query-context"))
            if msg.get("context"):
                docs.extend(_documents(msg["context"], f"turn-{len(turns) + 1}-context"))
            docs.extend(global_docs)
            gt = msg.get("ground_truth")
            turns.append(
                Turn(
                    index=len(turns) + 1,
                    response=str(msg.get("content", "")),
                    query=query,
                    history=history,
                    documents=docs,
                    ground_truth=gt if isinstance(gt, str) and gt else None,
                )
            )
            pending = []
    return turns


def aggregate_scores(scores: Sequence[float], how: str) -> tuple[float, int]:
    """The aggregate of per-turn scores and the 0-based turn it comes from (for min/max; for mean,
    the lowest turn, whose reason is the most informative)."""
    if how == "max":
        i = max(range(len(scores)), key=lambda k: scores[k])
        return scores[i], i
    low = min(range(len(scores)), key=lambda k: scores[k])
    if how == "min":
        return scores[low], low
    return statistics.fmean(scores), low


def per_turn_columns(outputs: Sequence[Outputs]) -> dict[str, list[Any]]:
    """``{key: [value for each turn]}`` over the keys any turn has (None where a turn lacks one)."""
    keys: list[str] = []
    for out in outputs:
        for k in out:
            if k not in keys:
                keys.append(k)
    return {k: [out.get(k) for out in outputs] for k in keys}


async def score_conversation(evaluator: JudgeEvaluator, conversation: Mapping[str, Any]) -> Outputs:
    """Judge every assistant turn (concurrently) and aggregate with the evaluator's
    ``conversation_aggregation`` (min, mean or max)."""
    turns = split_turns(conversation)
    if not turns:
        return evaluator.failure("the conversation has no assistant turn")
    outs = await gather_outputs(evaluator, [evaluator._turn(t) for t in turns])
    return combine_turns(evaluator, outs)


async def gather_outputs(evaluator: Evaluator, coros: Sequence[Any]) -> list[Outputs]:
    """Run judgements concurrently; each one's failure (other than an aborted run) becomes a failure
    dict, so one bad turn does not hide the others."""
    results = await asyncio.gather(*coros, return_exceptions=True)
    outs: list[Outputs] = []
    for r in results:
        if isinstance(r, RunAbortedError):
            raise r
        if isinstance(r, BaseException):
            if not isinstance(r, Exception):
                raise r
            outs.append(evaluator.failure(r))
        else:
            outs.append(r)
    return outs


def combine_turns(evaluator: JudgeEvaluator, outs: Sequence[Outputs]) -> Outputs:
    """The conversation's outputs from its turns' outputs."""
    per_turn = per_turn_columns(outs)
    key = evaluator.score_key
    err_key = evaluator.error_key
    failed = [(i, o[err_key]) for i, o in enumerate(outs) if o.get(err_key)]
    if failed:
        i, cause = failed[0]
        more = f" ({len(failed)} of {len(outs)} turns failed)" if len(failed) > 1 else ""
        result = evaluator.failure(
            f"turn {i + 1} of {len(outs)}: {cause}{more}", kind=ErrorKind.PARTIAL.value
        )
        result["evaluation_per_turn"] = per_turn
        return result
    scores = [float(o[key]) for o in outs]
    how = evaluator.conversation_aggregation
    value, pick = aggregate_scores(scores, how)
    if all(float(s).is_integer() for s in scores) and how != "mean":
        value = int(value)
    reason = outs[pick].get(f"{evaluator.prefix}_reason") or ""
    label = {"min": "lowest", "max": "highest", "mean": "lowest"}[how]
    prefix = (
        f"Turn {pick + 1} of {len(outs)} ({label}"
        + (f"; mean over {len(outs)} turns" if how == "mean" else "")
        + "): "
    )
    properties: dict[str, Any] = {
        "turns": len(outs),
        "aggregation": how,
        "aggregate_turn": pick + 1 if how != "mean" else None,
    }
    first_props = outs[0].get(f"{evaluator.prefix}_properties")
    if isinstance(first_props, Mapping):
        for k in ("prompt", "prompt_version", "prompt_hash", "judge_model"):
            if k in first_props:
                properties[k] = first_props[k]
        modes = {str((o.get(f"{evaluator.prefix}_properties") or {}).get("score_mode")) for o in outs}
        properties["score_mode"] = modes.pop() if len(modes) == 1 else "mixed"
    own = {key, *(f"{evaluator.prefix}_{s}" for s in ("score", "passed", "result", "reason", "status",
                                                        "threshold", "properties")), f"gpt_{key}"}
    extra = {k: v for k, v in outs[pick].items() if k not in own and k != "evaluation_per_turn"}
    for k, v in extra.items():
        vals = per_turn.get(k) or []
        if vals and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals):
            extra[k] = aggregate_scores([float(x) for x in vals], how)[0]
        else:
            extra[k] = v
    out = evaluator.result(value, reason=prefix + str(reason), properties=properties, **extra)
    out["evaluation_per_turn"] = per_turn
    return out
