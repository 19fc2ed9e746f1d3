"""``touchstone rank``: rank systems from pairwise votes (Bradley–Terry or online Elo) with bootstrap
intervals, as a table or JSON."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from touchstone._text import json_dumps, markup_safe, safe_text
from touchstone.cli.common import err, fail_input, out, parse_floats
from touchstone.errors import InputValidationError, Problem
from touchstone.stats.pairwise import BASE_RATING, Battle, Ranking, rank_battles


def _check_options(method: str, k: float, bootstrap: int, confidence: float, initial: float) -> None:
    problems = []
    if method not in ("bt", "elo"):
        problems.append(Problem("--method", None, None, f"expected 'bt' or 'elo', got {method!r}"))
    if not (math.isfinite(k) and k > 0):
        problems.append(Problem("--k", None, None, f"expected a positive number, got {k}"))
    if bootstrap < 0 or bootstrap > 100_000:
        problems.append(
            Problem("--bootstrap", None, None, f"expected 0 to 100000 resamples, got {bootstrap}")
        )
    if not 0 < confidence < 1:
        problems.append(
            Problem("--confidence", None, None, f"expected a level between 0 and 1, got {confidence}")
        )
    if not math.isfinite(initial):
        problems.append(Problem("--initial", None, None, "expected a finite rating"))
    if problems:
        raise InputValidationError(problems)


def ranking_table(ranking: Ranking, title: str) -> Table:
    """The ranking as a Rich table (system names are data: shown as text, never markup)."""
    level = f"{ranking.confidence:.0%} CI"
    table = Table(title=markup_safe(title))
    for col in ("rank", "system", "rating", level, "battles", "win rate"):
        table.add_column(col, justify="left" if col == "system" else "right")
    for i, s in enumerate(ranking.systems, 1):
        interval = "-" if s.lower is None or s.upper is None else f"{s.lower:.0f} – {s.upper:.0f}"
        table.add_row(
            str(i),
            safe_text(s.system, keep_newlines=False),
            f"{s.rating:.0f}",
            interval,
            str(s.battles),
            f"{s.win_rate:.1%}",
        )
    return table


def run_ranking(battles: list[Battle], quiet: bool, **options: object) -> Ranking:
    """:func:`rank_battles` with a progress bar over the bootstrap (on stderr; off with quiet)."""
    total = int(options.get("bootstrap", 0))  # type: ignore[call-overload]
    if quiet or total == 0:
        return rank_battles(battles, **options)  # type: ignore[arg-type]
    with Progress(
        TextColumn("bootstrap"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("bootstrap", total=total)
        return rank_battles(battles, progress=lambda: progress.advance(task), **options)  # type: ignore[arg-type]


def rank_command(
    votes: Path = typer.Argument(
        ...,
        help="Votes as JSONL or CSV: model_a, model_b, winner "
        "(model_a, model_b, tie or 'tie (bothbad)') per battle.",
    ),
    method: str = typer.Option(
        "bt",
        "--method",
        help="bt: Bradley–Terry maximum likelihood (order of "
        "battles ignored); elo: online Elo in the file's order.",
    ),
    k: float = typer.Option(4.0, "--k", help="Elo's K factor: the most a rating moves in one battle."),
    initial: float = typer.Option(BASE_RATING, "--initial", help="Elo's starting rating of every system."),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", help="Resamples of the battles for the intervals (0: none)."
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed of the bootstrap resampling (same seed, same intervals)."
    ),
    confidence: float = typer.Option(0.95, "--confidence", help="Level of the percentile intervals."),
    anchor: list[str] = typer.Option(
        None, "--anchor", help="SYSTEM=RATING: shift every rating so that this system has this rating."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the ranking as JSON instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Rank systems from pairwise votes, on the Elo-like scale (400·log10 strength + 1000)."""
    from touchstone.people.votes import load_battles

    try:
        _check_options(method, k, bootstrap, confidence, initial)
        anchors = parse_floats(anchor, "--anchor")
        if len(anchors) > 1:
            raise InputValidationError([Problem("--anchor", None, None, "give one SYSTEM=RATING")])
        battles = load_battles(votes)
        known = {x for a, b, _ in battles for x in (a, b)}
        for name in anchors:
            if name not in known:
                raise InputValidationError(
                    [Problem("--anchor", None, name, "no system of that name in the votes")]
                )
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    ranking = run_ranking(
        battles,
        quiet or as_json,
        method=method,
        bootstrap=bootstrap,
        seed=seed,
        confidence=confidence,
        anchor=anchors or None,
        k=k,
        initial=initial,
    )
    if as_json:
        out.print_json(json_dumps(ranking.as_dict()))
        return
    name = "Bradley–Terry" if method == "bt" else f"Elo (K={k:g})"
    out.print(
        ranking_table(
            ranking, f"{name} ranking of {len(ranking.systems)} systems from {len(battles)} battles"
        )
    )
