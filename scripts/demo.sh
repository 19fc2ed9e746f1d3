#!/usr/bin/env bash
# The main job on the bundled example data; results land in out/demo and the local run store.
set -euo pipefail
cd "$(dirname "$0")/.."
export TOUCHSTONE_STORE="${TOUCHSTONE_STORE:-$PWD/.touchstone/runs.db}"
metrics="f1_score,exact_match"
for m in bleu_score rouge gleu_score chrf_score; do
  if .venv/bin/touchstone metrics 2>/dev/null | grep -q "^│ $m "; then metrics="$metrics,$m"; fi
done
echo "touchstone eval examples/qa.jsonl -m $metrics --out out/demo"
.venv/bin/touchstone eval examples/qa.jsonl -m "$metrics" --out out/demo
# Judge metrics (LLM-judged) only when a judge is configured in the environment.
if [ -n "${OPENAI_API_KEY:-}${OPENAI_BASE_URL:-}${AZURE_OPENAI_ENDPOINT:-}${TOUCHSTONE_JUDGE_MODEL:-}" ]; then
  judged="groundedness,relevance,coherence,fluency,similarity,retrieval,retrieval_score"
  echo "touchstone eval examples/qa.jsonl -m $judged --out out/demo-judge"
  .venv/bin/touchstone eval examples/qa.jsonl -m "$judged" --out out/demo-judge
  chat="groundedness,relevance,coherence,fluency,retrieval_score"
  echo "touchstone eval examples/chat.jsonl -m $chat --out out/demo-chat"
  .venv/bin/touchstone eval examples/chat.jsonl -m "$chat" --out out/demo-chat
else
  echo "judge metrics (groundedness, relevance, coherence, fluency, similarity, retrieval) are off: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server, TOUCHSTONE_JUDGE_MODEL for the model) and run make demo again"
fi
