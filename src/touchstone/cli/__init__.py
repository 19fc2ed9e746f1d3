"""The ``touchstone`` command line (typer + rich): ``eval``, ``metrics``, ``runs``, ``show``,
``version``, one module each; the logic they call lives in the library (``touchstone.engine``)."""

from __future__ import annotations

from touchstone.cli.app import app, main

__all__ = ["app", "main"]
