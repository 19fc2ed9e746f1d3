"""The dashboard's web application: :func:`create_app` builds a FastAPI app over a run store.

Pages (server-rendered with Jinja2, autoescaped): ``/runs``, ``/runs/<id>``, ``/runs/<id>/rows/<idx>``,
``/compare``, ``/trends``. JSON under ``/api/...`` (what the charts fetch, and a stable way to read the
same data from scripts). Static files (the page script, the style sheet, Chart.js) come from the
package, so it works offline. Every response carries the headers of :mod:`touchstone.ui.safety`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from touchstone.store.base import Store
from touchstone.store.dashboard import RowFilter
from touchstone.ui import feedback_api
from touchstone.ui.annotate import annotation_router
from touchstone.ui.comparison import FEEDBACK_FILTERS, FeedbackRows, comparison_view
from touchstone.ui.distributions import distributions
from touchstone.ui.monitor_alerts import default_monitor_dirs, load_alerts
from touchstone.ui.pages import HERE, JSONBody, Pages, parse_float
from touchstone.ui.row_table import input_columns, rows_page
from touchstone.ui.run_list import RunFilter, all_metric_keys, known_statuses, list_runs
from touchstone.ui.safety import SecurityHeadersMiddleware
from touchstone.ui.trends import trend
from touchstone.ui.views import NotFound, QueryError, metric_keys, run_metrics, summary_of, summary_rows


def create_app(store: Store, *, feedback_token: str | None = None,
               monitor_dirs: Sequence[str | os.PathLike[str]] | None = None) -> FastAPI:
    """The dashboard over ``store`` (any :class:`~touchstone.store.base.Store`: SQLite or
    PostgreSQL; the pages read it through ``store.dashboard``). The store is shared by the request
    threads (stores are thread-safe) and is not closed by the app. ``feedback_token``: the bearer
    token ``POST /api/feedback`` requires (none: open), see :mod:`touchstone.ui.annotate`.
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

    _runs_routes(app, pages)
    _run_routes(app, pages)
    _other_routes(app, pages)
    app.include_router(annotation_router(pages))
    return app


