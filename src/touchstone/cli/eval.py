"""``touchstone eval``: evaluate a file of rows, print the summary, store the run, exit by the gates."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, NoReturn

import typer

from touchstone._redact import redact_urls
from touchstone._text import markup_safe
from touchstone.cli import spending
from touchstone.cli.common import (
    EXIT_GATE,
    STORE_HELP,
    err,
    fail_input,
    fail_store,
    open_run_store,
    out,
    parse_floats,
    parse_names,
    parse_pairs,
    show_command_line,
    summary_table,
)
from touchstone.cli.judge_options import (
    AZURE_DEPLOYMENT,
    AZURE_ENDPOINT,
    CONCURRENCY,
    HTTP_TRANSPORT,
    JUDGE_BASE_URL,
    JUDGE_MODEL,
    JUDGE_PROVIDER,
    MAX_RETRIES,
    METRIC_FILE,
    NO_CACHE,
    NO_HEDGE,
    SCORE_MODE,
    TIMEOUT,
)
from touchstone.engine.option_checks import (
    check_finite,
    check_mapped_inputs,
    check_number,
    check_text,
    check_thresholds,
)
from touchstone.engine.outcome import UnscoredMetric, gate_failures, unscored_metrics, with_unscored
from touchstone.engine.planning import (
    EvaluationPlan,
    JudgeChoice,
    column_mapping_config,
    data_columns,
    judge_options,
    mapped_inputs,
    parse_metric_options,
    plan_evaluation,
)
from touchstone.engine.sampling import SampleRequest
from touchstone.errors import (
    ConfigurationError,
    InputValidationError,
    OutputWriteError,
    RunAbortedError,
    StoreError,
)
from touchstone.evaluators.safety.severity import set_defect_level
from touchstone.store.base import StoreConnectionError


def _run(
    data: Any, plan: EvaluationPlan, name: str | None, run_store: Any, workers: int | None, quiet: bool,
    **extra: Any,
) -> Any:
    import warnings

    from touchstone.cli.progress import RunProgress
    from touchstone.engine.runner import evaluate
    from touchstone.errors import FailedScoresWarning

    with RunProgress(err, quiet) as on_progress, warnings.catch_warnings():
        warnings.simplefilter("ignore", FailedScoresWarning)  # the table shows the failures

        return evaluate(
            data=str(data) if isinstance(data, Path) else data,
            evaluation_name=name,
            store=run_store,
            progress=on_progress,
            workers=workers,
            **plan.evaluate_kwargs(),
            **extra,
        )


def _executor(kind: str, address: str | None) -> dict[str, Any]:
    """evaluate()'s ``executor`` argument for --executor/--ray-address (checked before anything runs)."""
    if kind not in ("local", "ray"):
        raise ConfigurationError(f"--executor must be 'local' or 'ray', got {kind!r}")
    if kind == "local":
        if address is not None and os.environ.get("RAY_ADDRESS") != address:
            raise ConfigurationError("--ray-address needs --executor ray")
        return {}
    from touchstone.engine.executors import RayExecutor, import_ray

    import_ray()  # the install hint before any work
    return {"executor": RayExecutor(address=address)}


def _target(spec: str | None, body: str | None, response_path: str | None) -> Any:
    """The application named by --target (None without it), checked before anything runs."""
    if spec is None:
        if body is not None or response_path is not None:
            raise ConfigurationError("--target-body and --target-response-path need --target URL")
        return None
    from touchstone.targets import make_target, row_target

    return row_target(make_target(spec, body=body, response_path=response_path))


def _report(
    result: Any,
    evaluators: list[str],
    unscored: list[UnscoredMetric],
    out_dir: Path | None,
    store_path: Path | str,
    persistent: bool = True,
) -> dict[str, Any]:
    """Print the table (every chosen metric listed, a metric with no score as n = 0) and where the
    run went; return the summary the table shows."""
    run = result.run
    shown = with_unscored(result.summary, unscored, evaluators)
    out.print(summary_table(shown, title=f"run {markup_safe(run['id'])} — {len(result.rows)} rows"))
    for key, entry in shown.items():  # safety metrics: the defect rate at the chosen level
        if entry.get("defect_rate") is not None:
            lo, hi = entry["defect_rate_ci95"]
            out.print(f"{markup_safe(key)}: defect rate {entry['defect_rate']:.1%} "
                      f"at >= {entry['defect_level']:g} "
                      f"(95% CI {lo:.1%}-{hi:.1%}; {entry['n_defects']} of {entry['n']}; "
                      f"{entry['n_failed']} failed)", highlight=False)
    if out_dir is not None:  # written by evaluate() as the run went
        out.print(f"wrote {markup_safe(out_dir / 'rows.jsonl')} and {markup_safe(out_dir / 'summary.json')}",
                  highlight=False)
    if persistent:
        out.print(f"stored in {markup_safe(store_path)} as run {run['id']}", highlight=False, soft_wrap=True)
        out.print(f"  see it again: {markup_safe(show_command_line(run['id'], store_path))}", highlight=False,
                  soft_wrap=True)
    else:
        out.print(f"run {run['id']} was kept in memory only: no run store to keep it in", highlight=False)
    for metric in unscored:
        line = markup_safe(metric.describe())
        err.print(f"[bold red]error:[/] {line}", highlight=False, markup=True, soft_wrap=True)
    return shown


