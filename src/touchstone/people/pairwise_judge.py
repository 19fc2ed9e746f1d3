"""Pairwise votes from a judge model: for each pair of responses to the same query, the judge is asked
which answers better (``prompts/pairwise.yaml``, ties allowed), once in each order. When the two
orders agree that is the vote; when they disagree (the judge preferred a position, not a response)
the vote is a tie. Votes come out in the battle format :mod:`touchstone.people.votes` reads.

Pairs are rows with ``query``, ``model_a``, ``model_b``, ``response_a`` and ``response_b`` (and an
optional ``question_id`` or ``id``, carried into the vote). Every row is checked before any call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from touchstone.data.loaders import Record, load_records
from touchstone.errors import InputValidationError, Problem, RunAbortedError
from touchstone.evaluators.base import describe_exception
from touchstone.evaluators.judge import ask, check_model_config
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.judges.config import JudgeSettings
from touchstone.judges.parsing import extract_json

PAIR_FIELDS = ("query", "model_a", "model_b", "response_a", "response_b")
PAIR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string"}, "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
    "required": ["reason", "winner"],
    "additionalProperties": False,
}


def pairwise_prompt() -> PromptTemplate:
    return load_prompt("pairwise")


def read_pick(text: str) -> tuple[str | None, str | None]:
    """The reply's ``winner`` as ``"A"``, ``"B"`` or ``"tie"`` (case and spaces forgiven)."""
    obj = extract_json(text)
    if obj is None:
        return None, "the reply holds no JSON object"
    winner = obj.get("winner")
    if isinstance(winner, str):
        w = winner.strip().strip('"').lower()
        if w in ("a", "b"):
            return w.upper(), None
        if w == "tie":
            return "tie", None
    return None, f'"winner" must be "A", "B" or "tie", got {winner!r}'[:200]


def combine(first: str, second: str) -> str:
    """The vote from both orders: ``first`` asked with (A, B) = (model_a, model_b), ``second`` with
    them swapped. The same preference both ways is the vote; anything else is a tie."""
    as_first = {"A": "model_a", "B": "model_b", "tie": "tie"}[first]
    as_second = {"A": "model_b", "B": "model_a", "tie": "tie"}[second]
    return as_first if as_first == as_second else "tie"


@dataclass
class PairwiseResult:
    """The votes (battle format, with the judge's two picks) and the pairs that got no vote."""

    votes: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    judge: dict[str, Any] = field(default_factory=dict)

    @property
    def position_ties(self) -> int:
        """Votes that are ties because the two orders disagreed."""
        return sum(1 for v in self.votes if not v["judge"]["orders_agree"])


def check_pairs(records: Sequence[Record]) -> None:
    """Raise :class:`InputValidationError` listing every pair that is not usable."""
    problems = []
    for r in records:
        for key in PAIR_FIELDS:
            value = r.data.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(Problem(r.source, r.line, key, "expected non-empty text"))
        if r.data.get("model_a") == r.data.get("model_b") and isinstance(r.data.get("model_a"), str):
            problems.append(
                Problem(r.source, r.line, "model_b", "the two responses come from the same system")
            )
    if problems:
        raise InputValidationError(problems)
    if not records:
        raise InputValidationError([Problem("pairs", None, None, "no pairs to judge")])


async def _judge_pair(client: Any, prompt: PromptTemplate, data: Mapping[str, Any]) -> dict[str, Any]:
    q = str(data["query"])
    ab = {"query": q, "response_a": str(data["response_a"]), "response_b": str(data["response_b"])}
    ba = {"query": q, "response_a": str(data["response_b"]), "response_b": str(data["response_a"])}
    first, second = await asyncio.gather(
        ask(client, prompt, ab, read_pick, schema=PAIR_SCHEMA, what="pairwise verdict"),
        ask(client, prompt, ba, read_pick, schema=PAIR_SCHEMA, what="pairwise verdict"),
    )
    winner = combine(first.value, second.value)
    vote: dict[str, Any] = {}
    for key in ("question_id", "id"):
        if key in data:
            vote["question_id"] = data[key]
            break
    vote.update(model_a=data["model_a"], model_b=data["model_b"], winner=winner)
    vote["judge"] = {
        "order_ab": first.value,
        "order_ba": second.value,
        "orders_agree": combine(first.value, second.value) != "tie" or first.value == second.value == "tie",
        "model": first.properties.get("judge_model", ""),
        "prompt_hash": first.properties.get("prompt_hash", ""),
    }
    return vote


async def ajudge_votes(
    pairs: str | Path | Sequence[Mapping[str, Any]],
    model_config: Any,
    *,
    settings: JudgeSettings | None = None,
    progress: Callable[[], None] | None = None,
) -> PairwiseResult:
    """Judge every pair in both orders (see the module); a pair whose calls fail is listed in
    ``failures`` with the cause. :class:`RunAbortedError` (no call can succeed) propagates."""
    from touchstone.judges.client import get_judge_client
    from touchstone.judges.session import current_session, judge_session

    records = load_records(pairs)
    check_pairs(records)
    check_model_config(model_config)
    prompt = pairwise_prompt()
    result = PairwiseResult()

    async def one(record: Record) -> None:
        try:
            result.votes.append({"_line": record.line, **await _judge_pair(client, prompt, record.data)})
        except RunAbortedError:
            raise
        except Exception as exc:  # a pair without a vote is data: its cause is reported
            result.failures.append(
                {"source": record.source, "line": record.line, "error": describe_exception(exc)}
            )
        finally:
            if progress is not None:
                progress()

    async def run_all() -> None:
        await asyncio.gather(*(one(r) for r in records))

    if current_session() is not None:
        client = get_judge_client(model_config)
        await run_all()
    else:
        async with judge_session(settings) as session:
            client = get_judge_client(model_config, settings=settings)
            await run_all()
            result.judge = session.info()
    result.votes.sort(key=lambda v: v.pop("_line"))
    return result


def judge_votes(
    pairs: str | Path | Sequence[Mapping[str, Any]],
    model_config: Any,
    *,
    settings: JudgeSettings | None = None,
    progress: Callable[[], None] | None = None,
) -> PairwiseResult:
    """:func:`ajudge_votes` from synchronous code."""
    return asyncio.run(ajudge_votes(pairs, model_config, settings=settings, progress=progress))
