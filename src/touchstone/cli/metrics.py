"""``touchstone metrics``: the metric catalogue."""

from __future__ import annotations

import typer
from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from touchstone.cli.common import out

WIDE = 120
"""From this many columns up the catalogue is one table; below it, one short block per metric."""


def metrics_command(
    as_table: bool = typer.Option(False, "--table", help="One table whatever the terminal's width."),
) -> None:
    """List the available metrics: name, inputs, range, whether a judge model is needed, cost tier.

    Names are never cut: on a terminal narrower than 120 columns each metric is a short block (its
    name and facts on one line, its inputs and description wrapped below)."""
    from touchstone.engine.planning import metric_catalogue
    from touchstone.evaluators import registry

    classes = registry.available()
    entries = [
        (info, str(getattr(classes.get(info.name), "tier", "free")))  # the cost tier --max-tier reads
        for info in metric_catalogue()
    ]
    if as_table or out.width >= WIDE:
        table = Table(title="metrics")
        table.add_column("name", style="bold", no_wrap=True)
        table.add_column("inputs")
        table.add_column("range")
        table.add_column("judge", no_wrap=True)
        table.add_column("tier", no_wrap=True)
        table.add_column("description")
        for info, tier in entries:
            table.add_row(
                info.name, Text(info.inputs), Text(info.value_range), "yes" if info.needs_judge else "no",
                tier, Text(info.description),
            )
        out.print(table)
        return
    blocks: list[Text | Padding] = []
    for info, tier in entries:
        head = Text(info.name, style="bold", no_wrap=True)
        where = "judge" if info.needs_judge else "local"
        head.append(f"  {where} · {tier} · {info.value_range}", style="dim")
        blocks.append(head)
        body = Text(f"inputs: {info.inputs}\n", style="cyan")
        body.append(info.description)
        blocks.append(Padding(body, (0, 0, 1, 2)))
    out.print(Group(*blocks))
    out.print(f"{len(entries)} metrics; [bold]--table[/bold] for one table, `eval -m NAME,...` to use them.")
