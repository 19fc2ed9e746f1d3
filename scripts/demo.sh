#!/usr/bin/env bash
# The main job on the bundled example data; results land in out/demo and the clone's own run store,
# .touchstone/runs.db (named with --store on every command, so the "see it again" lines it prints
# name it too and work from any shell; $TOUCHSTONE_STORE, when set, is used instead).
set -euo pipefail
cd "$(dirname "$0")/.."
store="${TOUCHSTONE_STORE:-$PWD/.touchstone/runs.db}"
ts() { echo "touchstone $*"; .venv/bin/touchstone "$@"; }
# the lexical metrics are all in the core install (sacrebleu, rouge-score, nltk)
ts eval examples/qa.jsonl -m f1_score,exact_match,bleu_score,rouge,gleu_score,chrf_score \
  --store "$store" --out out/demo
# Judge metrics (LLM-judged) only when a judge is configured in the environment.
if [ -n "${OPENAI_API_KEY:-}${OPENAI_BASE_URL:-}${AZURE_OPENAI_ENDPOINT:-}${TOUCHSTONE_JUDGE_MODEL:-}" ]; then
  ts eval examples/rag.jsonl -m groundedness,relevance,faithfulness,context_recall \
    --store "$store" --out out/demo-judge
  ts eval examples/chat.jsonl -m groundedness,relevance,coherence,fluency,retrieval_score \
    --store "$store" --out out/demo-chat
else
  echo "judge metrics (groundedness, relevance, faithfulness, coherence...) are off: set OPENAI_API_KEY" \
    "(or OPENAI_BASE_URL for a local OpenAI-compatible server, TOUCHSTONE_JUDGE_MODEL for the model)" \
    "and run make demo again"
fi
echo "all runs: touchstone runs --store $store   ·   dashboard: touchstone ui --store $store"
