"""``touchstone metrics``: the metric catalogue."""

from __future__ import annotations

from rich.table import Table

from touchstone.cli.common import out
from touchstone.engine.planning import metric_catalogue


def metrics_command() -> None:
    """List the available metrics: name, inputs, range, and whether a judge model is needed."""
    table = Table(title="metrics")
    table.add_column("name", style="bold")
    table.add_column("inputs")
    table.add_column("range")
    table.add_column("judge")
    table.add_column("description")
    for info in metric_catalogue():
        table.add_row(
            info.name, info.inputs, info.value_range, "yes" if info.needs_judge else "no", info.description
        )
    out.print(table)
