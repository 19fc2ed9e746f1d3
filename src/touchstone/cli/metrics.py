"""``touchstone metrics``: the metric catalogue."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from touchstone.cli.common import out
from touchstone.engine.planning import metric_catalogue


def metrics_command() -> None:
    """List the available metrics: name, inputs, range, whether a judge model is needed, cost tier."""
    table = Table(title="metrics")
    table.add_column("name", style="bold")
    table.add_column("inputs")
    table.add_column("range")
    table.add_column("judge")
    table.add_column("tier")
    table.add_column("description")
    from touchstone.evaluators import registry

    classes = registry.available()
    for info in metric_catalogue():
        tier = str(getattr(classes.get(info.name), "tier", "free"))  # the cost tier --max-tier reads
        table.add_row(
            info.name, Text(info.inputs), info.value_range, "yes" if info.needs_judge else "no", tier,
            info.description,
        )
    out.print(table)
