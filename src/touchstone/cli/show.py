"""``touchstone show``: a stored run again, as a table or as its summary document."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from touchstone.cli.common import STORE_HELP, fail_input, open_run_store, out, summary_table


def show_command(
    run_id: str = typer.Argument(..., help="A run id from `touchstone runs`."),
    store: Path | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the stored summary document as JSON."),
) -> None:
    """Print a stored run again: its summary table, or its summary document with --json."""
    run_store = open_run_store(store)
    info = run_store.get_run(run_id)
    if info is None:
        raise fail_input(f"no run {run_id!r} in {run_store.path}; see `touchstone runs`")
    summary = (info.summary or {}).get("summary", {})
    if as_json:
        doc = {"metrics": info.metrics or {}, "summary": summary, "run": info.as_dict()}
        out.print_json(json.dumps(doc, default=str))
        return
    out.print(summary_table(summary, title=f"run {info.id} — {info.status} — {info.config.get('data')}"))
    out.print(
        f"started {info.started}, finished {info.finished or '-'}, package {info.version}", highlight=False
    )
