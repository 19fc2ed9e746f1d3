"""The ``touchstone`` command line (typer + rich)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from touchstone._version import __version__
from touchstone.errors import ConfigurationError, InputValidationError, Problem, RunAbortedError

app = typer.Typer(
    name="touchstone",
    help="Evaluate and monitor generative-AI applications: QA, RAG and RAG chat, with any judge model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

EXIT_GATE = 1
EXIT_BAD_INPUT = 2


def _fail_input(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(EXIT_BAD_INPUT)


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in values or []:
        for part in item.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise InputValidationError([Problem(option, None, None, f"expected NAME=VALUE, got {part!r}")])
            key, value = part.split("=", 1)
            pairs[key.strip()] = value.strip()
    return pairs


def _floats(values: list[str] | None, option: str) -> dict[str, float]:
    result = {}
    for key, value in _pairs(values, option).items():
        try:
            result[key] = float(value)
        except ValueError:
            raise InputValidationError([Problem(option, None, key, f"expected a number, got {value!r}")]) from None
    return result


def _mapping_config(maps: dict[str, str]) -> dict[str, Any]:
    column_mapping = {k: v if v.startswith("${") else "${data." + v + "}" for k, v in maps.items()}
    return {"default": {"column_mapping": column_mapping}} if column_mapping else {}


def build_evaluators(metric_names: list[str], thresholds: dict[str, float], options: dict[str, Any]) -> dict[str, Any]:
    """Evaluators by metric name, through the registry (unknown names raise with close matches)."""
    from touchstone.evaluators import registry

    for name in thresholds:
        if name not in metric_names:
            raise InputValidationError([Problem("--threshold", None, name, f"not one of the chosen metrics {metric_names}")])
    for name in metric_names:
        registry.get(name)  # report an unknown name before building anything
    return {name: registry.create(name, threshold=thresholds.get(name), **options) for name in metric_names}


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def summary_table(summary: dict[str, dict[str, Any]], title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("mean", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("n", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("pass rate", justify="right")
    for full_key, entry in summary.items():
        name, _, sub = full_key.partition(".")
        key = sub if sub == name else full_key  # "f1_score.f1_score" reads better as "f1_score"
        failed = entry.get("n_failed", 0)
        failed_text = f"[red]{failed}[/]" if failed else "0"
        if entry.get("corpus"):
            table.add_row(key + " (corpus)", _fmt(entry.get("value")), "-", str(entry.get("n", "-")), failed_text, "-")
            continue
        lo, hi = entry.get("ci95", [None, None])
        ci = f"[{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else "-"
        rate = entry.get("pass_rate")
        table.add_row(
            key, _fmt(entry.get("mean")), ci, str(entry.get("n")), failed_text, "-" if rate is None else f"{rate:.1%}"
        )
    return table


def _gate(summary: dict[str, dict[str, Any]], minimums: dict[str, float]) -> list[str]:
    """Means below their ``--min``; a key may be a metric name or ``<evaluator>.<output key>``."""
    failures = []
    for key, minimum in minimums.items():
        candidates = [k for k in summary if k == key or k == f"{key}.{key}" or k.startswith(f"{key}.")]
        entry_key = next((k for k in candidates if k in (key, f"{key}.{key}")), candidates[0] if candidates else None)
        if entry_key is None:
            raise InputValidationError([Problem("--min", None, key, f"no such metric in the results; have {list(summary)}")])
        entry = summary[entry_key]
        mean = entry.get("mean", entry.get("value"))
        if mean is None or mean < minimum:
            failures.append(f"{entry_key} mean {_fmt(mean)} is below the minimum {minimum}")
    return failures


@app.command("eval")
def eval_command(
    data: Path = typer.Argument(..., help="Input rows: JSONL (one object per line), CSV or Parquet."),
    metrics: str = typer.Option(
        "f1_score,exact_match", "--metrics", "-m", help="Comma-separated metric names (see `touchstone metrics`)."
    ),
    out_dir: Path | None = typer.Option(None, "--out", "-o", help="Write rows.jsonl and summary.json into this directory."),
    maps: list[str] | None = typer.Option(
        None, "--map", help="Column mapping INPUT=COLUMN (or INPUT=${target.x}); repeatable, e.g. --map query=q."
    ),
    thresholds: list[str] | None = typer.Option(
        None, "--threshold", help="Pass threshold METRIC=VALUE; repeatable, e.g. --threshold f1_score=0.6."
    ),
    minimums: list[str] | None = typer.Option(
        None, "--min", help="CI gate: exit 1 if METRIC's mean is below VALUE; repeatable, e.g. --min f1_score=0.7."
    ),
    fail_on_error: bool = typer.Option(False, "--fail-on-error", help="Exit 1 if any score could not be obtained."),
    name: str | None = typer.Option(None, "--name", help="A name for the run."),
    store: Path | None = typer.Option(
        None, "--store", envvar="TOUCHSTONE_STORE", help="Run store (SQLite). Default: ~/.touchstone/runs.db."
    ),
    workers: int | None = typer.Option(None, "--workers", help="Processes for CPU-bound metrics (default: all cores on large inputs)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="Judge model for LLM-judged metrics (default: $TOUCHSTONE_JUDGE_MODEL, else gpt-4o-mini)."
    ),
    judge_base_url: str | None = typer.Option(
        None, "--judge-base-url", help="OpenAI-compatible base URL of the judge (default: $OPENAI_BASE_URL)."
    ),
    score_mode: str | None = typer.Option(
        None, "--score-mode", help="Judge scores: 'sampled' (default) or 'logprobs' (probability-weighted expectation)."
    ),
    metric_file: Path | None = typer.Option(
        None, "--metric-file", help="YAML file of custom metrics (rubrics or Python functions), all added to the run."
    ),
    azure_endpoint: str | None = typer.Option(
        None, "--azure-endpoint", help="Azure OpenAI endpoint of the judge (default: $AZURE_OPENAI_ENDPOINT)."
    ),
    azure_deployment: str | None = typer.Option(
        None, "--azure-deployment", help="Azure OpenAI deployment of the judge (default: $AZURE_OPENAI_DEPLOYMENT)."
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", help="Most judge requests in flight (default 32; halves on 429 and climbs back)."
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not read or write the judge response cache."),
    resume: str | None = typer.Option(
        None, "--resume", help="Resume an interrupted run: its stored scores are kept, the rest is computed."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the number of judge calls and an estimate of tokens and cost; call nothing."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds per judge request (default 60)."),
    max_retries: int | None = typer.Option(
        None, "--max-retries", help="Retries of a judge call after a transient error (default 6)."
    ),
    http_transport: str | None = typer.Option(
        None,
        "--http-transport",
        help="HTTP stack under the openai client: aiohttp (less CPU per request), httpx, or auto "
        "(default: aiohttp when installed; or $TOUCHSTONE_HTTP_TRANSPORT).",
    ),
) -> None:
    """Evaluate DATA with the chosen metrics, print a summary table, store the run."""
    from touchstone.engine.runner import evaluate
    from touchstone.store.sqlite import RunStore

    try:
        metric_names = [m.strip() for m in metrics.split(",") if m.strip()]
        if not metric_names:
            raise InputValidationError([Problem("--metrics", None, None, "no metric given")])
        threshold_values = _floats(thresholds, "--threshold")
        minimum_values = _floats(minimums, "--min")
        evaluator_config = _mapping_config(_pairs(maps, "--map"))
        from touchstone.evaluators.judging import configured_judge

        stored = _stored_run(store, resume) if resume else None
        if stored is not None:  # the interrupted run's own metrics, thresholds and mapping
            metric_names, threshold_values, evaluator_config, stored_judge = stored
        if azure_endpoint or azure_deployment:
            from touchstone.judges.config import model_config_from_env

            judge: Any = model_config_from_env(
                judge_model, azure_endpoint=azure_endpoint, azure_deployment=azure_deployment
            )
        elif stored is not None and stored_judge is not None and not (judge_model or judge_base_url):
            judge = stored_judge
        else:
            judge = configured_judge(judge_model, judge_base_url)
        judge_options: dict[str, Any] = {
            k: v
            for k, v in {
                "concurrency": concurrency,
                "cache": False if no_cache else None,
                "timeout": timeout,
                "max_retries": max_retries,
                "http_transport": http_transport,
            }.items()
            if v is not None
        }
        file_metrics: dict[str, Any] = {}
        if metric_file is not None:
            from touchstone.evaluators.custom import split_file_metrics

            metric_names, threshold_values, file_metrics = split_file_metrics(
                metric_file, metric_names, threshold_values, model_config=judge, score_mode=score_mode
            )
        options = {"model_config": judge, "score_mode": score_mode}
        evaluators = {**build_evaluators(metric_names, threshold_values, options), **file_metrics}
        if dry_run:
            from touchstone.judges.config import JudgeSettings
            from touchstone.judges.dryrun import estimate

            est = estimate(
                data=str(data), evaluators=evaluators, evaluator_config=evaluator_config,
                settings=JudgeSettings.from_options(judge_options),
            )
            for line in est.lines():
                out.print(line, highlight=False)
            raise typer.Exit(0)
        run_store = RunStore(store)
        with _progress(quiet) as (progress, task):

            def on_progress(done: int, total: int) -> None:
                if progress is not None:
                    progress.update(task, completed=done, total=total)

            result = evaluate(
                data=str(data),
                evaluators=evaluators,
                evaluator_config=evaluator_config,
                evaluation_name=name,
                store=run_store,
                progress=on_progress,
                workers=workers,
                resume=resume,
                **judge_options,
            )
    except (InputValidationError, ConfigurationError) as exc:
        raise _fail_input(str(exc)) from None
    except RunAbortedError as exc:
        err.print(f"[bold red]run stopped:[/] {exc}", highlight=False)
        raise typer.Exit(EXIT_GATE) from None

    run = result.run
    out.print(summary_table(result.summary, title=f"run {run['id']} — {len(result.rows)} rows"))
    if out_dir is not None:
        result.write(out_dir)
        out.print(f"wrote {out_dir / 'rows.jsonl'} and {out_dir / 'summary.json'}")
    out.print(f"stored in {run_store.path} as run {run['id']} (touchstone show {run['id']})", highlight=False)
    code = 0
    if fail_on_error and result.n_failed:
        err.print(f"[red]{result.n_failed} scores could not be obtained[/] (--fail-on-error)")
        code = EXIT_GATE
    try:
        below = _gate(result.summary, minimum_values)
    except InputValidationError as exc:
        raise _fail_input(str(exc)) from None
    for line in below:
        err.print(f"[red]gate failed:[/] {line}")
    if below:
        code = EXIT_GATE
    raise typer.Exit(code)


def _stored_run(
    store: Path | None, run_id: str
) -> tuple[list[str], dict[str, float], dict[str, Any], Any]:
    """Metric names, thresholds, evaluator configuration and judge configuration (without secrets:
    keys come from the environment again) of a stored run, to resume it as it was started."""
    from touchstone.store.sqlite import RunStore

    info = RunStore(store).get_run(run_id)
    if info is None:
        raise ConfigurationError(f"no run {run_id!r} in the store {RunStore(store).path}")
    names: list[str] = []
    thresholds: dict[str, float] = {}
    judge: Any = None
    for name, ev in (info.config.get("evaluators") or {}).items():
        names.append(ev.get("metric") or name)
        opts = ev.get("options") or {}
        if isinstance(opts.get("threshold"), (int, float)):
            thresholds[ev.get("metric") or name] = float(opts["threshold"])
        described = opts.get("judge")
        if judge is None and isinstance(described, dict) and described.get("model"):
            from touchstone.judges.config import AzureOpenAIModelConfiguration, OpenAIModelConfiguration

            if described.get("azure_endpoint"):
                judge = AzureOpenAIModelConfiguration(
                    azure_endpoint=described["azure_endpoint"],
                    azure_deployment=described["model"],
                    api_version=described.get("api_version"),
                )
            else:
                judge = OpenAIModelConfiguration(described["model"], base_url=described.get("base_url"))
    return names, thresholds, dict(info.config.get("evaluator_config") or {}), judge


class _progress:
    """A rich progress bar on stderr (off with --quiet or when stderr is not a terminal... still shown
    in CI logs as a final line)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.progress: Progress | None = None

    def __enter__(self) -> tuple[Progress | None, Any]:
        if self.quiet:
            return None, None
        self.progress = Progress(
            TextColumn("scoring"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=False,
        )
        self.progress.start()
        return self.progress, self.progress.add_task("scoring", total=None)

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.stop()


@app.command("metrics")
def metrics_command() -> None:
    """List the available metrics: name, inputs, range, and whether a judge model is needed."""
    from touchstone.evaluators import registry

    table = Table(title="metrics")
    table.add_column("name", style="bold")
    table.add_column("inputs")
    table.add_column("range")
    table.add_column("judge")
    table.add_column("description")
    for name, cls in registry.available().items():
        required = {n for mode in (cls.input_modes or ()) for n in mode}
        parts = []
        for spec in cls.inputs:
            is_required = spec.name in required if cls.input_modes else spec.required
            parts.append(spec.name if is_required else f"[{spec.name}]")
        modes = " | ".join(", ".join(m) for m in cls.input_modes) if cls.input_modes else ", ".join(parts)
        table.add_row(name, modes, cls.value_range, "yes" if cls.needs_judge else "no", cls.description)
    out.print(table)


@app.command("runs")
def runs_command(
    store: Path | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help="Run store (SQLite)."),
    limit: int = typer.Option(20, "--limit", help="How many runs, newest first."),
) -> None:
    """List stored runs, newest first."""
    from touchstone.store.sqlite import RunStore

    run_store = RunStore(store)
    table = Table(title=f"runs in {run_store.path}")
    table.add_column("id", no_wrap=True, min_width=22)
    for col in ("name", "started", "status", "rows", "data", "metrics"):
        table.add_column(col, overflow="fold")
    for info in run_store.list_runs(limit):
        evaluators = ", ".join(info.config.get("evaluators", {}))
        table.add_row(
            info.id,
            info.name or "",
            info.started,
            info.status,
            str(info.config.get("n_rows", "")),
            str(info.config.get("data", "")),
            evaluators,
        )
    out.print(table)


@app.command("show")
def show_command(
    run_id: str = typer.Argument(..., help="A run id from `touchstone runs`."),
    store: Path | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help="Run store (SQLite)."),
    as_json: bool = typer.Option(False, "--json", help="Print the stored summary document as JSON."),
) -> None:
    """Print a stored run again: its summary table, or its summary document with --json."""
    from touchstone.store.sqlite import RunStore

    run_store = RunStore(store)
    info = run_store.get_run(run_id)
    if info is None:
        raise _fail_input(f"no run {run_id!r} in {run_store.path}; see `touchstone runs`")
    summary = (info.summary or {}).get("summary", {})
    if as_json:
        doc = {"metrics": info.metrics or {}, "summary": summary, "run": info.as_dict()}
        out.print_json(json.dumps(doc, default=str))
        return
    out.print(summary_table(summary, title=f"run {info.id} — {info.status} — {info.config.get('data')}"))
    out.print(f"started {info.started}, finished {info.finished or '-'}, package {info.version}", highlight=False)


@app.command("version")
def version_command() -> None:
    """Print the package version."""
    out.print(__version__)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted; finished scores are stored — resume with the run id shown by `touchstone runs`")
        sys.exit(130)


if __name__ == "__main__":
    main()
