"""Process-pool workers end when the process running the evaluation is killed (SIGKILL gives it no
chance to shut its pool down): none is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import sys
from touchstone import F1ScoreEvaluator, evaluate

rows = [{"response": f"a b c {i}", "ground_truth": f"a b {i % 7}"} for i in range(200_000)]

def progress(done, total):
    if done:
        print("scoring", flush=True)

evaluate(data=rows, evaluators={"f1": F1ScoreEvaluator()}, store=sys.argv[1], workers=2, progress=progress)
"""


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(c) for c in text)
    return found


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]  # a zombie has exited


def test_pool_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "runs.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the first chunk is scored: the pool is running
    assert line.strip() == "scoring", proc.stderr.read() if proc.stderr else ""
    workers = children(proc.pid)
    assert len(workers) >= 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(alive(w) for w in workers):
        time.sleep(0.1)
    survivors = [w for w in workers if alive(w)]
    for w in survivors:  # do not leave them running if the assertion fails
        os.kill(w, signal.SIGKILL)
    assert survivors == []
