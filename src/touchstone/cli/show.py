"""``touchstone show``: a stored run again, as a table or as its summary document, with the claim-level
evidence of claim-based metrics (faithfulness, context_recall... and groundedness_pro's sentences)."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from touchstone._redact import redact_config
from touchstone._text import json_dumps, markup_safe
from touchstone.cli.common import STORE_HELP, fail_input, open_run_store, out, summary_table
from touchstone.ui.row_detail import claim_evidence  # the dashboard's reader (no web framework in it)

_GOOD = ("supported", "grounded", "entailment")


def evidence_table(evidence: list[dict[str, Any]], rows: int) -> tuple[Table, int]:
    """The evidence of the first ``rows`` rows as a table, and how many rows with evidence are left."""
    shown_rows = sorted({e["row"] for e in evidence})
    keep = set(shown_rows[:rows]) if rows >= 0 else set(shown_rows)
    table = Table(title="claim-level evidence", title_justify="left")
    for name, style in (("row", "bold"), ("metric", ""), ("claim", ""), ("verdict", ""), ("document", ""),
                        ("reason", "dim")):
        table.add_column(name, style=style or None, overflow="fold")
    for e in evidence:
        if e["row"] not in keep:
            continue
        colour = "green" if e["verdict"] in _GOOD else "red"
        table.add_row(str(e["row"]), markup_safe(e["metric"]), markup_safe(e["claim"]),
                      f"[{colour}]{markup_safe(e['verdict'])}[/]", markup_safe(e["document"] or "-"),
                      markup_safe(e["reason"]))
    return table, len(shown_rows) - len(keep)


def show_command(
    run_id: str = typer.Argument(..., help="A run id from `touchstone runs`."),
    store: str | None = typer.Option(None, "--store", envvar="TOUCHSTONE_STORE", help=STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the stored summary document as JSON."),
    evidence_rows: int = typer.Option(
        10, "--evidence-rows",
        help="Rows whose claim-level verdicts are listed (claim, verdict, document, reason); "
        "0: none, -1: all.",
    ),
) -> None:
    """Print a stored run again: its summary table and the claim-level evidence of claim-based
    metrics, or its summary document (with the evidence) with --json."""
    run_store = open_run_store(store)
    info = run_store.get_run(run_id)
    if info is None:
        raise fail_input(f"no run {run_id!r} in {run_store.path}; see `touchstone runs`")
    summary = (info.summary or {}).get("summary", {})
    evidence = claim_evidence(run_store.get_scores(run_id)) if evidence_rows != 0 else []
    if as_json:
        # runs stored before URLs were redacted are redacted here; C1 and bidi characters as escapes
        doc = redact_config({"metrics": info.metrics or {}, "summary": summary, "run": info.as_dict()})
        if evidence:
            doc["evidence"] = evidence
        if (info.summary or {}).get("estimate"):
            doc["estimate"] = info.summary["estimate"]  # type: ignore[index]
        typer.echo(json_dumps(doc, indent=2, default=str))
        return
    title = f"run {info.id} — {info.status} — {info.config.get('data')}"
    out.print(summary_table(summary, title=markup_safe(redact_config(title), keep_newlines=False)))
    out.print(
        markup_safe(f"started {info.started}, finished {info.finished or '-'}, package {info.version}"),
        highlight=False,
    )
    from touchstone.cli.spending import show_sample_and_estimate

    show_sample_and_estimate(info)
    if evidence:
        table, left = evidence_table(evidence, evidence_rows)
        out.print(table)
        if left:
            out.print(f"{left} more rows have claim-level evidence (--evidence-rows -1 lists them all)",
                      highlight=False)
