"""``touchstone annotate``: human annotation and production feedback on a run store.

``serve`` runs the web app (its ``/annotate`` pages and ``POST /api/feedback``); ``create`` makes a
task from a run, two runs (pairwise), a dataset file or a run's active-learning queue; ``tasks``
lists them; ``export`` / ``import`` move answers as CSV or JSONL; ``queue`` shows what to annotate
first; ``feedback`` sums feedback up per time window."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from touchstone._text import json_dumps, markup_safe, safe_text
from touchstone.cli.common import STORE_HELP, err, fail_input, open_run_store, out
from touchstone.errors import InputValidationError

annotate_app = typer.Typer(
    help="Human annotation (Likert and pairwise pages, export and import), production feedback and "
    "the active-learning queue.",
    no_args_is_help=True,
)

STORE_OPTION = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP)
TOKEN_ENV = "TOUCHSTONE_FEEDBACK_TOKEN"


def _say(text: str) -> None:
    out.print(markup_safe(text), highlight=False, soft_wrap=True)


@annotate_app.command("serve")
def serve_command(
    store: str | None = STORE_OPTION,
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (default: this machine only). Production "
        "feedback from other machines needs a reachable address and a token."),
    port: int = typer.Option(8765, "--port", help="Port to listen on (1-65535; 0 picks a free one)."),
    feedback_token: str | None = typer.Option(
        None, "--feedback-token", envvar=TOKEN_ENV, show_default=False,
        help=f"Bearer token POST /api/feedback requires (also ${TOKEN_ENV}). Without one the endpoint "
        "is open to whoever can reach the address."),
) -> None:
    """Serve the annotation pages (/annotate) and the feedback endpoint (POST /api/feedback), with the
    rest of the dashboard. Stop it with Ctrl+C."""
    if not 0 <= port <= 65535:
        raise fail_input(f"--port must be between 0 and 65535, got {port}")
    from touchstone.cli.ui import is_loopback
    from touchstone.ui import MissingUIDependency, require_ui_packages

    try:
        require_ui_packages()
    except MissingUIDependency as exc:
        raise fail_input(f"{exc}") from None
    import uvicorn

    from touchstone.ui import create_app

    run_store = open_run_store(store)
    if not is_loopback(host):
        warn = "anyone who can reach it can read every run (the pages have no login)"
        if not feedback_token:
            warn += " and post feedback (no --feedback-token)"
        err.print(f"[yellow]warning:[/] listening on {markup_safe(host)}: {warn}", highlight=False,
                  soft_wrap=True)
    server = uvicorn.Server(uvicorn.Config(create_app(run_store, feedback_token=feedback_token or None),
                                           host=host, port=port, log_level="warning", access_log=False))
    _announce(server, host, port)
    try:
        server.run()
    except KeyboardInterrupt:
        _say("stopped")
    finally:
        run_store.close()


def _announce(server: Any, host: str, port: int) -> None:
    import threading
    import time

    from touchstone.cli.ui import bound_port

    def wait() -> None:
        for _ in range(600):
            if getattr(server, "started", False):
                shown = f"[{host}]" if ":" in host else host
                _say(f"annotation on http://{shown}:{bound_port(server, port)}/annotate; Ctrl+C stops it")
                return
            time.sleep(0.05)

    threading.Thread(target=wait, daemon=True, name="touchstone-annotate-announce").start()


def _dimensions(text: str) -> list[str] | None:
    names = [d.strip() for d in text.split(",") if d.strip()]
    return names or None


@annotate_app.command("create")
def create_command(
    run: str | None = typer.Option(None, "--run", help="Annotate this run's rows (its responses)."),
    against: str | None = typer.Option(None, "--against", help="With --run: a second run on the same inputs; "
                                       "the task is pairwise (A/B/tie), rows paired by id, else by index."),
    dataset: Path | None = typer.Option(
        None, "--dataset", help="Annotate a dataset file (JSONL, JSON or CSV): query, context, response; "
        "or response_a / response_b (pairwise)."),
    queue: str | None = typer.Option(None, "--queue", help="Annotate the rows of this run that the "
                                     "active-learning queue ranks first (see --budget)."),
    budget: int = typer.Option(50, "--budget", min=1, help="With --queue: how many rows."),
    metric: list[str] = typer.Option([], "--metric", help="With --queue: the judge metrics it reads "
                                     "(repeatable; default all numeric ones)."),
    dimensions: str = typer.Option(
        "", "--dimensions", help="Comma-separated dimensions. Default: relevance, coherence, fluency, "
        "helpfulness, safety (Likert); overall (pairwise)."),
    name: str | None = typer.Option(None, "--name", help="A name shown to annotators."),
    store: str | None = STORE_OPTION,
) -> None:
    """Make an annotation task and print its id (open it at /annotate/<id> under `touchstone annotate
    serve`)."""
    from touchstone.people import annotations as an
    from touchstone.people.queue import build_queue

    sources = [s for s in (run, dataset, queue) if s is not None]
    if len(sources) != 1:
        raise fail_input("give exactly one of --run, --dataset or --queue")
    if against and not run:
        raise fail_input("--against pairs with --run (a second run to compare it with)")
    records: list[dict[str, Any]] | None = None
    if dataset is not None:
        from touchstone.data.loaders import load_records

        try:
            records = [r.data for r in load_records(dataset)]
        except (InputValidationError, OSError) as exc:
            raise fail_input(str(exc)) from None
    run_store = open_run_store(store)
    try:
        if records is not None:
            task = an.create_task_from_records(run_store, records, _dimensions(dimensions), name,
                                               source=f"dataset {dataset}")
        elif queue is not None:
            if run_store.get_run(queue) is None:
                raise fail_input(f"no run {queue!r} in this store")
            ranked = build_queue(run_store, queue, budget, metric or None)
            if not ranked:
                raise fail_input(f"the queue of run {queue!r} is empty: no row has a signal to rank it by")
            task = an.create_task_from_run(run_store, queue, _dimensions(dimensions), name,
                                           indices=[x.idx for x in ranked])
        else:
            assert run is not None
            task = an.create_task_from_run(run_store, run, _dimensions(dimensions), name, against=against)
        n = len(an.items_of(run_store, task.id))
        _say(f"task {task.id}: {task.kind}, {n} items, dimensions {', '.join(task.dimensions)}")
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    finally:
        run_store.close()


@annotate_app.command("tasks")
def tasks_command(
    store: str | None = STORE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the annotation tasks, newest first."""
    from touchstone.people import annotations as an

    run_store = open_run_store(store)
    try:
        tasks = an.list_tasks(run_store)
    finally:
        run_store.close()
    if as_json:
        out.print(json_dumps([{**t.as_dict(), "items": n, "annotators": p} for t, n, p in tasks]),
                  markup=False, highlight=False, soft_wrap=True)
        return
    table = Table(title="annotation tasks")
    for col in ("task", "name", "kind", "dimensions", "items", "annotators"):
        table.add_column(col)
    for t, n, p in tasks:
        table.add_row(t.id, safe_text(t.name or ""), t.kind, safe_text(", ".join(t.dimensions)), str(n),
                      str(p))
    out.print(table)


