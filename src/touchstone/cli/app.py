"""The typer application: one command per module of this package, and the console entry point."""

from __future__ import annotations

import sys

import typer

from touchstone.cli.annotate import annotate_app
from touchstone.cli.calibrate import calibrate_command
from touchstone.cli.common import err
from touchstone.cli.compare import compare_command
from touchstone.cli.eval import eval_command
from touchstone.cli.jailbreak import jailbreak_command
from touchstone.cli.metrics import metrics_command
from touchstone.cli.monitor import monitor_command
from touchstone.cli.pairwise import pairwise_command
from touchstone.cli.presets import presets_command
from touchstone.cli.rank import rank_command
from touchstone.cli.redteam import redteam_command
from touchstone.cli.runs import runs_command
from touchstone.cli.show import show_command
from touchstone.cli.simulate import simulate_command
from touchstone.cli.ui import ui_command
from touchstone.cli.version import version_command

app = typer.Typer(
    name="touchstone",
    help="Evaluate and monitor generative-AI applications: QA, RAG and RAG chat, with any judge model.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(annotate_app, name="annotate")
app.command("calibrate")(calibrate_command)
app.command("compare")(compare_command)
app.command("eval")(eval_command)
app.command("jailbreak")(jailbreak_command)
app.command("metrics")(metrics_command)
app.command("monitor")(monitor_command)
app.command("pairwise")(pairwise_command)
app.command("presets")(presets_command)
app.command("rank")(rank_command)
app.command("redteam")(redteam_command)
app.command("runs")(runs_command)
app.command("show")(show_command)
app.command("simulate")(simulate_command)
app.command("ui")(ui_command)
app.command("version")(version_command)

EXIT_INTERRUPTED = 130


def main() -> None:
    """The ``touchstone`` console script."""
    try:
        app()
    except KeyboardInterrupt:
        err.print(
            "interrupted; finished scores are stored — resume with the run id shown by `touchstone runs`"
        )
        sys.exit(EXIT_INTERRUPTED)
