"""``touchstone runs``: the stored runs, newest first."""

from __future__ import annotations

import typer
from rich.table import Table

from touchstone._redact import redact_urls
from touchstone._text import markup_safe, safe_text
from touchstone.cli.common import STORE_HELP, open_run_store, out
from touchstone.engine.liveness import shown_status


def runs_command(
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    limit: int = typer.Option(20, "--limit", help="How many runs, newest first."),
) -> None:
    """List stored runs, newest first."""
    run_store = open_run_store(store)
    table = Table(title=f"runs in {markup_safe(run_store.path)}")
    table.add_column("id", no_wrap=True, min_width=22)
    for col in ("name", "started", "status", "rows", "data", "metrics"):
        table.add_column(col, overflow="fold")
    for info in run_store.list_runs(limit):
        evaluators = ", ".join(info.config.get("evaluators", {}))
        # every cell comes from the store, written from user data: text, never markup or controls
        status = shown_status(info.status, info.config)  # a killed run is "interrupted", not "running"
        cells = (info.id, info.name or "", info.started, status, info.config.get("n_rows", ""),
                 redact_urls(str(info.config.get("data", ""))), evaluators)
        table.add_row(*(safe_text(cell, keep_newlines=False) for cell in cells))
    out.print(table)
