"""The dashboard's web application: :func:`create_app` builds a FastAPI app over a run store.

Pages (server-rendered with Jinja2, autoescaped): ``/runs``, ``/runs/<id>``, ``/runs/<id>/rows/<idx>``,
``/compare``, ``/trends``. JSON under ``/api/...`` (what the charts fetch, and a stable way to read the
same data from scripts). Static files (the page script, the style sheet, Chart.js) come from the
package, so it works offline. Every response carries the headers of :mod:`touchstone.ui.safety`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from touchstone.store.base import RunInfo, Store
from touchstone.ui import feedback_api, queries
from touchstone.ui.comparison import FEEDBACK_FILTERS, FeedbackRows, comparison_view
from touchstone.ui.monitor_alerts import default_monitor_dirs, load_alerts
from touchstone.ui.queries import NotFound, QueryError, RowFilter, RunFilter
from touchstone.ui.safety import SecurityHeadersMiddleware, json_bytes, path, safe_href

HERE = Path(__file__).resolve().parent
PAGE_SIZES = (25, 50, 100, 200)


class JSONBody(Response):
    """JSON with ``<``, ``>``, ``&`` escaped and NaN sent as null (see :func:`safety.json_bytes`)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json_bytes(queries.finite(content))


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(path=path, safe_href=safe_href, page_sizes=PAGE_SIZES, query_string=_query_string)
    env.filters.update(num=_num, pct=_pct, pretty=_pretty)
    return env


def _query_string(query: dict[str, Any], page: int) -> str:
    """The page's query (its non-empty filters) with ``page`` set: what a pager link carries."""
    items = {k: v for k, v in query.items() if v not in (None, "")}
    items["page"] = page
    return urlencode(items)


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, (int, float)):
        return "—" if isinstance(value, float) and not math.isfinite(value) else f"{value:.{digits}g}"
    return str(value)


def _pct(value: Any) -> str:
    return f"{100 * value:.1f}%" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


