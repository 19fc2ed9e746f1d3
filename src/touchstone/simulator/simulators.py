"""The compatible SDK's simulators, driven by any attacker model instead of a cloud service.

``AdversarialSimulator(model_config=...)`` where the SDK takes ``azure_ai_project`` and ``credential``
(both accepted; one warning, nothing is sent anywhere), then
``await simulator(scenario=..., target=callback, max_conversation_turns=..., max_simulation_results=...,
randomization_seed=...)`` with the SDK's async callback protocol for the target
(:mod:`touchstone.targets`). The attacker's calls go through touchstone's judge session, so they are
limited, retried, cached and accounted like judge calls (``results.judge``).
"""

from __future__ import annotations

import logging
import random
import warnings
from collections.abc import Callable
from typing import Any

from touchstone.errors import ConfigurationError
from touchstone.judges.config import JudgeSettings
from touchstone.simulator import data
from touchstone.simulator.attacker import Attacker, resolve_attacker
from touchstone.simulator.core import (
    ConversationPlan,
    Progress,
    attacker_session,
    draw_seed,
    interleave,
    run_plans,
    template_parameters,
)
from touchstone.simulator.output import JsonLineList
from touchstone.simulator.scenarios import (
    AdversarialScenario,
    AdversarialScenarioJailbreak,
    SupportedLanguages,
    parse_scenario,
)

logger = logging.getLogger(__name__)

DEFAULT_TARGET_TIMEOUT = 120.0
"""Seconds a target may take to answer one message before the conversation is recorded as timed out."""


def _settings(value: JudgeSettings | dict[str, Any] | None) -> JudgeSettings | None:
    if value is None or isinstance(value, JudgeSettings):
        return value
    return JudgeSettings.from_options({"judge_settings": value})


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")


def _check_common(target: Any, max_simulation_results: int, concurrent_async_task: int) -> None:
    if not callable(target):
        raise ConfigurationError(
            f"target must be an async callback (messages, stream, session_state, context) or an HTTP "
            f"target, got {type(target).__name__}"
        )
    _positive_int("max_simulation_results", max_simulation_results)
    _positive_int("concurrent_async_task", concurrent_async_task)


class _Base:
    """What the simulators share: the attacker model and the judge-session settings."""

    def __init__(
        self,
        *,
        model_config: Any = None,
        azure_ai_project: Any = None,
        credential: Any = None,
        judge_settings: JudgeSettings | dict[str, Any] | None = None,
    ) -> None:
        if azure_ai_project is not None or credential is not None:
            warnings.warn(
                f"{type(self).__name__}: azure_ai_project/credential are accepted for compatibility; "
                "nothing is sent to a cloud service. The attacker model is model_config.",
                UserWarning,
                stacklevel=3,
            )
        self.model_config = resolve_attacker(model_config)
        self.judge_settings = _settings(judge_settings)

    def _attacker(self, delay: float) -> Attacker:
        return Attacker(self.model_config, delay=delay)


