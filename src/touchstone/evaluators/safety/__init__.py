"""Risk and safety evaluators (SPEC 3.6), judged by any model, offline: the four harm severities
(0–7, labelled Very low / Low / Medium / High, lower is better), all four at once, indirect prompt
injection and protected material, with the compatible SDK's names, inputs and output keys."""

from touchstone.evaluators.safety.content_safety import ContentSafetyEvaluator
from touchstone.evaluators.safety.harm import (
    HateUnfairnessEvaluator,
    SelfHarmEvaluator,
    SexualEvaluator,
    ViolenceEvaluator,
)
from touchstone.evaluators.safety.indirect_attack import IndirectAttackEvaluator
from touchstone.evaluators.safety.protected_material import ProtectedMaterialEvaluator
from touchstone.evaluators.safety.severity import HARM_CATEGORIES, severity_label

__all__ = [
    "HARM_CATEGORIES",
    "ContentSafetyEvaluator",
    "HateUnfairnessEvaluator",
    "IndirectAttackEvaluator",
    "ProtectedMaterialEvaluator",
    "SelfHarmEvaluator",
    "SexualEvaluator",
    "ViolenceEvaluator",
    "severity_label",
]
