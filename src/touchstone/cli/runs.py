"""``touchstone runs``: the stored runs, newest first."""

from __future__ import annotations

import typer
from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from touchstone.cli.common import STORE_HELP, open_run_store, out

WIDE = 120
"""From this many columns up the runs are one table; below it, a short block per run."""


def _started(stamp: str) -> str:
    """``2026-11-27T15:25:20+00:00`` as ``2026-11-27 15:25`` (the id carries the seconds)."""
    return stamp[:16].replace("T", " ") if len(stamp) >= 16 else stamp


def runs_command(
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    limit: int = typer.Option(20, "--limit", help="How many runs, newest first."),
) -> None:
    """List stored runs, newest first.

    Ids, times and metric names are never cut: on a terminal narrower than 120 columns each run is
    a short block (id, start, status and rows on one line; its name, data and metrics below)."""
    from touchstone._redact import redact_urls
    from touchstone._text import escape_terminal, markup_safe
    from touchstone.engine.liveness import shown_status

    def clean(value: object) -> str:  # from the store, written from user data: never markup or controls
        return escape_terminal(value, keep_newlines=False)

    run_store = open_run_store(store)
    lines = []
    for info in run_store.list_runs(limit):
        status = shown_status(info.status, info.config)  # a killed run is "interrupted", not "running"
        lines.append((
            clean(info.id), _started(clean(info.started)), clean(status),
            clean(info.config.get("n_rows", "")),
            clean(info.name or ""), clean(redact_urls(str(info.config.get("data", "")))),
            ", ".join(clean(e) for e in info.config.get("evaluators", {})),
        ))
    title = f"runs in {markup_safe(run_store.path)}"
    if out.width >= WIDE:
        table = Table(title=title, title_justify="left")
        for column in ("id", "started (UTC)", "status", "rows"):
            table.add_column(column, no_wrap=True, justify="right" if column == "rows" else "left")
        for column in ("name", "data", "metrics"):
            table.add_column(column)
        for line in lines:
            table.add_row(*(Text(cell) for cell in line))
        out.print(table)
        return
    blocks: list[Text | Padding] = [Text.from_markup(f"[bold]{title}[/bold]")]
    for run_id, started, status, rows, name, data, metrics in lines:
        head = Text(run_id, style="bold", no_wrap=True)
        head.append(f"  {started} UTC · {status} · {rows} rows", style="dim")
        body = Text()
        if name:
            body.append(f"{name}\n", style="bold")
        body.append(f"data: {data}\nmetrics: {metrics}")
        blocks += [head, Padding(body, (0, 0, 0, 2))]
    if not lines:
        blocks.append(Text("no runs yet: `touchstone eval DATA` makes one"))
    out.print(Group(*blocks))
