"""``touchstone version``."""

from __future__ import annotations

from touchstone._version import __version__
from touchstone.cli.common import out


def version_command() -> None:
    """Print the package version."""
    out.print(__version__)
