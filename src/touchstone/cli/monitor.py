"""``touchstone monitor``: ingest production interactions, evaluate them per time window, alert."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from touchstone.cli.common import (
    EXIT_GATE,
    NO_VALUE,
    STORE_HELP,
    err,
    fail_input,
    fmt,
    open_run_store,
    out,
    parse_floats,
    parse_names,
    parse_pairs,
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
from touchstone.engine.planning import JudgeChoice, column_mapping_config, judge_options, plan_evaluation
from touchstone.errors import ConfigurationError, InputValidationError, Problem

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_LISTEN = re.compile(r"^https?://([^/:@]+|\[[0-9a-fA-F:]+\]):(\d{1,5})/?$")


class _ConsoleLog(logging.Handler):
    """The monitor's log lines on stderr, as plain text (data in them is never read as markup)."""

    def emit(self, record: logging.LogRecord) -> None:
        colour = "red" if record.levelno >= logging.ERROR else "yellow"
        err.print(
            f"[{colour}]{record.levelname.lower()}:[/] {escape(record.getMessage())}",
            highlight=False,
            soft_wrap=True,
        )


def _bad(option: str, message: str) -> InputValidationError:
    return InputValidationError([Problem(option, None, None, message)])


def _listen_address(source: str) -> tuple[str, int] | None:
    match = _LISTEN.match(source)
    return (match.group(1).strip("[]"), int(match.group(2))) if match else None


def _check_source(source: str, once: bool) -> tuple[Path | None, tuple[str, int] | None]:
    listen = _listen_address(source)
    if listen is not None:
        if once:
            raise _bad(
                "SOURCE", "--once reads a directory of JSONL files; an HTTP source runs until it is stopped"
            )
        return None, listen
    if source.startswith(("http://", "https://")):
        raise _bad("SOURCE", f"expected http://HOST:PORT to listen on, got {source!r}")
    path = Path(source)
    if not path.is_dir():
        raise _bad(
            "SOURCE",
            f"expected a directory of .jsonl files or http://HOST:PORT, got {source!r} (no such directory)",
        )
    return path, None


def _check_numbers(sample_rate: float, baseline: int, alpha: float) -> None:
    if not 0.0 < sample_rate <= 1.0:
        raise _bad("--sample-rate", f"expected a rate in (0, 1], got {sample_rate}")
    if baseline < 0:
        raise _bad("--baseline", f"expected a number of windows >= 0, got {baseline}")
    if not 0.0 < alpha < 1.0:
        raise _bad("--alpha", f"expected a level in (0, 1), got {alpha}")


def _state_dir(state: Path | None, store_path: str | Path, persistent: bool, name: str) -> Path:
    if state is not None:
        return state
    where = Path(str(store_path))
    local = persistent and where.suffix and "://" not in str(store_path)
    base = where.parent if local else Path.home() / ".touchstone"
    return base / "monitors" / name


def window_line(report: Any) -> str:
    """One window in one line: its span, rows, each metric's mean (with failed rows when any), the
    alerts it fired and its run id."""
    from touchstone.monitor.windows import iso

    parts = []
    for full_key, entry in report.summary.items():
        name, _, sub = full_key.partition(".")
        key = sub if sub == name else full_key
        if entry.get("corpus"):
            parts.append(f"{key} {fmt(entry.get('value'))}")
            continue
        mean = NO_VALUE if entry.get("n") == 0 else fmt(entry.get("mean"))
        failed = entry.get("n_failed", 0)
        parts.append(f"{key} {mean}" + (f" ({failed} failed)" if failed else ""))
    alerts = f" · {len(report.alerts)} alert{'s' if len(report.alerts) != 1 else ''}" if report.alerts else ""
    return (f"{iso(report.start)} .. {iso(report.end)} · {report.n} rows · {', '.join(parts) or 'no metric'}"
            f"{alerts} · run {report.run_id}")


def _report_window(report: Any, tables: bool) -> None:
    from touchstone.monitor.windows import iso

    if tables:
        title = f"window {iso(report.start)} .. {iso(report.end)}: run {report.run_id}, {report.n} rows"
        out.print(summary_table(report.summary, title=escape(title)))
    else:
        style = "bold red" if report.alerts else ""
        out.print(Text(window_line(report), style=style), highlight=False, soft_wrap=True)


def _windows_summary(reports: list[Any]) -> str:
    """After the windows: how many, how many alerted, and how to see the latest again."""
    if not reports:
        return "no window was due"
    alerted = sum(1 for r in reports if r.alerts)
    latest = reports[-1]
    return (f"{len(reports)} window{'s' if len(reports) != 1 else ''} evaluated, {alerted} with alerts; "
            f"latest: touchstone show {latest.run_id}")


