"""``/trends`` (a metric's mean over runs, monitors' alerts marked) and ``/api/trends``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from touchstone.ui.monitor_alerts import load_alerts
from touchstone.ui.pages import JSONBody, Pages
from touchstone.ui.run_list import all_metric_keys
from touchstone.ui.trends import trend


def trends_router(pages: Pages) -> APIRouter:
    """The trends page and JSON over the pages' store and its monitors' alert files."""
    router = APIRouter()
    store = pages.store

    @router.get("/trends", response_class=HTMLResponse)
    def trends_page(request: Request, metric: str = "", name: str = "") -> HTMLResponse:
        alerts = load_alerts(pages.alert_dirs) if metric.strip() else None
        data = trend(store, metric, name, alerts=alerts) if metric.strip() else None
        return pages.render("trends.html", request, title="Trends", metric=metric, name=name, data=data,
                            metric_keys=all_metric_keys(store))

    @router.get("/api/trends")
    def trends_api(metric: str = "", name: str = "") -> JSONBody:
        return JSONBody(trend(store, metric, name, alerts=load_alerts(pages.alert_dirs)))

    return router
