"""Simulator and red-team throughput against the rate-capped fake server (issue 13, points 6-7).

The fake OpenAI-compatible server (its own process: 200 ms per request, at most 64 at once, 429
beyond: 320 calls/s, as in ``judge_throughput.py``) plays the attacker model and the safety judge,
scripted by ``tests/simulator/sim_fakes.handler`` (a distinct attacker turn per objective and turn,
so no two calls are the same request and none is joined or cached). The application is an async
callback answering after 50 ms. We
time, with the judge session at concurrency 64 and the cache off:

- ``AdversarialSimulator`` on the conversation scenario: 40 conversations of T user turns (each turn
  one attacker call, then the target), all conversations in flight at once;
- ``RedTeam``: 4 categories x 10 objectives x 7 strategies = 280 attacks (40 attacker calls, 280
  target answers, 280 harm-judge calls).

A conversation's turns are sequential (each needs the target's last answer), so the simulator's floor
is T x (0.2 s + 0.05 s); the red team's is one attacker wave, one target wave and the judge calls at
the server's capacity (each attack is judged as soon as its answer is in).

    python benchmarks/simulator_throughput.py [--turns 5] [--parallel 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from judge_throughput import CAP, CAPACITY, LATENCY, free_port  # noqa: E402

TARGET_LATENCY = 0.05


async def app(messages: dict[str, Any], stream: bool = False, session_state: Any = None,
              context: Any = None) -> dict[str, Any]:
    await asyncio.sleep(TARGET_LATENCY)
    text = messages["messages"][-1]["content"]
    messages["messages"].append({"role": "assistant", "content": f"Answer to: {text}"})
    return {"messages": messages["messages"], "stream": stream, "session_state": session_state,
            "context": context}


SERVER = """
import time
from tests.fakes.openai_server import FakeOpenAIServer
from tests.simulator.sim_fakes import handler
FakeOpenAIServer(handler=handler, port={port}, latency={latency}, max_concurrency={cap},
                 retry_after=0.05).start()
time.sleep(3600)
"""


def start_server(port: int) -> subprocess.Popen[bytes]:
    code = SERVER.format(port=port, latency=LATENCY, cap=CAP)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the fake server did not start")


def settings() -> Any:
    from touchstone.judges.config import JudgeSettings

    return JudgeSettings(concurrency=CAP, cache=False)


def simulate(config: dict[str, str], turns: int, parallel: int) -> dict[str, Any]:
    from touchstone.simulator import AdversarialScenario, AdversarialSimulator

    sim = AdversarialSimulator(model_config=config, judge_settings=settings())
    t, cpu = time.perf_counter(), time.process_time()
    out = asyncio.run(sim(scenario=AdversarialScenario.ADVERSARIAL_CONVERSATION, target=app,
                          max_conversation_turns=turns, max_simulation_results=40,
                          concurrent_async_task=parallel, randomization_seed=1))
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    calls = int((out.judge or {}).get("stats", {}).get("calls", 0))
    floor = turns * (LATENCY + TARGET_LATENCY)
    return {"label": f"simulator, conversation x{turns} turns", "items": len(out),
            "errors": sum("error" in i for i in out), "calls": calls, "seconds": round(elapsed, 2),
            "calls_per_s": round(calls / elapsed, 1), "floor_s": round(floor, 2),
            "client_cpu_s": round(cpu, 2)}


def red_team(config: dict[str, str], parallel: int) -> dict[str, Any]:
    from touchstone.simulator.redteam import RedTeam

    team = RedTeam(model_config=config, judge_settings=settings())
    t, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(team.run(app, objectives_per_category=10, seed=1, concurrency=parallel))
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    calls = int((result.judge or {}).get("stats", {}).get("calls", 0))
    # one attacker wave, one target wave, then the judge calls at the server's capacity
    floor = LATENCY + TARGET_LATENCY + max(LATENCY, (calls - 40) / CAPACITY)
    return {"label": "red team, 4 x 10 x 7 attacks", "items": len(result.attacks),
            "errors": sum(a.success is None for a in result.attacks), "calls": calls,
            "seconds": round(elapsed, 2), "calls_per_s": round(calls / elapsed, 1),
            "floor_s": round(floor, 2), "client_cpu_s": round(cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=64, help="conversations / attacks in flight")
    args = parser.parse_args()
    os.environ["TOUCHSTONE_CACHE"] = str(Path(tempfile.mkdtemp()) / "cache.db")
    port = free_port()
    proc = start_server(port)
    try:
        import openai  # noqa: F401 - imported before the clock

        import touchstone.simulator.redteam  # noqa: F401

        config = {"model": "gpt-4o-mini", "base_url": f"http://127.0.0.1:{port}/v1", "api_key": "sk-bench"}
        simulate(config, 1, args.parallel)  # warm-up (lazy imports, first connections): not reported
        for row in (simulate(config, args.turns, args.parallel), red_team(config, args.parallel)):
            print(json.dumps(row))
    finally:
        proc.kill()


if __name__ == "__main__":
    main()
