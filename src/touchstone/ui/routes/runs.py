"""``/runs`` (the runs list, filtered and paged) and ``/api/runs``."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from touchstone.ui.pages import JSONBody, Pages
from touchstone.ui.run_list import RunFilter, all_metric_keys, known_statuses, list_runs


def runs_router(pages: Pages) -> APIRouter:
    """The runs list's page and JSON over the pages' store."""
    router = APIRouter()
    store = pages.store

    @router.get("/runs", response_class=HTMLResponse)
    def runs_page(
        request: Request, name: str = "", since: str = "", until: str = "", metric: str = "",
        status: str = "", page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> HTMLResponse:
        f = RunFilter(name=name, since=since, until=until, metric=metric, status=status)
        result = list_runs(store, f, page_no, size)
        return pages.render("runs.html", request, title="Runs", f=f, result=result,
                            statuses=known_statuses(store),
                            metric_keys=all_metric_keys(store), query=f.__dict__ | {"size": size})

    @router.get("/api/runs")
    def runs_api(
        name: str = "", since: str = "", until: str = "", metric: str = "", status: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> JSONBody:
        f = RunFilter(name=name, since=since, until=until, metric=metric, status=status)
        return JSONBody(list_runs(store, f, page_no, size).as_dict())

    return router