def _pretty(value: Any) -> str:
    """A value for a ``<pre>``: strings as they are, the rest as indented JSON (escaped by the template)."""
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _float(text: str, name: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise QueryError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise QueryError(f"{name} must be a finite number, got {text!r}")
    return value


class Pages:
    """What every route needs: the store, the template environment, and the rendering and lookup
    helpers."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.alert_dirs: list[Path] = []  # monitors' state folders (their alerts.jsonl)
        self.env = _environment()

    def render(self, template: str, request: Request, status: int = 200, /, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(request_path=request.url.path, **context)
        return HTMLResponse(html, status_code=status)

    def run(self, run_id: str) -> RunInfo:
        info = queries.get_run(self.store, run_id)
        if info is None:
            raise NotFound(f"no run {run_id!r} in this store")
        return info

    def row(self, run_id: str, idx: int) -> tuple[RunInfo, dict[str, Any]]:
        info = self.run(run_id)
        detail = queries.row_detail(self.store, info, idx)
        if detail is None:
            raise NotFound(f"run {run_id!r} has no row {idx}")
        return info, detail


def create_app(store: Store, *, feedback_token: str | None = None,
               monitor_dirs: Sequence[str | os.PathLike[str]] | None = None) -> FastAPI:
    """The dashboard over ``store`` (any :class:`~touchstone.store.base.Store` with ``fetch_all``:
    SQLite or PostgreSQL). The store is shared by the request threads (stores are thread-safe)
    and is not closed by the app. ``feedback_token``: the bearer token ``POST /api/feedback``
    requires (none: open), see :mod:`touchstone.ui.annotate`. ``monitor_dirs``: where monitors keep
    their state (their ``alerts.jsonl`` is marked on the trends page); default: where ``touchstone
    monitor`` puts it for this store."""
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
    from touchstone.ui.annotate import annotation_router  # imported here: it builds on Pages

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
        result = queries.list_runs(store, f, page_no, size)
        return pages.render("runs.html", request, title="Runs", f=f, result=result,
                            statuses=queries.known_statuses(store),
                            metric_keys=queries.all_metric_keys(store), query=f.__dict__ | {"size": size})

    @app.get("/api/runs")
    def runs_api(
        name: str = "", since: str = "", until: str = "", metric: str = "", status: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> JSONBody:
        f = RunFilter(name=name, since=since, until=until, metric=metric, status=status)
        return JSONBody(queries.list_runs(store, f, page_no, size).as_dict())


def _row_filter(q: str, metric: str, min_: str, max_: str, status: str, passed: str, column: str,
                value: str, sort: str, feedback: str = "", rating_max: str = "") -> RowFilter:
    return RowFilter(q=q, metric=metric, min=_float(min_, "min"), max=_float(max_, "max"), status=status,
                     passed=passed, column=column, value=value, sort=sort or "idx", feedback=feedback,
                     rating_max=_float(rating_max, "rating_max"))


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
        result = queries.rows_page(store, info, f, page_no, size)
        columns = queries.input_columns(store, info)
        query = {"q": q, "metric": metric, "min": min_, "max": max_, "status": status, "passed": passed,
                 "column": column, "value": value, "sort": sort, "feedback": feedback,
                 "rating_max": rating_max, "size": size}
        return pages.render(
            "run.html", request, title=f"Run {info.id}", info=info, summary=queries.summary_rows(info),
            result=result, metrics=queries.metric_keys(queries.run_metrics(store, info)), columns=columns,
            shown_columns=columns[:4], f=f, query=query, feedback_filters=FEEDBACK_FILTERS)

    @app.get("/api/runs/{run_id}")
    def run_api(run_id: str) -> JSONBody:
        info = pages.run(run_id)
        return JSONBody({"run": info.as_dict(), "metrics": info.metrics, "summary": queries.summary_of(info),
                         "metric_keys": queries.metric_keys(queries.run_metrics(store, info))})

    @app.get("/api/runs/{run_id}/rows")
    def rows_api(
        run_id: str, q: str = "", metric: str = "", min_: str = Query("", alias="min"),
        max_: str = Query("", alias="max"), status: str = "", passed: str = "", column: str = "",
        value: str = "", sort: str = "idx", feedback: str = "", rating_max: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> JSONBody:
        info = pages.run(run_id)
        f = _row_filter(q, metric, min_, max_, status, passed, column, value, sort, feedback, rating_max)
        return JSONBody(queries.rows_page(store, info, f, page_no, size).as_dict())

    @app.get("/api/runs/{run_id}/distributions")
    def distributions_api(run_id: str) -> JSONBody:
        return JSONBody({"metrics": queries.distributions(store, pages.run(run_id))})

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
        data = queries.trend(store, metric, name, alerts=alerts) if metric.strip() else None
        return pages.render("trends.html", request, title="Trends", metric=metric, name=name, data=data,
                            metric_keys=queries.all_metric_keys(store))

    @app.get("/api/trends")
    def trends_api(metric: str = "", name: str = "") -> JSONBody:
        return JSONBody(queries.trend(store, metric, name, alerts=load_alerts(pages.alert_dirs)))

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request, a: str = "", b: str = "", alpha: str = "0.05", feedback: str = "",
                     rating_max: str = "") -> HTMLResponse:
        only = FeedbackRows(feedback, _float(rating_max, "rating_max"))
        view = comparison_view(store, a, b, alpha, only=only) if a and b else None
        recent = queries.list_runs(store, RunFilter(), 1, 200).items
        return pages.render("compare.html", request, title="Compare", a=a, b=b, alpha=alpha, view=view,
                            recent=recent, feedback=feedback, rating_max=rating_max,
                            feedback_filters=FEEDBACK_FILTERS)

    @app.get("/api/compare")
    def compare_api(a: str, b: str, alpha: str = "0.05", feedback: str = "",
                    rating_max: str = "") -> JSONBody:
        only = FeedbackRows(feedback, _float(rating_max, "rating_max"))
        return JSONBody(comparison_view(store, a, b, alpha, only=only))
