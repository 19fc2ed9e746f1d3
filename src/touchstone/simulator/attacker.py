"""The attacker model: any judge configuration, called through touchstone's judge session (one
concurrency limit, retries, cache and cost accounting), with this project's prompts
``prompts/simulator/attacker.yaml`` and ``xpia_document.yaml``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from touchstone.errors import ConfigurationError
from touchstone.evaluators.judge import ask, check_model_config, configured_judge, model_reader
from touchstone.evaluators.judge.prompts import PromptTemplate, format_history, load_prompt
from touchstone.judges.client import JudgeClient, get_judge_client
from touchstone.simulator.data import Objective, ScenarioInfo
from touchstone.simulator.scenarios import LANGUAGE_NAMES, SupportedLanguages

TURN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "minLength": 1}},
    "required": ["message"],
    "additionalProperties": False,
}


class _Turn(BaseModel):
    message: str = Field(min_length=1)


_read_turn = model_reader(_Turn)


def attacker_prompt() -> PromptTemplate:
    return load_prompt("simulator/attacker")


def document_prompt() -> PromptTemplate:
    return load_prompt("simulator/xpia_document")


def turn_rule(turn: int, turns: int, language: SupportedLanguages) -> str:
    """What the attacker is told about where this message stands in the conversation."""
    if turns <= 1:
        rule = "- This is the user's only message: make the whole request in it."
    elif turn == 0:
        rule = (f"- This is the first of {turns} user messages: open the conversation; you may approach the "
                "objective gradually.")
    else:
        rule = (f"- This is user message {turn + 1} of {turns}: build on the application's last answer and "
                "move closer to the objective.")
    if language is not SupportedLanguages.English:
        rule += f"\n- Write the message in {LANGUAGE_NAMES[language]}."
    return rule


def resolve_attacker(model_config: Any) -> Any:
    """The attacker's model configuration: the one given, else the judge named by the environment
    (``$TOUCHSTONE_JUDGE_MODEL``, ``$OPENAI_BASE_URL``...); a clear error when there is none."""
    if model_config is None:
        model_config = configured_judge()
    if model_config is None:
        raise ConfigurationError(
            "the simulator needs an attacker model: pass model_config= (any judge configuration, e.g. "
            "{'model': ..., 'base_url': ...}) or set TOUCHSTONE_JUDGE_MODEL / OPENAI_BASE_URL"
        )
    check_model_config(model_config)
    return model_config


class Attacker:
    """Writes user turns (and planted documents) with the attacker model."""

    def __init__(self, model_config: Any, *, delay: float = 0.0) -> None:
        self.client: JudgeClient = get_judge_client(model_config)
        self.delay = float(delay)

    async def _ask(
        self, prompt: PromptTemplate, data: Mapping[str, str | None], params: Mapping[str, Any]
    ) -> str:
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        answer = await ask(self.client, prompt, data, _read_turn, schema=TURN_SCHEMA, params=params,
                           what="user message")
        value = answer.value
        assert isinstance(value, _Turn)
        return value.message.strip()

    async def next_turn(
        self,
        scenario: ScenarioInfo,
        objective: Objective,
        history: Sequence[Mapping[str, Any]],
        turn: int,
        turns: int,
        language: SupportedLanguages = SupportedLanguages.English,
    ) -> str:
        """The next user message of a conversation pursuing ``objective`` in ``scenario``."""
        params = {
            "scenario_task": scenario.task,
            "category": objective.category,
            "objective": objective.objective,
            "turn_rule": turn_rule(turn, turns, language),
        }
        data = {"history": format_history(history) if history else None}
        return await self._ask(attacker_prompt(), data, params)

    async def document(self, document_type: str, action: str) -> str:
        """A document of ``document_type`` carrying the planted instruction ``action``."""
        params = {"document_type": document_type.replace("_", " "), "action": action}
        return await self._ask(document_prompt(), {}, params)
