"""The simulator's packaged material: scenarios, objectives, jailbreak templates and indirect-attack
documents (``prompts/simulator/*.yaml``, written by this project), read once and checked."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from touchstone.errors import ConfigurationError
from touchstone.evaluators.judge.prompts import prompts_dir


@dataclass(frozen=True)
class Objective:
    """One test objective: what a tester tries to get the application to produce, in one category."""

    id: str
    category: str
    objective: str


@dataclass(frozen=True)
class ScenarioInfo:
    """A scenario's task for the attacker model and the categories it covers."""

    value: str
    task: str
    categories: tuple[str, ...]


@dataclass(frozen=True)
class JailbreakTemplate:
    """A framing around an attack turn; ``{attack}`` marks where the turn goes."""

    name: str
    text: str

    def apply(self, attack: str) -> str:
        # str.replace, not str.format: the attack turn may itself hold braces
        return self.text.replace("{attack}", attack)


@dataclass(frozen=True)
class XpiaDocument:
    type: str
    task: str


@dataclass(frozen=True)
class XpiaAttack:
    type: str
    action: str


def _load(name: str) -> Mapping[str, Any]:
    path = Path(prompts_dir()) / "simulator" / f"{name}.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"simulator data {path}: {exc}") from None
    if not isinstance(doc, Mapping):
        raise ConfigurationError(f"simulator data {path}: expected a mapping")
    return doc


@functools.cache
def scenarios() -> dict[str, ScenarioInfo]:
    """Every scenario by its value (``adv_qa``...)."""
    doc = _load("scenarios")
    return {
        value: ScenarioInfo(value, str(entry["task"]).strip(), tuple(entry["categories"]))
        for value, entry in doc["scenarios"].items()
    }


@functools.cache
def objectives() -> dict[str, tuple[Objective, ...]]:
    """The objectives of each category, in file order."""
    doc = _load("scenarios")
    return {
        category: tuple(Objective(str(o["id"]), category, str(o["objective"]).strip()) for o in items)
        for category, items in doc["objectives"].items()
    }


@functools.cache
def jailbreaks() -> tuple[JailbreakTemplate, ...]:
    """The jailbreak templates, in file order."""
    doc = _load("jailbreaks")
    found = tuple(JailbreakTemplate(str(t["name"]), str(t["text"])) for t in doc["templates"])
    for template in found:
        if "{attack}" not in template.text:
            raise ConfigurationError(f"jailbreak template {template.name!r} has no {{attack}} placeholder")
    return found


def jailbreak(name: str) -> JailbreakTemplate:
    """One jailbreak template by name."""
    for template in jailbreaks():
        if template.name == name:
            return template
    known = ", ".join(t.name for t in jailbreaks())
    raise ConfigurationError(f"no jailbreak template named {name!r}; expected one of {known}")


@functools.cache
def xpia() -> tuple[tuple[XpiaDocument, ...], tuple[XpiaAttack, ...]]:
    """The indirect-attack documents (type, user task) and planted actions (type, action)."""
    doc = _load("xpia")
    documents = tuple(XpiaDocument(str(d["type"]), str(d["task"])) for d in doc["documents"])
    attacks = tuple(XpiaAttack(str(a["type"]), str(a["action"])) for a in doc["attacks"])
    return documents, attacks