def _sinks(webhook: str | None) -> list[Any]:
    from touchstone.monitor.sinks import LogSink, WebhookSink

    sinks: list[Any] = [
        LogSink(lambda line: err.print(f"[bold red]{escape(line)}[/]", highlight=False, soft_wrap=True))
    ]
    if webhook:
        try:
            sinks.append(WebhookSink(webhook))
        except ValueError as exc:
            raise _bad("--webhook", str(exc)) from None
    return sinks


@contextmanager
def _scoring_progress(quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar of the window being scored (rich, on stderr; none with --quiet)."""
    if quiet:
        yield None
        return
    progress = Progress(
        TextColumn("scoring window"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    task = progress.add_task("scoring", total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    with progress:
        yield update


def _evaluate(monitor: Any, quiet: bool, everything: bool, tables: bool) -> list[Any]:
    with _scoring_progress(quiet) as update:
        reports: list[Any] = monitor.evaluate_due(everything=everything, progress=update)
    if not quiet:
        for report in reports:
            _report_window(report, tables)
    return reports


def _run_once(monitor: Any, tail: Any, quiet: bool, closed_only: bool, tables: bool) -> int:
    """Read, evaluate, exit status: 1 when an alert fired or a window could not be evaluated."""
    if tail is not None:
        monitor.tail(tail)
    reports = _evaluate(monitor, quiet, everything=not closed_only, tables=tables)
    if not quiet:
        out.print(escape(_windows_summary(reports)), highlight=False, soft_wrap=True)
    err.print(escape(_counts_line(monitor)), highlight=False, soft_wrap=True)
    fired = sum(len(r.alerts) for r in reports)
    return EXIT_GATE if fired or monitor.failed_windows else 0


def _run_loop(monitor: Any, tail: Any, server: Any, poll: float, quiet: bool, tables: bool) -> None:
    """Tail and evaluate closed windows until interrupted."""
    if server is not None:
        err.print(f"listening on {server.url} (POST /v1/interactions, /v1/traces)", highlight=False)
    try:
        while True:
            if tail is not None:
                monitor.tail(tail)
            if monitor.due():
                _evaluate(monitor, quiet, everything=False, tables=tables)
            time.sleep(poll)
    finally:
        if server is not None:
            server.stop()


def _counts_line(monitor: Any) -> str:
    c = monitor.counts
    return (
        f"received {c['received']}, kept {c['kept']}, invalid {c['invalid']}, sampled out "
        f"{c['sampled_out']}, late {c['late']}, duplicate {c['duplicate']}, evaluated {c['evaluated']}"
    )


def monitor_command(
    source: str = typer.Argument(
        ...,
        help="A directory of .jsonl files to tail (one interaction a line), or http://HOST:PORT to listen "
        "on for POST /v1/interactions (JSON or JSONL) and OTLP/HTTP POST /v1/traces (JSON or protobuf).",
    ),
    metrics: str = typer.Option(
        ..., "--metrics", "-m", help="Comma-separated metric names to evaluate per window."
    ),
    window: str = typer.Option("1h", "--window", help="Width of the tumbling windows: 30m, 1h, 1d..."),
    thresholds: list[str] | None = typer.Option(
        None,
        "--threshold",
        help="METRIC=VALUE: alert when a window's mean is under VALUE (over it, for lower-is-better "
        "metrics); also the metric's pass threshold per row. Repeatable.",
    ),
    baseline: int = typer.Option(
        0,
        "--baseline",
        help="Test each window against the per-row scores of this many earlier windows (Welch's t-test, "
        "one-sided) and alert on a significant drop; 0: no regression test.",
    ),
    alpha: float = typer.Option(0.01, "--alpha", help="Significance level of the regression test."),
    sample_rate: float = typer.Option(
        1.0,
        "--sample-rate",
        help="Share of interactions evaluated, decided by a hash of the id (trace id for spans): the "
        "same id is always kept or always dropped.",
    ),
    webhook: str | None = typer.Option(
        None,
        "--webhook",
        help="POST each window's alerts as JSON here (retried; never fatal; credentials in "
        "the URL are sent as basic authentication and never logged).",
    ),
    once: bool = typer.Option(
        False,
        "--once",
        help="Read what the directory holds, evaluate every window present (closed or not), exit: 1 when "
        "an alert fired or a window could not be evaluated (for cron).",
    ),
    closed_only: bool = typer.Option(
        False,
        "--closed-only",
        help="With --once, evaluate only windows that have closed (end + --grace passed); the open one "
        "stays pending for the next run (hourly cron without partial windows).",
    ),
    name: str | None = typer.Option(
        None,
        "--name",
        help="The monitor's name (windows are stored as runs monitor:NAME:START). "
        "Default: the directory's name, or 'http'.",
    ),
    state: Path | None = typer.Option(
        None,
        "--state",
        help="Directory for read offsets, pending interactions and alerts.jsonl. "
        "Default: monitors/NAME beside the store.",
    ),
    grace: str = typer.Option(
        "0s", "--grace", help="Wait this long after a window ends before evaluating it (late arrivals)."
    ),
    poll: float = typer.Option(
        5.0, "--poll", help="Seconds between reads of the directory and window checks."
    ),
    otlp_export: str | None = typer.Option(
        None,
        "--otlp-export",
        help="Send each row's scores as OpenTelemetry gen_ai.evaluation.result events (OTLP/HTTP JSON logs) "
        "to this collector URL (…/v1/logs added when absent).",
    ),
    maps: list[str] | None = typer.Option(None, "--map", help="Column mapping INPUT=COLUMN; repeatable."),
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No window lines; alerts and errors only."),
    tables: bool = typer.Option(
        False, "--tables", help="A summary table per window instead of one line per window."
    ),
    judge_model: str | None = JUDGE_MODEL,
    judge_base_url: str | None = JUDGE_BASE_URL,
    judge_provider: str | None = JUDGE_PROVIDER,
    score_mode: str | None = SCORE_MODE,
    metric_file: Path | None = METRIC_FILE,
    azure_endpoint: str | None = AZURE_ENDPOINT,
    azure_deployment: str | None = AZURE_DEPLOYMENT,
    concurrency: int | None = CONCURRENCY,
    no_cache: bool = NO_CACHE,
    timeout: float | None = TIMEOUT,
    max_retries: int | None = MAX_RETRIES,
    http_transport: str | None = HTTP_TRANSPORT,
    no_hedge: bool = NO_HEDGE,
) -> None:
    """Monitor production traffic: evaluate METRICS on each time window of interactions from SOURCE,
    store each window as a run, and alert on thresholds and regressions.

    Each interaction is a row in touchstone's data format plus "timestamp" (ISO 8601) and an
    optional "id". Exits 2 on invalid options; with --once, 1 when any alert fired."""
    from touchstone.monitor.service import Monitor, MonitorConfig
    from touchstone.monitor.sources.http import MonitorHTTPServer
    from touchstone.monitor.sources.jsonl import DirectoryTail
    from touchstone.monitor.state import MonitorState
    from touchstone.monitor.windows import parse_duration

    try:
        directory, listen = _check_source(source, once)
        monitor_name = name or (directory.resolve().name if directory is not None else "http")
        if not _NAME.match(monitor_name):
            raise _bad("--name", f"expected letters, digits, '_', '.', '-' (up to 64), got {monitor_name!r}")
        _check_numbers(sample_rate, baseline, alpha)
        width, grace_s = parse_duration(window), parse_duration(grace, "--grace", minimum=0)
        threshold_values = parse_floats(thresholds, "--threshold")
        plan = plan_evaluation(
            parse_names(metrics, "--metrics"),
            threshold_values,
            column_mapping_config(parse_pairs(maps, "--map")),
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
        )
        sinks = _sinks(webhook)
        exporter = None
        if otlp_export:
            from touchstone.monitor.export import EvaluationExporter

            exporter = EvaluationExporter(otlp_export)
        run_store = open_run_store(store)
        state_dir = MonitorState(_state_dir(state, run_store.path, run_store.persistent, monitor_name))
    except (InputValidationError, ConfigurationError, ValueError) as exc:
        raise fail_input(str(exc)) from None

    from touchstone.monitor.sinks import FileSink

    handler = _ConsoleLog()
    logging.getLogger("touchstone.monitor").addHandler(handler)
    logging.getLogger("touchstone.monitor").propagate = False
    config = MonitorConfig(monitor_name, width, sample_rate, threshold_values, baseline, alpha, grace_s)
    monitor = Monitor(
        config, plan, run_store, state_dir, [*sinks, FileSink(state_dir.alerts_path)], exporter=exporter
    )
    tail = DirectoryTail(directory, state_dir.load_offsets()) if directory is not None else None
    if once:
        raise typer.Exit(_run_once(monitor, tail, quiet, closed_only, tables))
    server = MonitorHTTPServer(monitor, *listen).start() if listen is not None else None
    _run_loop(monitor, tail, server, poll, quiet, tables)
