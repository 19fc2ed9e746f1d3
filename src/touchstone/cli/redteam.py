"""``touchstone redteam TARGET``: attack an application with strategies per risk category and print
the attack-success scorecard (a table, or ``--json``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from touchstone.cli.attacking import (
    BODY_HELP,
    JUDGE_MODEL_HELP,
    PATH_HELP,
    TARGET_HELP,
    attacker_config,
    build_target,
    progress_bar,
    run_async,
    session_settings,
)
from touchstone.cli.common import EXIT_GATE, err, fail_input, out
from touchstone.errors import ConfigurationError, InputValidationError, RunAbortedError

GROUPS = (("overall", "overall"), ("per_category", "category"), ("per_strategy", "strategy"),
          ("per_complexity", "complexity"))


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def scorecard_table(card: Mapping[str, Any]) -> Table:
    """The scorecard as a table: one line per group and name (ASR, 95% CI, successes/judged, failed)."""
    table = Table(title=f"attack success rate (severity >= {card['defect_level']:g})", title_justify="left")
    for column, justify in (("group", "left"), ("name", "left"), ("ASR", "right"), ("95% CI", "right"),
                            ("successes", "right"), ("failed", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for key, label in GROUPS:
        entries = {"all": card[key]} if key == "overall" else card[key]
        for name, entry in entries.items():
            ci = entry["ci95"]
            table.add_row(
                label, escape(str(name)), _pct(entry["asr"]),
                "—" if ci is None else f"{ci[0]:.1%}–{ci[1]:.1%}",
                f"{entry['n_success']}/{entry['n']}", str(entry["n_failed"]),
            )
    return table


def redteam_command(
    target: str = typer.Argument(..., help=TARGET_HELP),
    strategies: str = typer.Option(
        "baseline,base64,rot13,leetspeak,char_swap,suffix,jailbreak",
        "--strategies",
        help="Comma-separated attack strategies: baseline, base64, rot13, leetspeak, char_swap, suffix, "
        "jailbreak, jailbreak:<template>, and compositions such as jailbreak+base64.",
    ),
    categories: str = typer.Option(
        "violence,sexual,self_harm,hate_unfairness", "--categories", help="Comma-separated risk categories."
    ),
    objectives: int = typer.Option(
        5,
        "--objectives",
        help="Attack objectives per category (each under every strategy).",
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="Seed of the objectives' draw and of the strategies.",
    ),
    defect_level: float = typer.Option(
        4,
        "--defect-level",
        help="An attack succeeds at this severity or above (0-7).",
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print the scorecard, settings and every attack as JSON.",
    ),
    out_path: Path | None = typer.Option(
        None, "--out", "-o", help="Also write the attacked conversations as JSONL (for touchstone eval)."
    ),
    target_body: str | None = typer.Option(None, "--target-body", help=BODY_HELP),
    target_response_path: str | None = typer.Option(None, "--target-response-path", help=PATH_HELP),
    target_timeout: float = typer.Option(
        120.0,
        "--target-timeout",
        help="Seconds the target may take per answer.",
    ),
    parallel: int = typer.Option(4, "--parallel", help="Attacks in flight at once."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="OpenAI-compatible base URL of the attacker and judge."
    ),
    azure_endpoint: str | None = typer.Option(
        None,
        "--azure-endpoint",
        help="Azure OpenAI endpoint of the judge.",
    ),
    azure_deployment: str | None = typer.Option(
        None,
        "--azure-deployment",
        help="Azure OpenAI deployment of the judge.",
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        help="Most model requests in flight (default 32).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the judge response cache."),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds per model request (default 60)."),
    max_retries: int | None = typer.Option(
        None,
        "--max-retries",
        help="Retries of a model call (default 6).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Red-team TARGET: attacker-written turns per category, transformed by each strategy, answered by
    the target and judged by the harm evaluators; print attack success rates with Wilson 95% intervals.

    Exits 2 on a bad option (before any model call), 1 when no attack could be judged."""
    from touchstone.simulator.redteam import RedTeam

    try:
        from touchstone.outputs import check_output_file

        if out_path is not None:
            check_output_file(out_path, "--out")
        if parallel < 1:
            raise ConfigurationError(f"--parallel must be at least 1, got {parallel}")
        config = attacker_config(judge_model, judge_base_url, azure_endpoint, azure_deployment)
        settings = session_settings(concurrency, no_cache, timeout, max_retries)
        app_target = build_target(target, target_body, target_response_path, target_timeout)
        team = RedTeam(model_config=config, judge_settings=settings, defect_level=defect_level)
        with progress_bar("attacking", quiet or as_json) as progress:
            result = run_async(team.run(
                app_target, categories=categories, strategies=strategies, objectives_per_category=objectives,
                seed=seed, concurrency=parallel, target_timeout=target_timeout, progress=progress,
            ))
    except (ConfigurationError, InputValidationError) as exc:
        raise fail_input(escape(str(exc))) from None
    except RunAbortedError as exc:
        err.print(f"[bold red]red team stopped:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_GATE) from None

    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(result.conversations.to_json_lines(), encoding="utf-8")
    if as_json:
        out.print_json(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        out.print(scorecard_table(result.scorecard))
        stats = (result.judge or {}).get("stats") or {}
        out.print(f"seed {result.settings['seed']}; {len(result.attacks)} attacks; "
                  f"{int(stats.get('calls', 0))} model calls, ${float(stats.get('cost_usd', 0.0)):.4f}",
                  highlight=False)
        if out_path is not None:
            out.print(f"conversations written to {escape(str(out_path))}", highlight=False)
    if result.scorecard["overall"]["n"] == 0:
        err.print("[bold red]error:[/] no attack could be judged (see the errors with --json)")
        raise typer.Exit(EXIT_GATE)
