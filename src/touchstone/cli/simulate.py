"""``touchstone simulate``: adversarial conversations against an application, written as JSONL in
SPEC 2.2's conversation format (ready for ``touchstone eval -m violence,...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

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

INDIRECT = ("indirect", "xpia", "adv_xpia")


def _jailbreak_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}.jailbreak{path.suffix or '.jsonl'}")


def _write(path: Path, results: Any, qr: bool) -> None:
    """The conversations (or, with ``--qr``, their exchanges) as JSONL, each line with an ``id``:
    ``c<n>`` for the n-th conversation (``c<n>-t<k>`` for its k-th exchange), the same in a run's
    regular and jailbreak files, so ``touchstone jailbreak`` pairs their rows by id."""
    import json

    from touchstone.simulator.output import qa_rows

    lines: list[dict[str, Any]] = []
    for n, item in enumerate(results, start=1):
        if qr:
            lines += [{"id": f"c{n}-t{k}", **row} for k, row in enumerate(qa_rows(item), start=1)]
        else:
            lines.append({"id": f"c{n}", **item})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def _report(name: str, path: Path, results: Any) -> int:
    failed = [item for item in results if "error" in item]
    out.print(f"{escape(name)}: {len(results)} conversations -> {escape(str(path))}"
              f" ({len(failed)} with a target or attacker error)", highlight=False)
    for item in failed[:5]:
        e = item["error"]
        err.print(f"  [yellow]{escape(e['kind'])}[/] turn {e['turn']}: {escape(e['message'][:200])}",
                  highlight=False)
    return len(failed)


def simulate_command(
    scenario: str = typer.Option(
        ..., "--scenario", "-s",
        help="qa, qa_documents, conversation, summarization, search, rewrite, content_gen_ungrounded, "
        "content_gen_grounded, protected_material, code_vulnerability, ungrounded_attributes, or indirect "
        "(cross-domain prompt injection).",
    ),
    target: str = typer.Option(..., "--target", "-t", help=TARGET_HELP),
    out_path: Path = typer.Option(..., "--out", "-o", help="JSONL file for the conversations."),
    max_results: int = typer.Option(
        3,
        "--max-simulation-results",
        "-n",
        help="Most conversations to simulate.",
    ),
    turns: int = typer.Option(
        1,
        "--max-conversation-turns",
        help="User turns per conversation (conversation scenario).",
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="Randomization seed: the same seed gives the same conversations.",
    ),
    jailbreak: bool = typer.Option(
        False, "--jailbreak",
        help="Direct attack: also write the same conversations with a jailbreak on the first turn "
        "(to OUT with .jailbreak before the suffix).",
    ),
    qr: bool = typer.Option(
        False,
        "--qr",
        help="Write query/response rows (one per exchange) instead of conversations.",
    ),
    target_body: str | None = typer.Option(None, "--target-body", help=BODY_HELP),
    target_response_path: str | None = typer.Option(None, "--target-response-path", help=PATH_HELP),
    target_timeout: float = typer.Option(
        120.0,
        "--target-timeout",
        help="Seconds the target may take per answer.",
    ),
    parallel: int = typer.Option(4, "--parallel", help="Conversations in flight at once."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_MODEL_HELP),
    judge_base_url: str | None = typer.Option(
        None,
        "--judge-base-url",
        help="OpenAI-compatible base URL of the attacker (default: $OPENAI_BASE_URL).",
    ),
    azure_endpoint: str | None = typer.Option(
        None,
        "--azure-endpoint",
        help="Azure OpenAI endpoint of the attacker.",
    ),
    azure_deployment: str | None = typer.Option(
        None,
        "--azure-deployment",
        help="Azure OpenAI deployment of the attacker.",
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        help="Most attacker requests in flight (default 32).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the judge response cache."),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        help="Seconds per attacker request (default 60).",
    ),
    max_retries: int | None = typer.Option(
        None,
        "--max-retries",
        help="Retries of an attacker call (default 6).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Simulate adversarial conversations against TARGET with an attacker model and write them as JSONL.

    Exits 2 on a bad option (before any model call), 1 when every conversation failed."""
    from touchstone.simulator import AdversarialSimulator, DirectAttackSimulator, IndirectAttackSimulator
    from touchstone.simulator.scenarios import parse_scenario

    try:
        from touchstone.outputs import check_output_file

        check_output_file(out_path, "--out")
        if jailbreak:
            check_output_file(_jailbreak_path(out_path), "--out")
        indirect = scenario.strip().lower() in INDIRECT
        chosen = scenario if indirect else parse_scenario(scenario)
        if jailbreak and indirect:
            raise ConfigurationError("--jailbreak applies to the direct scenarios, not to indirect")
        for name, value in (("--max-simulation-results", max_results), ("--max-conversation-turns", turns),
                            ("--parallel", parallel)):
            if value < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {value}")
        config = attacker_config(judge_model, judge_base_url, azure_endpoint, azure_deployment)
        settings = session_settings(concurrency, no_cache, timeout, max_retries)
        app_target = build_target(target, target_body, target_response_path, target_timeout)
        common: dict[str, Any] = {
            "target": app_target, "max_simulation_results": max_results, "randomization_seed": seed,
            "concurrent_async_task": parallel, "target_timeout": target_timeout,
        }
        with progress_bar("simulating", quiet) as progress:
            if indirect:
                sim = IndirectAttackSimulator(model_config=config, judge_settings=settings)
                results = {"indirect": run_async(sim(**common, progress=progress))}
            elif jailbreak:
                direct = DirectAttackSimulator(model_config=config, judge_settings=settings)
                results = run_async(direct(scenario=chosen, max_conversation_turns=turns, **common,
                                           progress=progress))
            else:
                sim_a = AdversarialSimulator(model_config=config, judge_settings=settings)
                results = {"regular": run_async(sim_a(scenario=chosen, max_conversation_turns=turns, **common,
                                                      progress=progress))}
    except (ConfigurationError, InputValidationError) as exc:
        raise fail_input(escape(str(exc))) from None
    except RunAbortedError as exc:
        err.print(f"[bold red]simulation stopped:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_GATE) from None

    failed = total = 0
    for name, convs in results.items():
        path = _jailbreak_path(out_path) if name == "jailbreak" else out_path
        _write(path, convs, qr)
        failed += _report(name, path, convs)
        total += len(convs)
    stats = (next(iter(results.values())).judge or {}).get("stats") or {}
    if stats:
        keys = ("calls", "cache_hits", "prompt_tokens", "completion_tokens")
        calls, cached, prompt, completion = (int(stats.get(k, 0)) for k in keys)
        line = (f"attacker: {calls} calls, {cached} answers from the cache, {prompt} prompt + {completion} "
                f"completion tokens, ${float(stats.get('cost_usd', 0.0)):.4f}")
        out.print(line, highlight=False)
    if total and failed == total:
        raise typer.Exit(EXIT_GATE)