def _runs_routes(app: FastAPI, pages: Pages) -> None:
    store = pages.store

    @app.get("/runs", response_class=HTMLResponse)
    def runs_page(
        request: Request, name: str = "", since: str = "", until: str = "", metric: str = "",
        status: str = "", page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> HTMLResponse:
        f = RunFilter(name=name, since=since, until=until, metric=metric, status=status)
        result = list_runs(store, f, page_no, size)
        return pages.render("runs.html", request, title="Runs", f=f, result=result,
                            statuses=known_statuses(store),
                            metric_keys=all_metric_keys(store), query=f.__dict__ | {"size": size})

    @app.get("/api/runs")
    def runs_api(
        name: str = "", since: str = "", until: str = "", metric: str = "", status: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> JSONBody:
        f = RunFilter(name=name, since=since, until=until, metric=metric, status=status)
        return JSONBody(list_runs(store, f, page_no, size).as_dict())


def _row_filter(q: str, metric: str, min_: str, max_: str, status: str, passed: str, column: str,
                value: str, sort: str, feedback: str = "", rating_max: str = "") -> RowFilter:
    return RowFilter(q=q, metric=metric, min=parse_float(min_, "min"), max=parse_float(max_, "max"),
                     status=status, passed=passed, column=column, value=value, sort=sort or "idx",
                     feedback=feedback,
                     rating_max=parse_float(rating_max, "rating_max"))


def _run_routes(app: FastAPI, pages: Pages) -> None:
    store = pages.store

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(
        request: Request, run_id: str, q: str = "", metric: str = "", min_: str = Query("", alias="min"),
        max_: str = Query("", alias="max"), status: str = "", passed: str = "", column: str = "",
        value: str = "", sort: str = "idx", feedback: str = "", rating_max: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> HTMLResponse:
        info = pages.run(run_id)
        f = _row_filter(q, metric, min_, max_, status, passed, column, value, sort, feedback, rating_max)
        result = rows_page(store, info, f, page_no, size)
        columns = input_columns(store, info)
        query = {"q": q, "metric": metric, "min": min_, "max": max_, "status": status, "passed": passed,
                 "column": column, "value": value, "sort": sort, "feedback": feedback,
                 "rating_max": rating_max, "size": size}
        return pages.render(
            "run.html", request, title=f"Run {info.id}", info=info, summary=summary_rows(info),
            result=result, metrics=metric_keys(run_metrics(store, info)), columns=columns,
            shown_columns=columns[:4], f=f, query=query, feedback_filters=FEEDBACK_FILTERS)

    @app.get("/api/runs/{run_id}")
    def run_api(run_id: str) -> JSONBody:
        info = pages.run(run_id)
        return JSONBody({"run": info.as_dict(), "metrics": info.metrics, "summary": summary_of(info),
                         "metric_keys": metric_keys(run_metrics(store, info))})

    @app.get("/api/runs/{run_id}/rows")
    def rows_api(
        run_id: str, q: str = "", metric: str = "", min_: str = Query("", alias="min"),
        max_: str = Query("", alias="max"), status: str = "", passed: str = "", column: str = "",
        value: str = "", sort: str = "idx", feedback: str = "", rating_max: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> JSONBody:
        info = pages.run(run_id)
        f = _row_filter(q, metric, min_, max_, status, passed, column, value, sort, feedback, rating_max)
        return JSONBody(rows_page(store, info, f, page_no, size).as_dict())

    @app.get("/api/runs/{run_id}/distributions")
    def distributions_api(run_id: str) -> JSONBody:
        return JSONBody({"metrics": distributions(store, pages.run(run_id))})

    @app.get("/runs/{run_id}/rows/{idx}", response_class=HTMLResponse)
    def row_page(request: Request, run_id: str, idx: int) -> HTMLResponse:
        info, detail = pages.row(run_id, idx)
        return pages.render("row.html", request, title=f"Row {idx} of {info.id}", info=info, row=detail)

    @app.get("/api/runs/{run_id}/rows/{idx}")
    def row_api(run_id: str, idx: int) -> JSONBody:
        return JSONBody(pages.row(run_id, idx)[1])


def _other_routes(app: FastAPI, pages: Pages) -> None:
    store = pages.store

    @app.get("/trends", response_class=HTMLResponse)
    def trends_page(request: Request, metric: str = "", name: str = "") -> HTMLResponse:
        alerts = load_alerts(pages.alert_dirs) if metric.strip() else None
        data = trend(store, metric, name, alerts=alerts) if metric.strip() else None
        return pages.render("trends.html", request, title="Trends", metric=metric, name=name, data=data,
                            metric_keys=all_metric_keys(store))

    @app.get("/api/trends")
    def trends_api(metric: str = "", name: str = "") -> JSONBody:
        return JSONBody(trend(store, metric, name, alerts=load_alerts(pages.alert_dirs)))

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request, a: str = "", b: str = "", alpha: str = "0.05", feedback: str = "",
                     rating_max: str = "") -> HTMLResponse:
        only = FeedbackRows(feedback, parse_float(rating_max, "rating_max"))
        view = comparison_view(store, a, b, alpha, only=only) if a and b else None
        recent = list_runs(store, RunFilter(), 1, 200).items
        return pages.render("compare.html", request, title="Compare", a=a, b=b, alpha=alpha, view=view,
                            recent=recent, feedback=feedback, rating_max=rating_max,
                            feedback_filters=FEEDBACK_FILTERS)

    @app.get("/api/compare")
    def compare_api(a: str, b: str, alpha: str = "0.05", feedback: str = "",
                    rating_max: str = "") -> JSONBody:
        only = FeedbackRows(feedback, parse_float(rating_max, "rating_max"))
        return JSONBody(comparison_view(store, a, b, alpha, only=only))
