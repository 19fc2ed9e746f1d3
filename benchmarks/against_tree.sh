#!/usr/bin/env bash
# Run benchmarks alternating this tree with another checkout of touchstone (the code before a change),
# in the same window, each tree with its own script:
#   git worktree add /tmp/pre26 b420d21 && bash benchmarks/against_tree.sh /tmp/pre26
set -uo pipefail
OTHER=${1:?"usage: against_tree.sh OTHER_TREE"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
run() { local tree=$1; shift; (cd "$tree" && PYTHONPATH=src HF_HUB_OFFLINE=1 "$PY" "$@" 2>&1); }
for _ in 1 2; do
  for tree in "$HERE" "$OTHER"; do
    echo "=== $tree ranking"; run "$tree" benchmarks/ranking_metrics.py --evaluate-only 1 | tail -2
  done
done
for _ in 1 2; do
  for tree in "$HERE" "$OTHER"; do
    echo "=== $tree judge"
    run "$tree" benchmarks/judge_throughput.py --rows 1000 --transports aiohttp --ragas-python /nonexistent \
      --skip-sdk | tail -4
  done
done
for tree in "$HERE" "$OTHER"; do
  echo "=== $tree text metrics"; run "$tree" benchmarks/text_metrics.py --rows 30000 --touchstone-only | tail -2
done
