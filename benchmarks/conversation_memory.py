"""Peak memory of one long conversation: ``touchstone eval`` on a single row holding a conversation of
N exchanges (2N messages), as a dry run and as a real run against the loopback fake judge.

Each command runs in its own process; its peak resident set size is read from ``wait4``'s resource
usage. Usage::

    .venv/bin/python benchmarks/conversation_memory.py --turns 10000 --metrics coherence
    .venv/bin/python benchmarks/conversation_memory.py --turns 10000 --metrics coherence --mode history
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def write_conversation(path: Path, turns: int, words: int) -> None:
    """One JSONL row: a conversation of ``turns`` user/assistant exchanges of ``words`` words each."""
    text = " ".join(["word"] * words)
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i}: {text}"})
        messages.append({"role": "assistant", "content": f"answer {i}: {text}"})
    path.write_text(json.dumps({"conversation": {"messages": messages}}) + "\n", encoding="utf-8")


def peak_rss(args: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    """Run ``args``; its exit status, peak RSS in MiB, wall seconds and the tail of its output."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    output = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, time.perf_counter() - start, output[-600:]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=10_000, help="user/assistant exchanges (default 10000)")
    parser.add_argument("--words", type=int, default=20, help="words per message (default 20)")
    parser.add_argument("--metrics", default="coherence")
    parser.add_argument("--mode", default="sdk", choices=("sdk", "history"),
                        help="conversation_mode of the judged metrics (--metric-option)")
    parser.add_argument("--skip-run", action="store_true", help="only the dry run")
    opts = parser.parse_args()

    from tests.fakes.openai_server import FakeOpenAIServer

    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as fake:
        data = Path(tmp) / "conversation.jsonl"
        write_conversation(data, opts.turns, opts.words)
        cache = str(Path(tmp) / "cache.db")
        env = dict(os.environ, OPENAI_API_KEY="sk-benchmark-0000", TOUCHSTONE_CACHE=cache)
        base = [sys.executable, "-m", "touchstone.cli", "eval", str(data), "-m", opts.metrics,
                "--judge-model", "fake-judge", "--judge-base-url", fake.base_url,
                "--store", str(Path(tmp) / "runs.db"), "-q"]
        if opts.mode != "sdk":
            for metric in opts.metrics.split(","):
                base += ["--metric-option", f"{metric}.conversation_mode={opts.mode}"]
        size = data.stat().st_size / 2**20
        print(f"one conversation of {opts.turns} exchanges ({2 * opts.turns} messages, {size:.1f} MiB), "
              f"metrics {opts.metrics}, mode {opts.mode}")
        runs = [("dry run", [*base, "--dry-run"])]
        if not opts.skip_run:
            runs.append(("run", base))
        for label, args in runs:
            fake.reset()
            code, rss, wall, tail = peak_rss(args, env)
            print(f"{label:8s} exit {code}  peak RSS {rss:8.1f} MiB  wall {wall:6.1f} s  "
                  f"judge calls {fake.count}")
            if code not in (0, 1):
                print(tail)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
