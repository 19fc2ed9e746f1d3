"""The browser dashboard (``touchstone ui``): runs, a run's rows and score distributions, paired
comparisons and trends, served on localhost from a run store (SQLite or PostgreSQL).

Needs the ``ui`` extra (``pip install 'touchstone-genai[ui]'``: FastAPI, uvicorn, Jinja2). Build the app
with :func:`create_app` and serve it with any ASGI server::

    from touchstone.store import open_store
    from touchstone.ui import create_app
    app = create_app(open_store("runs.db"))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from touchstone.errors import ConfigurationError
from touchstone.store.base import Store

if TYPE_CHECKING:
    from fastapi import FastAPI

INSTALL_HINT = "pip install 'touchstone-genai[ui]'"


class MissingUIDependency(ConfigurationError):
    """The dashboard's packages (FastAPI, uvicorn, Jinja2) are not installed."""


def require_ui_packages() -> None:
    """Import what the dashboard needs, or raise :class:`MissingUIDependency` naming the package
    and the install command."""
    import importlib

    for name in ("fastapi", "jinja2", "uvicorn"):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise MissingUIDependency(f"the dashboard needs the {name} package: {INSTALL_HINT}") from exc


def create_app(store: Store, *, feedback_token: str | None = None,
               monitor_dirs: Sequence[str | os.PathLike[str]] | None = None) -> FastAPI:
    """The dashboard's FastAPI app over ``store`` (see :mod:`touchstone.ui.app`); ``feedback_token``
    protects ``POST /api/feedback`` (see :mod:`touchstone.ui.feedback_api`); ``monitor_dirs`` are the
    monitors' state folders whose alerts the trends page marks (default: ``touchstone monitor``'s)."""
    require_ui_packages()
    from touchstone.ui.app import create_app as build

    return build(store, feedback_token=feedback_token, monitor_dirs=monitor_dirs)


__all__ = ["INSTALL_HINT", "MissingUIDependency", "create_app", "require_ui_packages"]