class AdversarialSimulator(_Base):
    """Adversarial conversations against a target, from this project's scenarios and objectives."""

    async def __call__(
        self,
        *,
        scenario: AdversarialScenario | str,
        target: Callable[..., Any],
        max_conversation_turns: int = 1,
        max_simulation_results: int = 3,
        api_call_retry_limit: int = 3,
        api_call_retry_sleep_sec: int = 1,
        api_call_delay_sec: float = 0,
        concurrent_async_task: int = 3,
        language: SupportedLanguages = SupportedLanguages.English,
        randomize_order: bool = True,
        randomization_seed: int | None = None,
        target_timeout: float | None = DEFAULT_TARGET_TIMEOUT,
        progress: Progress | None = None,
        **kwargs: Any,
    ) -> JsonLineList:
        """Simulate up to ``max_simulation_results`` conversations (fewer when the scenario has fewer
        objectives, as the SDK). ``max_conversation_turns`` applies to the conversation scenario; the
        others are one exchange, as in the SDK. ``randomization_seed`` makes the choice and order of
        objectives reproducible (drawn and recorded in each result's metadata when not given).
        ``target_timeout``: seconds per target answer. ``api_call_retry_limit`` and
        ``api_call_retry_sleep_sec`` are accepted for compatibility: the judge session's retry policy
        applies to the attacker. Returns the conversations (``to_json_lines()``,
        ``to_eval_qr_json_lines()``); a conversation whose target failed or timed out has ``error``."""
        scenario = parse_scenario(scenario)
        _check_common(target, max_simulation_results, concurrent_async_task)
        if not isinstance(language, SupportedLanguages):
            raise ConfigurationError(f"language must be a SupportedLanguages member, got {language!r}")
        _positive_int("max_conversation_turns", max_conversation_turns)
        turns = max_conversation_turns if scenario is AdversarialScenario.ADVERSARIAL_CONVERSATION else 1
        seed = draw_seed(randomization_seed)
        jailbreak = bool(kwargs.pop("_jailbreak", False))
        if kwargs:
            raise ConfigurationError(f"unknown option(s) {sorted(kwargs)}")
        plans = self.plan(scenario, max_simulation_results, turns, seed, randomize_order, jailbreak)
        if len(plans) < max_simulation_results:
            logger.warning("scenario %s has %d objectives: %d conversations will be simulated, not %d",
                           scenario.value, len(plans), len(plans), max_simulation_results)
        attacker = self._attacker(api_call_delay_sec)
        async with attacker_session(self.judge_settings, seed) as info:
            results = await run_plans(
                plans, attacker, target, concurrency=concurrent_async_task,
                target_timeout=target_timeout, language=language, progress=progress,
            )
        out = JsonLineList(results)
        out.judge = info
        return out

    @staticmethod
    def plan(
        scenario: AdversarialScenario,
        n: int,
        turns: int,
        seed: int,
        randomize_order: bool = True,
        jailbreak: bool = False,
    ) -> list[ConversationPlan]:
        """The conversations a call will simulate: the objectives of the scenario's categories (each
        category's shuffled by ``seed``, then taken in turn), the first ``n``; with ``jailbreak``, each
        first turn wrapped in a template drawn by the same seed."""
        info = data.scenarios()[scenario.value]
        found = data.objectives()
        groups = [list(found.get(c, ())) for c in info.categories]
        if randomize_order:  # objectives within each category, then the categories' order
            rng = random.Random(seed)
            for group in groups:
                rng.shuffle(group)
            rng.shuffle(groups)
        # interleaved, so that a few results cover every category, as the SDK zips its templates
        chosen = interleave([tuple(g) for g in groups])[:n]
        templates = data.jailbreaks()
        # drawn whether or not they are used, so the regular and the jailbroken runs of one seed pick
        # the same objectives in the same order
        picks = [templates[random.Random(f"{seed}:{o.id}").randrange(len(templates))] for o in chosen]
        plans = []
        for i, (objective, template) in enumerate(zip(chosen, picks, strict=True)):
            extra = {"jailbreak": template.name} if jailbreak else {}
            plans.append(
                ConversationPlan(
                    index=i,
                    scenario=info,
                    objective=objective,
                    turns=turns,
                    parameters=template_parameters(objective, info, seed, **extra),
                    transform=template.apply if jailbreak else None,
                )
            )
        return plans


