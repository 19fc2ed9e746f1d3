"""``touchstone presets``: the presets by use case and by stage, with their metrics, what each tells
and the columns it needs; with DATA, what each preset resolves to on that file's columns."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from touchstone.cli.common import fail_input, out, parse_pairs
from touchstone.engine.planning import column_mapping_config, data_columns, mapped_inputs
from touchstone.engine.presets import TIERS, describe_presets, resolve
from touchstone.errors import ConfigurationError, InputValidationError


def presets_command(
    data: Path | None = typer.Argument(
        None, help="A data file (JSONL, CSV, Parquet): show what each preset keeps and drops on its columns."
    ),
    name: str | None = typer.Option(None, "--preset", help="Only this preset."),
    maps: list[str] | None = typer.Option(
        None, "--map", help="Column mapping INPUT=COLUMN, as for eval; repeatable."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the presets (or their resolution) as JSON."),
) -> None:
    """List the presets (use cases: question-answering, document-search, chatbot, summarization, rag;
    stages: development, pre-production, production, ab-test) and the cost tiers."""
    try:
        presets = [p for p in describe_presets() if name is None or p["name"] == name]
        if name is not None and not presets:
            resolve(name, None)  # raises, listing the known presets
        columns = None
        if data is not None:
            columns = mapped_inputs(data_columns(data), column_mapping_config(parse_pairs(maps, "--map")))
    except (InputValidationError, ConfigurationError) as exc:
        raise fail_input(str(exc)) from None
    if columns is not None:
        _print_resolved([p["name"] for p in presets], columns, as_json)
        return
    if as_json:
        out.print_json(json.dumps({"presets": presets, "tiers": list(TIERS)}))
        return
    table = Table(title="presets")
    for column in ("preset", "kind", "metric", "what it tells", "needs"):
        table.add_column(column)
    for preset in presets:
        for i, metric in enumerate(preset["metrics"]):
            first = i == 0
            table.add_row(
                preset["name"] if first else "", preset["kind"] if first else "", metric["metric"],
                Text(metric["why"]), Text(metric["needs"]),
                end_section=i == len(preset["metrics"]) - 1,
            )
    out.print(table)
    out.print("cost tiers, cheapest first: " + " < ".join(TIERS)
              + " (--max-tier limits a run; touchstone eval --dry-run shows the cost per metric and tier)",
              highlight=False)


def _print_resolved(names: list[str], columns: set[str], as_json: bool) -> None:
    plans = [resolve(n, columns) for n in names]
    if as_json:
        doc = [{"preset": p.preset, "metrics": p.metrics, "options": p.options,
                "dropped": [{"metric": d.metric, "reason": d.reason} for d in p.dropped]} for p in plans]
        out.print_json(json.dumps(doc))
        return
    table = Table(title="presets on these columns: " + ", ".join(sorted(columns)))
    for column in ("preset", "metrics kept", "dropped (why)"):
        table.add_column(column)
    for p in plans:
        dropped = "\n".join(d.describe() for d in p.dropped) or "—"
        table.add_row(p.preset, ", ".join(p.metrics) or "—", Text(dropped), end_section=True)
    out.print(table)
