"""The typer application and the console entry point.

Each command lives in its own module, which is imported only when that command runs (or its own
``--help`` is asked): ``touchstone --help`` lists the commands from :data:`COMMANDS` below and
imports nothing of the library, so it starts about as fast as typer and rich themselves.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from touchstone.cli.help_layout import tidy_command, tidy_params


@dataclass(frozen=True)
class CommandEntry:
    """One command of the table: where its function (or sub-application) lives and its summary."""

    name: str
    target: str
    """``module:attribute``: a command function, or a :class:`typer.Typer` of sub-commands."""
    summary: str
    """One line for ``touchstone --help`` (the command's own ``--help`` gives the whole text)."""
    panel: str


_EVALUATE = "Evaluate"
_READ = "Read results"
_PEOPLE = "People and preferences"
_SAFETY = "Safety testing"
_SERVE = "Serve and watch"

COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry("eval", "touchstone.cli.eval:eval_command",
                 "Evaluate a file of rows with chosen metrics; store the run.", _EVALUATE),
    CommandEntry("metrics", "touchstone.cli.metrics:metrics_command",
                 "List every metric: inputs, range, judge, cost tier.", _EVALUATE),
    CommandEntry("presets", "touchstone.cli.presets:presets_command",
                 "List the metric presets, or what they resolve to on a file.", _EVALUATE),
    CommandEntry("runs", "touchstone.cli.runs:runs_command", "List stored runs, newest first.", _READ),
    CommandEntry("show", "touchstone.cli.show:show_command", "Show a stored run's summary again.", _READ),
    CommandEntry("compare", "touchstone.cli.compare:compare_command",
                 "Compare two runs on the same rows (paired; exit 1 on a regression).", _READ),
    CommandEntry("calibrate", "touchstone.cli.calibrate:calibrate_command",
                 "Check a judge metric against people's annotations.", _PEOPLE),
    CommandEntry("annotate", "touchstone.cli.annotate:annotate_app",
                 "Human annotation tasks and production feedback.", _PEOPLE),
    CommandEntry("pairwise", "touchstone.cli.pairwise:pairwise_command",
                 "Ask a judge which of two responses is better (both orders).", _PEOPLE),
    CommandEntry("rank", "touchstone.cli.rank:rank_command",
                 "Rank systems from pairwise votes (Bradley-Terry or Elo).", _PEOPLE),
    CommandEntry("simulate", "touchstone.cli.simulate:simulate_command",
                 "Write adversarial conversations against an application.", _SAFETY),
    CommandEntry("redteam", "touchstone.cli.redteam:redteam_command",
                 "Attack an application per risk category; print the scorecard.", _SAFETY),
    CommandEntry("jailbreak", "touchstone.cli.jailbreak:jailbreak_command",
                 "Jailbreak defect rate of an attacked run against its baseline.", _SAFETY),
    CommandEntry("ui", "touchstone.cli.ui:ui_command",
                 "Serve the browser dashboard on this machine.", _SERVE),
    CommandEntry("monitor", "touchstone.cli.monitor:monitor_command",
                 "Evaluate production interactions per time window and alert.", _SERVE),
    CommandEntry("version", "touchstone.cli.version:version_command", "Print the package version.", _SERVE),
)
_BY_NAME = {entry.name: entry for entry in COMMANDS}


def load_command(entry: CommandEntry) -> Any:
    """The click command of one table entry (its module imported now)."""
    module_name, _, attribute = entry.target.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    if isinstance(target, typer.Typer):
        command = typer.main.get_command(target)
    else:
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.command(entry.name)(target)
        command = typer.main.get_command(single)
    command.name = entry.name
    return tidy_command(command)


class LazyGroup(TyperGroup):
    """A typer group whose commands are imported only when one is resolved to run.

    Listing the commands (the group's help) uses the table's summaries; resolving a command (to run
    it or print its own help) imports its module."""

    def get_params(self, ctx: Any) -> list[Any]:
        return tidy_params(super().get_params(ctx))

    def list_commands(self, ctx: Any) -> list[str]:
        return [entry.name for entry in COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = _BY_NAME.get(cmd_name)
        if entry is None:
            return None
        return TyperCommand(entry.name, help=entry.summary, short_help=entry.summary,
                            rich_help_panel=entry.panel)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        name, _placeholder, rest = super().resolve_command(ctx, args)
        if name is None:
            return name, None, rest
        return name, load_command(_BY_NAME[name]), rest


def _print_version(value: bool) -> None:
    if value:
        from touchstone._version import __version__

        typer.echo(f"touchstone {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="touchstone",
    cls=LazyGroup,
    help="Evaluate and monitor generative-AI applications: QA, RAG and RAG chat, with any judge model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Evaluate and monitor generative-AI applications: QA, RAG and RAG chat, with any judge model."""


EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> Any:
    """The ``touchstone`` console script."""
    try:
        return app(args=argv)
    except KeyboardInterrupt:
        from touchstone.cli.common import err

        err.print(
            "interrupted; finished scores are stored — resume with the run id shown by `touchstone runs`"
        )
        sys.exit(EXIT_INTERRUPTED)
