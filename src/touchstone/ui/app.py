"""The dashboard's web application: :func:`create_app` builds a FastAPI app over a run store.

Pages (server-rendered with Jinja2, autoescaped): ``/runs``, ``/runs/<id>``, ``/runs/<id>/rows/<idx>``,
``/compare``, ``/trends``. JSON under ``/api/...`` (what the charts fetch, and a stable way to read the
same data from scripts). Static files (the page script, the style sheet, Chart.js) come from the
package, so it works offline. Every response carries the headers of :mod:`touchstone.ui.safety`.
Each page's routes are one router of :mod:`touchstone.ui.routes`; this module puts them together
with the feedback endpoint, the static files and the answers to a bad query (400) or a missing run
or row (404).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from touchstone.store.base import Store
from touchstone.ui import feedback_api
from touchstone.ui.monitor_alerts import default_monitor_dirs
from touchstone.ui.pages import HERE, JSONBody, Pages
from touchstone.ui.routes.annotate import annotation_router
from touchstone.ui.routes.compare import compare_router
from touchstone.ui.routes.run import run_router
from touchstone.ui.routes.runs import runs_router
from touchstone.ui.routes.trends import trends_router
from touchstone.ui.safety import SecurityHeadersMiddleware
from touchstone.ui.views import NotFound, QueryError


def create_app(store: Store, *, feedback_token: str | None = None,
               monitor_dirs: Sequence[str | os.PathLike[str]] | None = None) -> FastAPI:
    """The dashboard over ``store`` (any :class:`~touchstone.store.base.Store`: SQLite or
    PostgreSQL; the pages read it through ``store.dashboard``). The store is shared by the request
    threads (stores are thread-safe) and is not closed by the app. ``feedback_token``: the bearer
    token ``POST /api/feedback`` requires (none: open), see :mod:`touchstone.ui.feedback_api`.
    ``monitor_dirs``: where monitors keep their state (their ``alerts.jsonl`` is marked on the
    trends page); default: where ``touchstone monitor`` puts it for this store."""
    app = FastAPI(title="touchstone", docs_url=None, redoc_url=None, openapi_url=None)
    pages = Pages(store)
    pages.alert_dirs = ([Path(d) for d in monitor_dirs] if monitor_dirs is not None
                        else default_monitor_dirs(store.path, store.persistent))

    app.add_middleware(SecurityHeadersMiddleware)
    # first among the routes: the busiest endpoint (one request per production event) is matched first.
    # A plain ASGI app, which Starlette's routes accept though FastAPI's signature names a function.
    endpoint: Any = feedback_api.FeedbackEndpoint(store, feedback_token)
    app.router.add_route(feedback_api.PATH, endpoint, methods=["POST"], include_in_schema=False)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    @app.exception_handler(QueryError)
    async def bad_query(request: Request, exc: QueryError) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONBody({"error": str(exc)}, status_code=400)
        return pages.render("error.html", request, 400, title="Bad request", message=str(exc))

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONBody({"error": str(exc)}, status_code=404)
        return pages.render("error.html", request, 404, title="Not found", message=str(exc))

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/runs", status_code=307)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> RedirectResponse:
        return RedirectResponse("/static/favicon.svg", status_code=308)

    for router in (runs_router, run_router, trends_router, compare_router, annotation_router):
        app.include_router(router(pages))
    return app