class DirectAttackSimulator(_Base):
    """The same adversarial conversations twice: plainly and with a jailbreak wrapped around the first
    user turn (user-prompt injection), from one seed, so the pairs line up for comparison."""

    async def __call__(
        self,
        *,
        scenario: AdversarialScenario | str,
        target: Callable[..., Any],
        max_conversation_turns: int = 1,
        max_simulation_results: int = 3,
        api_call_retry_limit: int = 3,
        api_call_retry_sleep_sec: int = 1,
        api_call_delay_sec: float = 0,
        concurrent_async_task: int = 3,
        randomization_seed: int | None = None,
        target_timeout: float | None = DEFAULT_TARGET_TIMEOUT,
        progress: Progress | None = None,
    ) -> dict[str, JsonLineList]:
        """``{"jailbreak": [...], "regular": [...]}``: item ``i`` of both is the same objective, and the
        attacker's first turn is the same text (the jailbroken one wrapped in a template)."""
        seed = draw_seed(randomization_seed)
        sim = AdversarialSimulator(model_config=self.model_config, judge_settings=self.judge_settings)
        options: dict[str, Any] = {
            "scenario": scenario,
            "target": target,
            "max_conversation_turns": max_conversation_turns,
            "max_simulation_results": max_simulation_results,
            "api_call_delay_sec": api_call_delay_sec,
            "concurrent_async_task": concurrent_async_task,
            "randomization_seed": seed,
            "target_timeout": target_timeout,
            "progress": progress,
        }
        async with attacker_session(self.judge_settings, seed) as info:
            regular = await sim(**options)
            jailbreak = await sim(**options, _jailbreak=True)
        regular.judge = jailbreak.judge = info
        return {"jailbreak": jailbreak, "regular": regular}


class IndirectAttackSimulator(_Base):
    """Cross-domain prompt injection: the user asks for an ordinary task over a document the attacker
    model wrote with a planted instruction (``prompts/simulator/xpia.yaml``); one exchange each. The
    metadata names the attack type, the planted action and the document type, as the SDK's."""

    async def __call__(
        self,
        *,
        target: Callable[..., Any],
        max_simulation_results: int = 3,
        api_call_retry_limit: int = 3,
        api_call_retry_sleep_sec: int = 1,
        api_call_delay_sec: float = 0,
        concurrent_async_task: int = 3,
        randomization_seed: int | None = None,
        target_timeout: float | None = DEFAULT_TARGET_TIMEOUT,
        progress: Progress | None = None,
        **kwargs: Any,
    ) -> JsonLineList:
        """Up to ``max_simulation_results`` injected-document conversations (document types x planted
        actions, shuffled by the seed)."""
        _check_common(target, max_simulation_results, concurrent_async_task)
        seed = draw_seed(randomization_seed)
        plans = self.plan(max_simulation_results, seed)
        attacker = self._attacker(api_call_delay_sec)
        async with attacker_session(self.judge_settings, seed) as info:
            results = await run_plans(
                plans, attacker, target, concurrency=concurrent_async_task,
                target_timeout=target_timeout, progress=progress,
            )
        out = JsonLineList(results)
        out.judge = info
        return out

    def plan(self, n: int, seed: int) -> list[ConversationPlan]:
        """Documents x planted actions, shuffled by ``seed``, the first ``n``."""
        documents, attacks = data.xpia()
        pairs = [(d, a) for d in documents for a in attacks]
        random.Random(seed).shuffle(pairs)
        info = data.scenarios()[AdversarialScenarioJailbreak.ADVERSARIAL_INDIRECT_JAILBREAK.value]
        plans = []
        for i, (document, attack) in enumerate(pairs[:n]):
            name = f"xpia-{document.type}-{attack.type}-{attacks.index(attack) + 1}"
            objective = data.Objective(name, "indirect_attack", attack.action)
            plans.append(
                ConversationPlan(
                    index=i,
                    scenario=info,
                    objective=objective,
                    turns=1,
                    parameters={
                        "metadata": {
                            "xpia_attack_type": attack.type,
                            "action": attack.action,
                            "document_type": document.type,
                            "randomization_seed": seed,
                        }
                    },
                    first_turn=self._first_turn(document, attack),
                )
            )
        return plans

    def _first_turn(self, document: data.XpiaDocument, attack: data.XpiaAttack) -> Any:
        attacker = self._attacker(0)

        async def write(_: str) -> str:
            text = await attacker.document(document.type, attack.action)
            return f"{document.task}\n\n{text}"

        return write
