"""``touchstone calibrate``: how far a stored run's judge metric can be trusted against people's
annotations of the same rows."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from touchstone._text import json_dumps, markup_safe, safe_text
from touchstone.cli.common import STORE_HELP, fail_input, open_run_store, out
from touchstone.errors import InputValidationError, Problem

_NAMES = {
    "spearman": "Spearman's rho",
    "kendall": "Kendall's tau-b",
    "exact_agreement": "exact agreement",
    "adjacent_agreement": "adjacent agreement (±1)",
}


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def calibrate_command(
    run: str = typer.Argument(..., help="The run id whose judge scores are checked (see `touchstone runs`)."),
    human: Path = typer.Option(
        ...,
        "--human",
        help="People's annotations, CSV or JSONL: row (the row's id, "
        "else its 0-based index), annotator, metric (or dimension), value.",
    ),
    metric: str | None = typer.Option(
        None, "--metric", help="The metric to check (default: the one metric the annotations name)."
    ),
    bootstrap: int = typer.Option(
        1000, "--bootstrap", help="Resamples of the matched rows for the intervals."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap resampling."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON instead of a table."),
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
) -> None:
    """Say how far a run's judge metric can be trusted against people on the same rows: rank
    correlations and agreement with 95% bootstrap intervals, matched and unmatched rows, a verdict."""
    from touchstone.people.calibration import calibrate, load_annotations

    try:
        if not 0 <= bootstrap <= 100_000:
            raise InputValidationError([Problem("--bootstrap", None, None, "expected 0 to 100000 resamples")])
        annotations = load_annotations(human)
        run_store = open_run_store(store)
        result = calibrate(run_store, run, annotations, metric, bootstrap=bootstrap, seed=seed)
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    if as_json:
        out.print_json(json_dumps(result.as_dict()))
        return
    table = Table(
        title=f"judge {markup_safe(result.metric)} against people, run {markup_safe(result.run_id)}"
    )
    for col in ("statistic", "value", "95% CI"):
        table.add_column(col, justify="left" if col == "statistic" else "right")
    for key, est in result.statistics.items():
        interval = "-" if est.lower is None or est.upper is None else f"{est.lower:.3f} – {est.upper:.3f}"
        table.add_row(_NAMES[key], _fmt(est.value), interval)
    table.add_row("quadratic-weighted kappa", _fmt(result.kappa_quadratic), "")
    table.add_row("people among themselves (ordinal alpha)", _fmt(result.people_alpha), "")
    out.print(table)
    out.print(f"matched rows: {result.matched}; annotators: {result.annotators}")
    if result.unmatched:
        shown = ", ".join(result.unmatched[:10]) + (" ..." if len(result.unmatched) > 10 else "")
        out.print(
            safe_text(f"unmatched annotation rows ({len(result.unmatched)}): {shown}", keep_newlines=False)
        )
    if result.judge_failed:
        out.print(
            safe_text(
                f"rows the judge failed on ({len(result.judge_failed)}): "
                + ", ".join(result.judge_failed[:10]),
                keep_newlines=False,
            )
        )
    out.print(safe_text(f"verdict ({result.trust}): {result.verdict}", keep_newlines=False))
