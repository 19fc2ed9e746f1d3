"""``touchstone pairwise``: pairwise votes from a judge model (each pair asked in both orders), written
in the battle format that ``touchstone rank`` reads."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from touchstone._text import markup_safe, safe_text
from touchstone.cli.attacking import attacker_config, session_settings
from touchstone.cli.common import EXIT_GATE, err, fail_input, out
from touchstone.errors import ConfigurationError, InputValidationError, RunAbortedError


def pairwise_command(
    pairs: Path = typer.Argument(
        ...,
        help="Pairs as JSONL or CSV: query, model_a, model_b, response_a, "
        "response_b (and optionally question_id).",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="Where the votes go (JSONL, battle format)."),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="The judge model (default: $TOUCHSTONE_JUDGE_MODEL)."
    ),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="An OpenAI-compatible server's URL (default: $OPENAI_BASE_URL)."
    ),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Most judge requests in flight."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the judge cache."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Ask a judge which of two responses answers each query better, in both orders (a disagreement
    between the orders is a tie), and write the votes for `touchstone rank`."""
    from touchstone.data.loaders import load_records
    from touchstone.people.pairwise_judge import check_pairs, judge_votes
    from touchstone.people.votes import write_votes

    try:
        from touchstone.outputs import check_output_file

        check_output_file(output, "--output", inputs=[pairs])
        records = load_records(pairs)
        check_pairs(records)
        config = attacker_config(judge_model, judge_base_url, None, None)
        settings = session_settings(concurrency, no_cache, None, None)
    except (InputValidationError, ConfigurationError) as exc:
        raise fail_input(str(exc)) from None
    try:
        with Progress(
            TextColumn("judging pairs"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=quiet,
        ) as progress:
            task = progress.add_task("pairs", total=len(records))
            result = judge_votes(pairs, config, settings=settings, progress=lambda: progress.advance(task))
    except RunAbortedError as exc:
        err.print(f"[bold red]error:[/] {markup_safe(exc)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_GATE) from None
    write_votes(output, result.votes)
    out.print(
        f"{len(result.votes)} votes written to {markup_safe(output)}; "
        f"{result.position_ties} ties because the two orders disagreed; {len(result.failures)} pairs failed"
    )
    for failure in result.failures[:10]:
        out.print(
            safe_text(
                f"  {failure['source']}, line {failure['line']}: {failure['error']}", keep_newlines=False
            )
        )
    if not result.votes:
        raise typer.Exit(EXIT_GATE)