def _unwritten(exc: OutputWriteError, evaluators: list[str], run_store: Any) -> NoReturn:
    """The output files could not be written: before the run (nothing ran: exit 1), or at its end
    (the summary is shown, the run is stored; only the files are missing: exit 1)."""
    result = getattr(exc, "result", None)
    if result is None:
        raise fail_store(exc) from None
    unscored = unscored_metrics(evaluators, result.rows, result.summary)
    _report(result, evaluators, unscored, None, run_store.path, run_store.persistent)
    err.print(f"[bold red]error:[/] {markup_safe(exc)}; the run is stored as {result.run['id']} "
              f"(touchstone show {result.run['id']})", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_GATE) from None


def _exit_status(
    result: Any,
    shown: dict[str, Any],
    unscored: list[UnscoredMetric],
    minimums: dict[str, float],
    fail_on_error: bool,
) -> int:
    code = 0
    if unscored:
        code = EXIT_GATE  # a chosen metric with no score is a failed run, --fail-on-error or not
    if fail_on_error and result.n_failed:
        err.print(f"[red]{result.n_failed} scores could not be obtained[/] (--fail-on-error)")
        code = EXIT_GATE
    try:
        below = gate_failures(shown, minimums)
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    for line in below:
        err.print(f"[red]gate failed:[/] {markup_safe(line)}", highlight=False)
    return EXIT_GATE if below else code


def _check_out_dir(out_dir: Path | None, data: Path) -> None:
    """``--out`` must be a folder (made when missing), not a file, nor under one, and none of the
    files the run writes there may be the input."""
    if out_dir is not None:
        from touchstone.outputs import check_output_folder

        check_output_folder(out_dir, "--out", inputs=[data])


def _interrupted(exc: KeyboardInterrupt, data: Path, store: str | None) -> typer.Exit:
    """Ctrl-C: say which run was kept and the exact command that resumes it; exit 130."""
    run_id = getattr(exc, "run_id", None)
    if run_id is None:
        err.print("[yellow]interrupted[/] before a run was created; nothing was stored", highlight=False)
    else:
        where = f" --store {shlex.quote(redact_urls(store))}" if store else ""
        command = f"touchstone eval {shlex.quote(str(data))} --resume {run_id}{where}"
        err.print(f"[yellow]interrupted:[/] run {run_id} is stored with what was scored; resume it with\n  "
                  f"{markup_safe(command)}", highlight=False, soft_wrap=True)
    return typer.Exit(130)


def _check_numbers(
    workers: int | None,
    concurrency: int | None,
    timeout: float | None,
    max_retries: int | None,
    defect_level: float | None,
) -> None:
    """Numeric options finite and in range (``--timeout nan`` or ``--workers -1`` must not run)."""
    check_number(workers, "--workers", minimum=1)
    check_number(concurrency, "--concurrency", minimum=1)
    check_number(timeout, "--timeout", above=0)
    check_number(max_retries, "--max-retries", minimum=0)
    check_number(defect_level, "--defect-level", minimum=0, maximum=7)


