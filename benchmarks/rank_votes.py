"""How long rankings from pairwise votes take at Arena-like sizes: simulated battles among ``--systems``
systems with planted Bradley–Terry strengths (``--ties``: a share of ties drawn whatever the
strengths, which pulls fitted ratings toward the middle), then times loading the votes file (JSONL,
validated), one Bradley–Terry fit, the bootstrap (``--bootstrap`` resamples), one online Elo pass and
Elo's bootstrap; and, for calibration, ``judge_vs_people`` on ``--rows`` rows with 1,000 resamples.

    .venv/bin/python benchmarks/rank_votes.py --systems 50 --battles 100000 --bootstrap 200

Also prints the largest gap between the fitted and planted ratings (rating points).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from touchstone.people.votes import load_battles
from touchstone.stats.agreement import judge_vs_people
from touchstone.stats.pairwise import rank_battles, to_rating


def simulate(systems: int, battles: int, seed: int, ties: float) -> tuple[list[dict[str, str]], np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, systems)
    a = rng.integers(0, systems, battles)
    b = (a + rng.integers(1, systems, battles)) % systems
    p = 1 / (1 + np.exp(theta[b] - theta[a]))
    u = rng.random(battles)
    win_a = rng.random(battles) < p
    winner = np.where(u < ties, "tie", np.where(win_a, "model_a", "model_b"))
    votes = [
        {"model_a": f"sys{i:03d}", "model_b": f"sys{j:03d}", "winner": str(w)}
        for i, j, w in zip(a, b, winner, strict=True)
    ]
    return votes, theta


def timed(label: str, fn) -> object:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    print(f"{label:<28} {time.perf_counter() - start:8.2f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--battles", type=int, default=100_000)
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--ties", type=float, default=0.1, help="share of ties, drawn apart from strength")
    args = parser.parse_args()
    votes, theta = simulate(args.systems, args.battles, 0, args.ties)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "votes.jsonl"
        path.write_text("".join(json.dumps(v) + "\n" for v in votes))
        battles = timed(f"load {args.battles:,} votes", lambda: load_battles(path))
    assert isinstance(battles, list)
    fit = timed("Bradley–Terry fit", lambda: rank_battles(battles, bootstrap=0))
    timed(f"BT + {args.bootstrap} resamples", lambda: rank_battles(battles, bootstrap=args.bootstrap))
    timed("Elo pass (K=4)", lambda: rank_battles(battles, method="elo", bootstrap=0))
    timed(
        f"Elo + {args.bootstrap} resamples",
        lambda: rank_battles(battles, method="elo", bootstrap=args.bootstrap),
    )
    rng = np.random.default_rng(1)
    people = rng.integers(1, 6, args.rows).astype(float)
    judge = np.clip(people + rng.integers(-1, 2, args.rows), 1, 5)
    timed(f"judge_vs_people {args.rows:,} rows", lambda: judge_vs_people(judge, people, bootstrap=1000))
    planted = to_rating(theta - theta.mean())
    got = {s.system: s.rating for s in fit.systems}  # type: ignore[attr-defined]
    gap = max(abs(got[f"sys{i:03d}"] - planted[i]) for i in range(args.systems))
    print(f"largest |fitted - planted| rating gap: {gap:.1f} points (ties {args.ties:.0%})")


if __name__ == "__main__":
    main()
