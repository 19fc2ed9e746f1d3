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
