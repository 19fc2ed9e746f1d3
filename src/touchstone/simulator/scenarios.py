"""The adversarial scenarios, with the compatible SDK's enum names and values, and the languages."""

from __future__ import annotations

from enum import Enum


class AdversarialScenario(Enum):
    """What kind of exchange the simulator stages against the target (the SDK's names and values).

    Each scenario has its task and risk categories in ``prompts/simulator/scenarios.yaml``."""

    ADVERSARIAL_QA = "adv_qa"
    ADVERSARIAL_QA_DOCUMENTS = "adv_qa_documents"
    ADVERSARIAL_CONVERSATION = "adv_conversation"
    ADVERSARIAL_SUMMARIZATION = "adv_summarization"
    ADVERSARIAL_SEARCH = "adv_search"
    ADVERSARIAL_REWRITE = "adv_rewrite"
    ADVERSARIAL_CONTENT_GEN_UNGROUNDED = "adv_content_gen_ungrounded"
    ADVERSARIAL_CONTENT_GEN_GROUNDED = "adv_content_gen_grounded"
    ADVERSARIAL_CONTENT_PROTECTED_MATERIAL = "adv_content_protected_material"
    ADVERSARIAL_CODE_VULNERABILITY = "adv_code_vuln"
    ADVERSARIAL_UNGROUNDED_ATTRIBUTES = "adv_isa"


class AdversarialScenarioJailbreak(Enum):
    """The indirect (cross-domain) prompt-injection scenario of :class:`IndirectAttackSimulator`."""

    ADVERSARIAL_INDIRECT_JAILBREAK = "adv_xpia"


class SupportedLanguages(Enum):
    """Languages the attacker model can be asked to write in (the SDK's names and codes)."""

    Spanish = "es"
    Italian = "it"
    French = "fr"
    German = "de"
    SimplifiedChinese = "zh-cn"
    Portuguese = "pt"
    Japanese = "ja"
    English = "en"
    Korean = "ko"


LANGUAGE_NAMES = {
    SupportedLanguages.Spanish: "Spanish",
    SupportedLanguages.Italian: "Italian",
    SupportedLanguages.French: "French",
    SupportedLanguages.German: "German",
    SupportedLanguages.SimplifiedChinese: "Simplified Chinese",
    SupportedLanguages.Portuguese: "Portuguese",
    SupportedLanguages.Japanese: "Japanese",
    SupportedLanguages.English: "English",
    SupportedLanguages.Korean: "Korean",
}

SHORT_NAMES = {
    "qa": AdversarialScenario.ADVERSARIAL_QA,
    "qa_documents": AdversarialScenario.ADVERSARIAL_QA_DOCUMENTS,
    "conversation": AdversarialScenario.ADVERSARIAL_CONVERSATION,
    "summarization": AdversarialScenario.ADVERSARIAL_SUMMARIZATION,
    "search": AdversarialScenario.ADVERSARIAL_SEARCH,
    "rewrite": AdversarialScenario.ADVERSARIAL_REWRITE,
    "content_gen_ungrounded": AdversarialScenario.ADVERSARIAL_CONTENT_GEN_UNGROUNDED,
    "content_gen_grounded": AdversarialScenario.ADVERSARIAL_CONTENT_GEN_GROUNDED,
    "protected_material": AdversarialScenario.ADVERSARIAL_CONTENT_PROTECTED_MATERIAL,
    "code_vulnerability": AdversarialScenario.ADVERSARIAL_CODE_VULNERABILITY,
    "ungrounded_attributes": AdversarialScenario.ADVERSARIAL_UNGROUNDED_ATTRIBUTES,
}
"""The command line's names (``--scenario qa``); the enum's values (``adv_qa``) and member names
(``ADVERSARIAL_QA``) are accepted too."""


def parse_scenario(value: str | AdversarialScenario) -> AdversarialScenario:
    """A scenario from its short name, its value or its member name; a clear error otherwise."""
    from touchstone.errors import ConfigurationError

    if isinstance(value, AdversarialScenario):
        return value
    key = str(value).strip()
    if key.lower() in SHORT_NAMES:
        return SHORT_NAMES[key.lower()]
    for member in AdversarialScenario:
        if key in (member.value, member.name):
            return member
    raise ConfigurationError(
        f"unknown scenario {value!r}; expected one of {', '.join(SHORT_NAMES)} "
        "(or an AdversarialScenario value)"
    )
