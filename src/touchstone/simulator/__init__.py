"""Adversarial simulators, attack strategies and red-team scorecards (SPEC 3.6), with the compatible
SDK's names and call shapes, driven by any attacker model (``model_config=``) and run offline.

- :class:`AdversarialSimulator`, :class:`DirectAttackSimulator` (``{"jailbreak", "regular"}`` from one
  seed), :class:`IndirectAttackSimulator`, :class:`AdversarialScenario`;
- targets (:mod:`touchstone.targets`): the SDK's async callback, an OpenAI-compatible chat endpoint or
  a JSON POST;
- :mod:`touchstone.simulator.strategies` (deterministic transforms of attack turns) and
  :mod:`touchstone.simulator.redteam` (attack success rates with Wilson intervals).
"""

from touchstone.simulator.output import JsonLineChatProtocol, JsonLineList
from touchstone.simulator.scenarios import (
    AdversarialScenario,
    AdversarialScenarioJailbreak,
    SupportedLanguages,
)
from touchstone.simulator.simulators import (
    AdversarialSimulator,
    DirectAttackSimulator,
    IndirectAttackSimulator,
)

__all__ = [
    "AdversarialScenario",
    "AdversarialScenarioJailbreak",
    "AdversarialSimulator",
    "DirectAttackSimulator",
    "IndirectAttackSimulator",
    "JsonLineChatProtocol",
    "JsonLineList",
    "SupportedLanguages",
]
