"""Running planned conversations against a target: the attacker writes each user turn, the target
answers through the SDK's callback protocol, failures are recorded per conversation.

Reproducibility: which objectives run, in which order, and which jailbreak template each gets are
drawn from ``random.Random(seed)`` only; the attacker is called at temperature 0 with the seed passed
to the server, and results come back in plan order (not completion order). With a deterministic
attacker and target (or the judge cache), the same seed gives the same conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from touchstone.data.kinds import check_conversation
from touchstone.errors import RunAbortedError
from touchstone.evaluators.base import describe_exception
from touchstone.judges.config import JudgeSettings
from touchstone.judges.session import current_session, judge_session
from touchstone.simulator.attacker import Attacker
from touchstone.simulator.data import Objective, ScenarioInfo
from touchstone.simulator.output import CONVERSATION_SCHEMA
from touchstone.simulator.scenarios import SupportedLanguages
from touchstone.targets import TargetError, TargetTimeout, call_target

Progress = Callable[[int, int], None]
"""Called with (conversations done, total)."""

FirstTurn = Callable[[str], Awaitable[str]]
"""Writes a conversation's first user message (default: the attacker model, from the objective)."""


@dataclass
class ConversationPlan:
    """One conversation to simulate."""

    index: int
    scenario: ScenarioInfo
    objective: Objective
    turns: int
    parameters: dict[str, Any]
    """``template_parameters`` of the output (category, metadata)."""
    transform: Callable[[str], str] | None = None
    """Applied to the first user turn before it is sent (a jailbreak, an attack strategy)."""
    first_turn: FirstTurn | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def draw_seed(seed: int | None) -> int:
    """``seed``, or a fresh one (recorded in the output so that the run can be repeated)."""
    return seed if seed is not None else random.SystemRandom().randrange(1_000_000_000)


def interleave(groups: list[tuple[Objective, ...]]) -> list[Objective]:
    """The first objective of every group, then the second of every group... (so that a few results
    cover every category, as the SDK zips its templates)."""
    out: list[Objective] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


@contextlib.asynccontextmanager
async def attacker_session(
    settings: JudgeSettings | None, seed: int | None = None
) -> AsyncIterator[dict[str, Any] | None]:
    """The judge session the attacker's calls go through: the current one (inside a run), else a new
    one whose accounting is put in the yielded dict when the block ends. ``seed`` is sent with every
    request (servers that sample by seed then repeat themselves) unless the settings name one."""
    if current_session() is not None:
        yield None
        return
    if seed is not None and (settings is None or settings.seed is None):
        settings = dataclasses.replace(settings or JudgeSettings(), seed=seed)
    info: dict[str, Any] = {}
    async with judge_session(settings) as session:
        try:
            yield info
        finally:
            info.update(session.info())


def _context_value(context: Any) -> Any:
    """A reply's context as SPEC 2.2 accepts it (a string, documents, ``{"citations": ...}``); any
    other value is kept as JSON text so that the conversation stays valid for ``touchstone eval``."""
    if context is None or isinstance(context, str):
        return context
    probe = {"messages": [{"role": "assistant", "content": "", "context": context}]}
    if check_conversation(probe) is None:
        return context
    try:
        return json.dumps(context, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(context)


def _error(kind: str, message: str, turn: int) -> dict[str, Any]:
    return {"kind": kind, "message": message, "turn": turn}


async def run_conversation(
    plan: ConversationPlan,
    attacker: Attacker,
    target: Callable[..., Any],
    *,
    target_timeout: float | None,
    language: SupportedLanguages,
) -> dict[str, Any]:
    """One conversation; a failing attacker call or target ends it early with ``error`` recorded."""
    messages: list[dict[str, Any]] = []
    session_state: Any = None
    error: dict[str, Any] | None = None
    metadata = dict(plan.metadata)
    for turn in range(plan.turns):
        try:
            if turn == 0 and plan.first_turn is not None:
                text = await plan.first_turn(plan.objective.objective)
            else:
                history = [{"role": m["role"], "content": m["content"]} for m in messages]
                text = await attacker.next_turn(
                    plan.scenario, plan.objective, history, turn, plan.turns, language
                )
        except RunAbortedError:
            raise  # no attacker call can succeed: the whole simulation stops with that message
        except Exception as exc:
            error = _error("attacker_error", describe_exception(exc), turn)
            break
        if turn == 0 and plan.transform is not None:
            metadata["original_turn"] = text
            text = plan.transform(text)
        messages.append({"role": "user", "content": text})
        request = {
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "template_parameters": dict(plan.parameters),
            "$schema": CONVERSATION_SCHEMA,
        }
        try:
            content, context, result = await call_target(
                target, request, session_state=session_state, timeout=target_timeout
            )
        except TargetTimeout as exc:
            error = _error("target_timeout", str(exc), turn)
            break
        except TargetError as exc:
            error = _error("target_error", str(exc), turn)
            break
        if result.get("session_state") is not None:
            session_state = result["session_state"]
        messages.append({"role": "assistant", "content": content, "context": _context_value(context)})
    parameters = dict(plan.parameters)
    parameters["metadata"] = {**parameters.get("metadata", {}), **metadata}
    item: dict[str, Any] = {
        "template_parameters": parameters, "messages": messages, "$schema": CONVERSATION_SCHEMA
    }
    if error is not None:
        item["error"] = error
    return item


async def run_plans(
    plans: list[ConversationPlan],
    attacker: Attacker,
    target: Callable[..., Any],
    *,
    concurrency: int,
    target_timeout: float | None,
    language: SupportedLanguages = SupportedLanguages.English,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Every plan, at most ``concurrency`` conversations at a time; results in plan order."""
    limit = asyncio.Semaphore(max(1, min(int(concurrency), 1000)))
    done = 0
    results: list[dict[str, Any] | None] = [None] * len(plans)

    async def one(i: int, plan: ConversationPlan) -> None:
        nonlocal done
        async with limit:
            results[i] = await run_conversation(
                plan, attacker, target, target_timeout=target_timeout, language=language
            )
        done += 1
        if progress is not None:
            progress(done, len(plans))

    if progress is not None:
        progress(0, len(plans))
    await asyncio.gather(*(one(i, p) for i, p in enumerate(plans)))
    return [r for r in results if r is not None]


def template_parameters(
    objective: Objective, scenario: ScenarioInfo, seed: int, **extra: Any
) -> dict[str, Any]:
    """The output's ``template_parameters``: the category (as the SDK names it) and where it came from."""
    return {
        "category": objective.category,
        "metadata": {
            "scenario": scenario.value, "objective_id": objective.id, "randomization_seed": seed, **extra
        },
    }
