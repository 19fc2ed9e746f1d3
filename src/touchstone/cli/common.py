"""What the commands share: the two consoles, exit statuses, input-error printing, ``KEY=VALUE``
option parsing and the summary table."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from touchstone._text import markup_safe
from touchstone.errors import InputValidationError, Problem

if TYPE_CHECKING:
    from touchstone.store.base import Store

out = Console()
err = Console(stderr=True)

EXIT_GATE = 1
"""A gate failed: a mean below ``--min``, a failed score with ``--fail-on-error``, a metric that
produced no score at all, or a run stopped early."""
EXIT_BAD_INPUT = 2
"""The input or the options are invalid; nothing ran."""

NO_VALUE = "—"
"""Shown for the mean, interval and pass rate of a metric with no score (n = 0)."""

STORE_HELP = (
    "Run store: a SQLite file, or a team's PostgreSQL server as postgresql://user:password@host:port/db "
    "(the password is never shown). Default: $TOUCHSTONE_STORE, else ~/.touchstone/runs.db."
)


def show_command_line(run_id: str, store_path: str | Path) -> str:
    """The ``touchstone show`` command that finds this run again: ``--store`` named unless the run is
    in the default store (``$TOUCHSTONE_STORE``, else ``~/.touchstone/runs.db``)."""
    import os
    import shlex

    from touchstone.store.sqlite import default_store_path

    default = os.environ.get("TOUCHSTONE_STORE") or str(default_store_path())
    same = str(store_path) == default
    if not same:
        try:
            same = Path(store_path).resolve() == Path(default).expanduser().resolve()
        except (OSError, ValueError):
            same = False
    command = f"touchstone show {run_id}"
    return command if same else f"{command} --store {shlex.quote(str(store_path))}"


def open_run_store(path: str | Path | None) -> Store:
    """The run store at ``path`` (a file or a ``postgresql://`` URL; None: the default location).
    When the default location cannot be used the store keeps runs in memory; its warning is printed
    as one plain line on stderr. A store server that cannot be reached is one error line and exit
    status 1."""
    from touchstone.store import open_store
    from touchstone.store.base import StoreConnectionError, StoreLocationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StoreLocationWarning)
        try:
            run_store = open_store(path)
        except StoreConnectionError as exc:
            raise fail_store(exc) from None
    for warning in caught:
        if issubclass(warning.category, StoreLocationWarning):
            err.print(f"[yellow]warning:[/] {markup_safe(warning.message)}", highlight=False, soft_wrap=True)
        else:  # not ours to format: hand it on as it came
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return run_store


def fail_store(exc: BaseException) -> typer.Exit:
    """Print a store that cannot be reached as one error line on stderr; the Exit (status 1)."""
    err.print(f"[bold red]error:[/] {markup_safe(exc)}", highlight=False, soft_wrap=True)
    return typer.Exit(EXIT_GATE)


def fail_input(message: str) -> typer.Exit:
    """Print ``message`` as an input error on stderr; the Exit (status 2) to raise."""
    # the message quotes file names, columns and values from the data: shown as text, never as markup
    err.print(f"[bold red]error:[/] {markup_safe(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(EXIT_BAD_INPUT)


def parse_pairs(values: list[str] | None, option: str) -> dict[str, str]:
    """``NAME=VALUE`` items of a repeatable option (each may hold several, comma-separated)."""
    pairs: dict[str, str] = {}
    for item in values or []:
        for part in item.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise InputValidationError(
                    [Problem(option, None, None, f"expected NAME=VALUE, got {part!r}")]
                )
            key, value = part.split("=", 1)
            pairs[key.strip()] = value.strip()
    return pairs


def parse_floats(values: list[str] | None, option: str) -> dict[str, float]:
    """``NAME=NUMBER`` items of a repeatable option."""
    result = {}
    for key, value in parse_pairs(values, option).items():
        try:
            result[key] = float(value)
        except ValueError:
            raise InputValidationError(
                [Problem(option, None, key, f"expected a number, got {value!r}")]
            ) from None
    return result


def parse_names(value: str, option: str) -> list[str]:
    """A comma-separated list of names; at least one."""
    names = [m.strip() for m in value.split(",") if m.strip()]
    if not names:
        raise InputValidationError([Problem(option, None, None, "no metric given")])
    return names


def fmt(value: Any, digits: int = 4) -> str:
    """A number for a table cell; ``-`` when there is none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _summary_row(key: str, entry: Mapping[str, Any], digits: int = 4) -> list[str]:
    failed = entry.get("n_failed", 0)
    failed_text = f"[red]{failed}[/]" if failed else "0"
    key = markup_safe(key, keep_newlines=False)  # metric names may come from a user's metric file
    if entry.get("corpus"):  # one score over the whole corpus: no interval, no pass rate
        return [key, fmt(entry.get("value")), "(corpus)", str(entry.get("n", "-")), failed_text, "-"]
    if entry.get("n") == 0:  # every row failed: say so plainly instead of a made-up mean
        return [f"[red]{key}[/]", NO_VALUE, NO_VALUE, "0", failed_text, NO_VALUE]
    lo, hi = entry.get("ci95") or [None, None]
    ci = f"[{fmt(lo, digits)}, {fmt(hi, digits)}]" if lo is not None else "-"
    rate = entry.get("pass_rate")
    return [
        key,
        fmt(entry.get("mean")),
        ci,
        str(entry.get("n")),
        failed_text,
        "-" if rate is None else f"{rate:.1%}",
    ]


def _shown_key(full_key: str) -> str:
    name, _, sub = full_key.partition(".")
    return sub if sub == name else full_key  # "f1_score.f1_score" reads better as "f1_score"


def summary_table(
    summary: Mapping[str, Mapping[str, Any]], title: str | None = None, width: int | None = None
) -> Table:
    """The summary of a run, one metric a line: mean, 95% CI, n, failed rows, pass rate.

    Metric names are never cut: when the table would not fit in ``width`` columns (the console's by
    default), the interval is shown to 3 decimals; if it still does not fit, a name breaks only
    after its ``evaluator.`` part, each part whole."""
    headers = ("metric", "mean", "95% CI", "n", "failed", "pass rate")

    def needed(rows: list[list[str]]) -> int:
        widths = [max([len(h), *(Text.from_markup(r[i]).cell_len for r in rows)])
                  for i, h in enumerate(headers)]
        return sum(widths) + 3 * len(headers) + 1

    available = width or out.width
    rows = [_summary_row(_shown_key(k), entry) for k, entry in summary.items()]
    if needed(rows) > available:
        rows = [_summary_row(_shown_key(k), entry, digits=3) for k, entry in summary.items()]
    fits = needed(rows) <= available
    table = Table(title=title, title_justify="left")
    table.add_column("metric", style="bold", no_wrap=fits, overflow="fold")
    for header in headers[1:]:
        table.add_column(header, justify="right", no_wrap=True)
    for cells in rows:
        table.add_row(cells[0] if fits else cells[0].replace(".", ".\n"), *cells[1:])
    return table