@annotate_app.command("export")
def export_command(
    task: str = typer.Argument(..., help="The task id."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write: .csv, or .jsonl."),
    store: str | None = STORE_OPTION,
) -> None:
    """Write a task's answers as CSV or JSONL: task, item, run_id, idx, row, annotator, dimension, value
    (what `touchstone calibrate --human` reads); pairwise also model_a, model_b, winner (what
    `touchstone rank` reads)."""
    from touchstone.outputs import check_output_file
    from touchstone.people import annotations as an

    suffix = output.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise fail_input(f"--output must end in .csv or .jsonl, got {output.name!r}")
    try:
        check_output_file(output, "--output")
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    run_store = open_run_store(store)
    try:
        rows = an.export_rows(run_store, task)
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    finally:
        run_store.close()
    try:
        with output.open("w", encoding="utf-8", newline="") as fh:
            if suffix == ".jsonl":
                fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            else:
                columns = list(rows[0]) if rows else ["task", "item", "run_id", "idx", "row", "annotator",
                                                      "dimension", "value"]
                writer = csv.DictWriter(fh, fieldnames=columns)
                writer.writeheader()
                writer.writerows(rows)
    except OSError as exc:
        raise fail_input(f"cannot write {output}: {exc.strerror or exc}") from None
    _say(f"{len(rows)} answers written to {output}")


@annotate_app.command("import")
def import_command(
    task: str = typer.Argument(..., help="The task id."),
    answers: Path = typer.Argument(
        ..., help="Answers as CSV or JSONL in the export's shape (item, annotator, dimension, value; "
        "pairwise: value a/b/tie, or winner)."),
    store: str | None = STORE_OPTION,
) -> None:
    """Read answers into a task (each replaces that annotator's earlier answer to the same item)."""
    from touchstone.data.loaders import load_records
    from touchstone.people import annotations as an

    try:
        rows = [r.data for r in load_records(answers)]
    except (InputValidationError, OSError) as exc:
        raise fail_input(str(exc)) from None
    run_store = open_run_store(store)
    try:
        n = an.import_rows(run_store, task, rows)
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    finally:
        run_store.close()
    _say(f"{n} answers imported into {task}")


@annotate_app.command("queue")
def queue_command(
    run: str = typer.Argument(..., help="The run whose rows to rank."),
    budget: int = typer.Option(20, "--budget", min=0, help="How many rows to show."),
    metric: list[str] = typer.Option([], "--metric", help="Judge metrics to read (repeatable; default all)."),
    store: str | None = STORE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Rank a run's rows for annotation: judge uncertainty, disagreement (two judges, judge against
    users) and user-reported failures."""
    from touchstone.people.queue import build_queue

    run_store = open_run_store(store)
    try:
        if run_store.get_run(run) is None:
            raise fail_input(f"no run {run!r} in this store")
        ranked = build_queue(run_store, run, budget, metric or None)
    finally:
        run_store.close()
    if as_json:
        out.print(json_dumps([x.as_dict() for x in ranked]), markup=False, highlight=False, soft_wrap=True)
        return
    table = Table(title=f"annotation queue of {markup_safe(run)}")
    for col in ("row", "priority", "uncertainty", "disagreement", "failure", "why"):
        table.add_column(col, justify="left" if col == "why" else "right")
    for x in ranked:
        table.add_row(str(x.idx), f"{x.priority:.3f}", f"{x.uncertainty:.2f}", f"{x.disagreement:.2f}",
                      f"{x.failure:.0f}", safe_text("; ".join(x.reasons)))
    out.print(table)


@annotate_app.command("feedback")
def feedback_command(
    window: str = typer.Option("day", "--window", help="minute, hour, day or month (UTC)."),
    since: str | None = typer.Option(None, "--since", help="From this time (ISO 8601 prefix, inclusive)."),
    until: str | None = typer.Option(None, "--until", help="Up to this time (ISO 8601 prefix, inclusive)."),
    run: str | None = typer.Option(None, "--run", help="With --metric: the judge metric's mean beside each "
                                   "window, over this run's rows linked to the window's feedback."),
    metric: str | None = typer.Option(None, "--metric", help="The judge metric shown beside (with --run)."),
    store: str | None = STORE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Production feedback per time window: thumbs-up rate, mean rating, completion rate, escalations
    and error reports, session length."""
    from touchstone.people.feedback import aggregate

    run_store = open_run_store(store)
    try:
        windows = aggregate(run_store, window, since, until, run, metric)
    except InputValidationError as exc:
        raise fail_input(str(exc)) from None
    finally:
        run_store.close()
    if as_json:
        out.print(json_dumps([w.as_dict() for w in windows]), markup=False, highlight=False, soft_wrap=True)
        return
    table = Table(title=f"feedback per {window}")
    cols = ("window", "interactions", "thumbs up", "rating", "completion", "escalations", "errors",
            "session s")
    for col in cols + ((markup_safe(metric),) if run and metric else ()):
        table.add_column(col, justify="left" if col == "window" else "right")

    def f(x: float | None, fmt: str) -> str:
        return "—" if x is None else format(x, fmt)

    for w in windows:
        cells = [w.start, str(w.interactions), f(w.thumbs_up_rate, ".0%"), f(w.mean_rating, ".2f"),
                 f(w.completion_rate, ".0%"), str(w.counts.get("escalation", 0)),
                 str(w.counts.get("error_report", 0)), f(w.mean_session_length, ".0f")]
        if run and metric:
            cells.append(f(w.judge_mean, ".3f"))
        table.add_row(*cells)
    out.print(table)

