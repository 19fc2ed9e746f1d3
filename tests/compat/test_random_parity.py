"""Random-input parity with azure-ai-evaluation 1.18.10 for F1, BLEU, GLEU, METEOR, ROUGE and
document retrieval: every case of ``random_cases`` run through touchstone gives the SDK's recorded
keys (touchstone may add keys), JSON types and values (floats to 1e-9, NaN equal to NaN), and fails
where the SDK failed. The golden is recorded by ``record_random.py`` with the nltk data it names."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import touchstone
from tests.compat.random_cases import all_cases
from tests.compat.record_random import typed
from touchstone.evaluators.text import wordnet_installed

GOLDEN = Path(__file__).with_name("golden_random") / "lexical_retrieval.json"
TOL = 1e-9


def _differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """What differs between the SDK's typed value and touchstone's (extra dict keys allowed)."""
    e_type, e_value = expected
    a_type, a_value = actual
    if e_type != a_type:
        return [f"{path}: type {a_type} vs SDK {e_type} ({a_value!r} vs {e_value!r})"]
    if e_type == "object":
        out = [f"{path}/{k}: missing" for k in e_value if k not in a_value]
        for k in e_value:
            if k in a_value:
                out += _differences(e_value[k], a_value[k], f"{path}/{k}")
        return out
    if e_type == "float":
        if e_value == "NaN" or a_value == "NaN":
            return [] if e_value == a_value else [f"{path}: {a_value} vs SDK {e_value}"]
        return [] if math.isclose(a_value, e_value, rel_tol=0, abs_tol=TOL) else [
            f"{path}: {a_value!r} vs SDK {e_value!r}"
        ]
    return [] if e_value == a_value else [f"{path}: {a_value!r} vs SDK {e_value!r}"]


def run_touchstone(case: dict[str, Any]) -> dict[str, Any]:
    """The case through touchstone: ``{"ok", "output"}`` or ``{"ok": False, "error_type"}``."""
    try:
        evaluator = getattr(touchstone, case["evaluator"])(**case["init"])
        return {"ok": True, "output": typed(evaluator(**case["inputs"]))}
    except Exception as exc:
        return {"ok": False, "error_type": type(exc).__name__, "error": str(exc)}


# METEOR's value depends on WordNet synonyms: the golden was recorded with WordNet 3.0, which nltk
# never downloads here. Without it installed, touchstone matches exact words and stems only, so the
# METEOR values (and their verdicts) of cases with synonym matches may differ; keys and types may not.
_NEEDS_WORDNET = {"/meteor", "/meteor_score", "/meteor_passed", "/meteor_result"}


def compare(case: dict[str, Any], record: dict[str, Any]) -> list[str]:
    got = run_touchstone(case)
    if not record["ok"]:
        return [] if not got["ok"] else [f"SDK raised {record['error_type']}, touchstone gave a result"]
    if not got["ok"]:
        return [f"touchstone raised {got['error_type']}: {got['error']}"]
    diffs = _differences(["object", record["output"]], got["output"])
    if case["evaluator"] == "MeteorScoreEvaluator" and not wordnet_installed():
        diffs = [d for d in diffs if d.split(":")[0] not in _NEEDS_WORDNET or " type " in d]
    return diffs


def _load() -> tuple[dict[str, Any], list[tuple[dict[str, Any], dict[str, Any]]]]:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    records = {r["id"]: r for r in golden["cases"]}
    return golden, [(c, records[c["id"]]) for c in all_cases()]


GOLDEN_DATA, PAIRS = _load()


def test_golden_covers_every_case() -> None:
    assert len(PAIRS) == len(GOLDEN_DATA["cases"]) >= 400
    assert GOLDEN_DATA["sdk_version"] == "1.18.10"


@pytest.mark.parametrize("evaluator", sorted({c["evaluator"] for c, _ in PAIRS}))
def test_random_inputs_match_the_sdk(evaluator: str) -> None:
    failures: dict[str, list[str]] = {}
    n = 0
    for case, record in PAIRS:
        if case["evaluator"] != evaluator:
            continue
        n += 1
        diffs = compare(case, record)
        if diffs:
            failures[case["id"]] = diffs
    assert n > 0
    shown = json.dumps(dict(list(failures.items())[:8]), indent=1)
    assert not failures, f"{len(failures)}/{n} cases differ: {shown}"
