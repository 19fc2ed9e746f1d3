"""How far the dry run's estimate is from what a run then uses, on the fake judge server.

For a few generated datasets (short question answering, long-context RAG, summaries of long sources),
the dry run estimates each metric's judge calls, prompt and completion tokens and cost
(``touchstone.engine.selection.select``: the prompts rendered on the rows); the same evaluators then
run for real against the fake OpenAI-compatible server (``tests/fakes/openai_server.py``, in this
process, replies that follow the requested schema; judge cache off), and the run's own accounting (the
usage the server reported on every reply) is the actual. Errors are (estimated - actual) / actual.

    python benchmarks/estimate.py [--rows 40] [--seed 0]

The fake server counts a quarter of the characters of the messages as prompt tokens, as the dry run
does, so the prompt-token error measures the rendering (what is sent), not a tokenizer. Its replies
are the shortest JSON the schema allows, while the dry run assumes a judgement of typical length
(up to 150 completion tokens a call): the completion-token and cost errors against it are the upper
end of what to expect from a real judge, whose reasons run longer.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fakes.openai_server import FakeOpenAIServer

from touchstone.engine.runner import evaluate
from touchstone.engine.selection import record_estimate, select
from touchstone.evaluators import registry
from touchstone.judges.config import JudgeSettings
from touchstone.store.sqlite import RunStore

WORDS = ("the", "battery", "lasts", "hours", "and", "charges", "in", "two", "a", "lamp", "weighs", "grams",
         "river", "trail", "is", "rated", "for", "rain", "night", "warranty", "covers", "years", "of", "use")

DATASETS: dict[str, tuple[tuple[str, ...], tuple[int, int], tuple[int, int], tuple[int, int]]] = {
    # name: (metrics, words per context document, documents per row, words per response)
    "short-qa": (("coherence", "relevance", "similarity", "conciseness"), (5, 30), (1, 2), (3, 30)),
    "long-rag": (("faithfulness", "context_relevance", "groundedness", "context_recall"),
                 (80, 400), (2, 6), (20, 120)),
    "summaries": (("faithfulness", "completeness", "conciseness"), (300, 900), (1, 1), (40, 150)),
}


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def make_rows(name: str, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(f"{name}-{seed}")
    _, words, docs, response = DATASETS[name]
    return [{"id": f"{name}-{i}", "query": _text(rng, 4, 20) + "?",
             "context": [_text(rng, *words) for _ in range(rng.randint(*docs))],
             "response": _text(rng, *response), "ground_truth": _text(rng, 5, 40)} for i in range(n)]


def measure(server: FakeOpenAIServer, name: str, rows: int, seed: int, folder: Path) -> dict[str, Any]:
    metrics = DATASETS[name][0]
    data = folder / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_rows(name, rows, seed)))
    judge = {"model": "gpt-4o-mini", "base_url": server.base_url, "api_key": "sk-bench-not-a-real-key"}
    evs = {m: registry.create(m, model_config=judge) for m in metrics}
    started = time.perf_counter()
    selection = select(data, evs, settings=JudgeSettings(cache=False))
    estimate_seconds = time.perf_counter() - started
    assert selection.estimate is not None
    server.reset()
    store = RunStore(folder / f"{name}.db")
    result = evaluate(data=str(data), evaluators=evs, store=store, cache=False, concurrency=32)
    doc = record_estimate(store, result.run["id"], selection.estimate)
    assert doc is not None
    return {"dataset": name, "rows": rows, "metrics": list(metrics), "requests_seen": server.count,
            "estimate_seconds": estimate_seconds, **doc}


def _pct(entry: dict[str, Any]) -> str:
    error = entry.get("error")
    return "—" if error is None else f"{error:+.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the full comparison as JSON")
    args = parser.parse_args()
    server = FakeOpenAIServer().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = [measure(server, name, args.rows, args.seed, Path(tmp)) for name in DATASETS]
    finally:
        server.stop()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| dataset | rows | metrics | calls est / actual (err) | prompt tokens est / actual (err) "
          "| completion tokens est / actual (err) | cost USD est / actual (err) | dry run s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        t = r["total"]
        cells = []
        for key, fmt in (("calls", "{:.0f}"), ("prompt_tokens", "{:.0f}"), ("completion_tokens", "{:.0f}"),
                         ("cost_usd", "{:.5f}")):
            e = t[key]
            cells.append(f"{fmt.format(e['estimated'])} / {fmt.format(e['actual'])} ({_pct(e)})")
        print(f"| {r['dataset']} | {r['rows']} | {', '.join(r['metrics'])} | " + " | ".join(cells)
              + f" | {r['estimate_seconds']:.2f} |")
    print()
    per_metric = [f"{r['dataset']}/{m}: {_pct(f['prompt_tokens'])}"
                  for r in results for m, f in r["per_evaluator"].items()]
    print("per metric, prompt-token error: " + "; ".join(per_metric))


if __name__ == "__main__":
    main()
