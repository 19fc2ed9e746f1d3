"""Record ragas 0.4.3's scoring functions on random verdict sets into ``ragas_scores.json``.

Run once with a Python that has ragas 0.4.3 (not touchstone's venv):

    /tmp/ragasvenv/bin/python tests/evaluators/rag/golden/record_ragas_scores.py

The verdict sets are drawn with a fixed seed; ragas' own methods compute the scores (no LLM: the
methods read verdict objects). ``tests/evaluators/rag/test_scoring.py`` compares touchstone's
formulas with these values to 1e-9."""

from __future__ import annotations

import json
import random
import sys
import types
from pathlib import Path

# ragas 0.4.3 imports a module that langchain-community 0.4 no longer ships; nothing here uses it
for name, attr in (("langchain_community.chat_models.vertexai", "ChatVertexAI"),):
    stub = types.ModuleType(name)
    setattr(stub, attr, type(attr, (), {}))
    sys.modules.setdefault(name, stub)

import ragas  # noqa: E402
from ragas.metrics._answer_correctness import AnswerCorrectness  # noqa: E402
from ragas.metrics._context_entities_recall import ContextEntityRecall  # noqa: E402
from ragas.metrics._context_precision import LLMContextPrecisionWithReference, Verification  # noqa: E402
from ragas.metrics._context_recall import ContextRecallClassification, LLMContextRecall  # noqa: E402
from ragas.metrics._faithfulness import Faithfulness, NLIStatementOutput, StatementFaithfulnessAnswer  # noqa: E402
from ragas.metrics.utils import fbeta_score  # noqa: E402

SEED = 20240514
N = 300
ENTITIES = [f"e{i}" for i in range(12)]


def main() -> None:
    rng = random.Random(SEED)
    faith, recall, precision, entities, fbeta = [], [], [], [], []
    f_metric, r_metric = Faithfulness(), LLMContextRecall()
    p_metric, e_metric = LLMContextPrecisionWithReference(), ContextEntityRecall()
    for _ in range(N):
        v = [rng.random() < 0.6 for _ in range(rng.randint(1, 12))]
        out = NLIStatementOutput(statements=[StatementFaithfulnessAnswer(statement=f"s{i}", reason="",
                                                                         verdict=int(x))
                                             for i, x in enumerate(v)])
        faith.append({"verdicts": v, "ragas": f_metric._compute_score(out)})
        v = [rng.random() < 0.5 for _ in range(rng.randint(1, 12))]
        cls = [ContextRecallClassification(statement=f"s{i}", reason="", attributed=int(x))
               for i, x in enumerate(v)]
        recall.append({"verdicts": v, "ragas": r_metric._compute_score(cls)})
        v = [rng.random() < 0.4 for _ in range(rng.randint(0, 10))]
        ver = [Verification(reason="", verdict=int(x)) for x in v]
        precision.append({"verdicts": v, "ragas": p_metric._calculate_average_precision(ver)})
        ref = rng.sample(ENTITIES, rng.randint(1, 8))
        ctx = rng.sample(ENTITIES, rng.randint(0, 10))
        entities.append({"reference": ref, "context": ctx, "ragas": e_metric._compute_score(ref, ctx)})
        tp, fp, fn = rng.randint(0, 6), rng.randint(0, 6), rng.randint(0, 6)
        beta = rng.choice([0.5, 1.0, 2.0])
        fbeta.append({"tp": tp, "fp": fp, "fn": fn, "beta": beta, "ragas": fbeta_score(tp, fp, fn, beta)})
    defaults = AnswerCorrectness()
    doc = {
        "ragas_version": ragas.__version__, "seed": SEED,
        "answer_correctness_defaults": {"weights": list(defaults.weights), "beta": defaults.beta},
        "faithfulness": faith, "context_recall": recall, "context_precision": precision,
        "context_entity_recall": entities, "fbeta": fbeta,
    }
    out = Path(__file__).with_name("ragas_scores.json")
    out.write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {out} (ragas {ragas.__version__}, {N} sets per function)")


if __name__ == "__main__":
    main()