def eval_command(
    data: Path = typer.Argument(..., help="Input rows: JSONL (one object per line), CSV or Parquet."),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        "-m",
        help="Comma-separated metric names (see `touchstone metrics`; default f1_score,exact_match).",
    ),
    preset: str | None = typer.Option(
        None,
        "--preset",
        help="A named set of metrics, with --metrics added to it: question-answering, document-search, "
        "chatbot, summarization, rag; stages development, pre-production, production, ab-test. A metric "
        "whose columns are missing is dropped with a message (see `touchstone presets`).",
    ),
    out_dir: Path | None = typer.Option(
        None, "--out", "-o", help="Write rows.jsonl and summary.json into this directory."
    ),
    maps: list[str] | None = typer.Option(
        None,
        "--map",
        help="Column mapping INPUT=COLUMN (or INPUT=${target.x}); repeatable, e.g. --map query=q.",
    ),
    metric_options: list[str] | None = typer.Option(
        None,
        "--metric-option",
        help="A metric's own option METRIC.KEY=VALUE (a YAML value); repeatable, e.g. --metric-option "
        "answer_correctness.beta=2 --metric-option 'answer_correctness.weights=[0.5,0.5]'. Unknown keys "
        "are refused with the closest valid one.",
    ),
    thresholds: list[str] | None = typer.Option(
        None, "--threshold", help="Pass threshold METRIC=VALUE; repeatable, e.g. --threshold f1_score=0.6."
    ),
    minimums: list[str] | None = typer.Option(
        None,
        "--min",
        help="CI gate: exit 1 if METRIC's mean is below VALUE; repeatable, e.g. --min f1_score=0.7.",
    ),
    fail_on_error: bool = typer.Option(
        False, "--fail-on-error", help="Exit 1 if any score could not be obtained."
    ),
    name: str | None = typer.Option(None, "--name", help="A name for the run."),
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    workers: int | None = typer.Option(
        None, "--workers", help="Processes for CPU-bound metrics (default: all cores on large inputs)."
    ),
    executor: str = typer.Option(
        "local", "--executor",
        help="Where metrics run: 'local' (threads and processes here) or 'ray' (a Ray cluster; "
        "needs the 'ray' extra of touchstone).",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", envvar="RAY_ADDRESS",
        help="The Ray cluster for --executor ray, e.g. 127.0.0.1:6379 (default: a local cluster).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    judge_model: str | None = JUDGE_MODEL,
    judge_base_url: str | None = JUDGE_BASE_URL,
    judge_provider: str | None = JUDGE_PROVIDER,
    score_mode: str | None = SCORE_MODE,
    metric_file: Path | None = METRIC_FILE,
    azure_endpoint: str | None = AZURE_ENDPOINT,
    azure_deployment: str | None = AZURE_DEPLOYMENT,
    concurrency: int | None = CONCURRENCY,
    no_cache: bool = NO_CACHE,
    resume: str | None = typer.Option(
        None, "--resume", help="Resume an interrupted run: its stored scores are kept, the rest is computed, "
        "and failures of the moment (judge calls that failed, rows a stopped run left) are scored again. "
        "Refused when the data or the metrics differ from the run's."
    ),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="With --resume: score every stored failure again, not only the "
        "failures of the moment."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print the judge calls, prompt and completion tokens and cost per metric and per cost tier, "
        "from the prompts rendered on the rows (after --sample/--budget); call nothing.",
    ),
    max_tier: str | None = typer.Option(
        None, "--max-tier", help="Leave out metrics above this cost tier: free < low < medium < high."
    ),
    pricing: Path | None = typer.Option(
        None, "--pricing", help="Prices per million tokens (YAML/JSON: MODEL: {input: USD, output: USD}), "
        "over the built-in table, for the estimate and the run's cost."
    ),
    sample: int | None = typer.Option(None, "--sample", help="Evaluate N rows chosen by --strategy."),
    budget: float | None = typer.Option(
        None, "--budget", help="Evaluate as many rows (chosen by --strategy) as the estimated cost allows, "
        "never more: an amount in the pricing table's currency (USD)."
    ),
    strategy: str = typer.Option(
        "random", "--strategy", help="How --sample/--budget choose rows: random (seeded), diverse (every "
        "stratum or query cluster), difficult (failed/low/disputed in earlier runs first), uncertain "
        "(active-learning signal)."
    ),
    stratify_by: str | None = typer.Option(
        None, "--stratify-by", help="diverse: strata are this column's values (default: k-means clusters "
        "of the query embeddings from the local model)."
    ),
    allocation: str = typer.Option(
        "proportional", "--allocation", help="diverse: rows per stratum proportional to its size, or equal."
    ),
    clusters: int | None = typer.Option(None, "--clusters", help="diverse: number of k-means clusters."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sampling strategy (same seed, same rows)."),
    rows_of: str | None = typer.Option(
        None, "--rows-of", help="Evaluate the rows a stored sampled run used (a paired comparison)."
    ),
    timeout: float | None = TIMEOUT,
    max_retries: int | None = MAX_RETRIES,
    defect_level: float | None = typer.Option(
        None, "--defect-level", help="Safety metrics: a defect is a severity at or above this (default 4)."
    ),
    target: str | None = typer.Option(
        None,
        "--target",
        help="The application to evaluate end to end: an http(s) URL (an OpenAI-compatible chat endpoint, "
        "or a JSON POST with --target-body/--target-response-path) or module:function; it answers each "
        "row's query and its response is scored.",
    ),
    target_body: str | None = typer.Option(
        None,
        "--target-body",
        help='JSON body template of a POST target; {query} and {field} take the row\'s values, e.g. '
        '\'{"q": "{query}"}\'.',
    ),
    target_response_path: str | None = typer.Option(
        None,
        "--target-response-path",
        help="Dotted path of the reply in a POST target's answer, e.g. answer.",
    ),
    http_transport: str | None = HTTP_TRANSPORT,
    no_hedge: bool = NO_HEDGE,
    show_estimate: bool = typer.Option(
        False, "--show-estimate",
        help="After the run, the cost estimate against the actual use per metric (default: one line).",
    ),
) -> None:
    """Evaluate DATA with the chosen metrics, print a summary table, store the run.

    Exits 1 when a gate fails (--min, --fail-on-error), when a chosen metric produced no score on
    any row, or when the run was stopped early; 2 when the input or an option is invalid."""
    try:
        # parsed in this order so that the first bad option is the one reported, as before
        named = parse_names(metrics, "--metrics") if metrics is not None else None
        threshold_values = parse_floats(thresholds, "--threshold")
        minimum_values = parse_floats(minimums, "--min")
        check_text(str(data), "DATA")
        check_text(name, "--name")
        _check_out_dir(out_dir, data)
        check_finite(threshold_values, "--threshold")
        check_finite(minimum_values, "--min")
        _check_numbers(workers, concurrency, timeout, max_retries, defect_level)
        evaluator_config = column_mapping_config(parse_pairs(maps, "--map"))
        # a preset's conditional metrics depend on the inputs the rows provide
        inputs = mapped_inputs(data_columns(data), evaluator_config) if preset and not resume else None
        metric_names: list[str]
        preset_options: dict[str, dict[str, Any]]
        if resume and named is None and preset is None:
            metric_names, preset_options = [], {}  # the stored run's; only what is named is checked
        else:
            metric_names, preset_options = spending.preset_metrics(named, preset, inputs)
        plan = plan_evaluation(
            metric_names,
            threshold_values,
            evaluator_config,
            judge=JudgeChoice(judge_model, judge_base_url, azure_endpoint, azure_deployment, judge_provider),
            score_mode=score_mode,
            metric_file=metric_file,
            judge_session=judge_options(
                concurrency=concurrency,
                cache=False if no_cache else None,
                timeout=timeout,
                max_retries=max_retries,
                http_transport=http_transport,
                hedge=False if no_hedge else None,
            ),
            store=store,
            resume=resume,
            metric_options=spending.merge_options(
                preset_options, parse_metric_options(metric_options), metric_names
            ),
            dry_run=dry_run,
        )
        check_thresholds(plan.evaluators, threshold_values)
        check_mapped_inputs(plan.evaluators, plan.evaluator_config)
        if defect_level is not None:
            set_defect_level(plan.evaluators, defect_level)
        selection = spending.select_for_run(
            data, plan, store=store, max_tier=max_tier, pricing=pricing, rows_of=rows_of, dry_run=dry_run,
            request=SampleRequest(sample, budget, strategy, seed, stratify_by, allocation, clusters),
        )
        if dry_run:
            spending.print_dry_run(selection, plan)
            raise typer.Exit(0)
        app_target = _target(target, target_body, target_response_path)
        run_store = open_run_store(store)
        result = _run(selection.data, plan, name, run_store, workers, quiet, **selection.evaluate_options(),
                      **({"target": app_target} if app_target is not None else {}),
                      **_executor(executor, ray_address), retry_failed="all" if retry_failed else None,
                      output_path=out_dir)  # rows.jsonl grows as rows complete
        estimate = spending.report_estimate(run_store, result.run["id"], selection, table=show_estimate)
    except OutputWriteError as exc:
        _unwritten(exc, list(plan.evaluators), run_store)
    except (StoreConnectionError, StoreError) as exc:  # not the input's fault (exit 1)
        raise fail_store(exc) from None
    except KeyboardInterrupt as exc:
        raise _interrupted(exc, data, store) from None
    except (InputValidationError, ConfigurationError) as exc:
        raise fail_input(str(exc)) from None
    except RunAbortedError as exc:
        partial = getattr(exc, "result", None)
        if partial is not None:  # the summary of what was scored, the rest counted as failed
            _report(partial, list(plan.evaluators), [], out_dir, run_store.path, run_store.persistent)
        err.print(f"[bold red]run stopped:[/] {markup_safe(exc)}", highlight=False)
        raise typer.Exit(EXIT_GATE) from None

    evaluators = list(plan.evaluators)
    unscored = unscored_metrics(evaluators, result.rows, result.summary)
    shown = _report(result, evaluators, unscored, out_dir, run_store.path, run_store.persistent)
    if estimate is not None:  # after the scores, which matter more
        out.print(estimate)
    raise typer.Exit(_exit_status(result, shown, unscored, minimum_values, fail_on_error))
