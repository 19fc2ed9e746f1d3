"""Record what azure-ai-evaluation 1.18.10 gives on ``random_cases`` (a one-off developer step).

    NLTK_DATA=DIR /path/to/sdk-venv/bin/python tests/compat/record_random.py [--data-note TEXT]

Writes ``golden_random/lexical_retrieval.json``: per case its id, whether the SDK ran, and the
output as ``{key: [json type, value]}`` (the error's type and message otherwise). Run offline: what
nltk data the SDK had is written beside the cases (``--data-note``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from random_cases import SEED, all_cases  # noqa: E402


def typed(value: Any) -> Any:
    """A value as [json type, value], recursively for dicts (the types JSON alone would lose)."""
    if isinstance(value, dict):
        return ["object", {str(k): typed(v) for k, v in value.items()}]
    if value is None:
        return ["null", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["float", value if value == value else "NaN"]
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, list):
        return ["array", [typed(v) for v in value]]
    return [type(value).__name__, repr(value)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-note", default="", help="which nltk data the SDK had")
    parser.add_argument("--out", default=str(HERE / "golden_random" / "lexical_retrieval.json"))
    args = parser.parse_args()
    from importlib.metadata import version

    import azure.ai.evaluation as sdk

    records = []
    for case in all_cases():
        record: dict[str, Any] = {"id": case["id"]}
        try:
            init = dict(case["init"])
            if case["evaluator"] == "RougeScoreEvaluator":
                kind = init.pop("rouge_type")
                evaluator = sdk.RougeScoreEvaluator(kind, **init)
            else:
                evaluator = getattr(sdk, case["evaluator"])(**init)
            record["ok"] = True
            record["output"] = typed(evaluator(**case["inputs"]))[1]
        except Exception as exc:  # recorded as data: the test checks touchstone fails too
            record["ok"] = False
            record["error_type"] = type(exc).__name__
            record["error"] = str(exc)[:300]
        records.append(record)
    golden = {
        "sdk_version": version("azure-ai-evaluation"),
        "nltk_version": version("nltk"),
        "seed": SEED,
        "nltk_data": args.data_note,
        "cases": records,
    }
    text = json.dumps(golden, indent=0, sort_keys=True, ensure_ascii=False) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    ok = sum(r["ok"] for r in records)
    print(f"{len(records)} cases, {ok} ran under the SDK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
