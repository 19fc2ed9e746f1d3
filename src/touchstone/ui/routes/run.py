"""A run's pages: ``/runs/<id>`` (summary, the filtered row table), ``/runs/<id>/rows/<idx>`` (one
row), and their JSON under ``/api/runs/<id>`` (the run, its rows, its distributions, a row)."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from touchstone.store.dashboard import RowFilter
from touchstone.ui.comparison import FEEDBACK_FILTERS
from touchstone.ui.distributions import distributions
from touchstone.ui.pages import JSONBody, Pages, parse_float
from touchstone.ui.row_table import input_columns, rows_page
from touchstone.ui.views import metric_keys, run_metrics, summary_of, summary_rows


def _row_filter(q: str, metric: str, min_: str, max_: str, status: str, passed: str, column: str,
                value: str, sort: str, feedback: str = "", rating_max: str = "") -> RowFilter:
    return RowFilter(q=q, metric=metric, min=parse_float(min_, "min"), max=parse_float(max_, "max"),
                     status=status, passed=passed, column=column, value=value, sort=sort or "idx",
                     feedback=feedback, rating_max=parse_float(rating_max, "rating_max"))


def run_router(pages: Pages) -> APIRouter:
    """A run's pages and JSON over the pages' store."""
    router = APIRouter()
    store = pages.store

    @router.get("/runs/{run_id}", response_class=HTMLResponse)
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

    @router.get("/api/runs/{run_id}")
    def run_api(run_id: str) -> JSONBody:
        info = pages.run(run_id)
        return JSONBody({"run": info.as_dict(), "metrics": info.metrics, "summary": summary_of(info),
                         "metric_keys": metric_keys(run_metrics(store, info))})

    @router.get("/api/runs/{run_id}/rows")
    def rows_api(
        run_id: str, q: str = "", metric: str = "", min_: str = Query("", alias="min"),
        max_: str = Query("", alias="max"), status: str = "", passed: str = "", column: str = "",
        value: str = "", sort: str = "idx", feedback: str = "", rating_max: str = "",
        page_no: int = Query(1, alias="page", ge=1), size: int = Query(50, ge=1, le=500),
    ) -> JSONBody:
        info = pages.run(run_id)
        f = _row_filter(q, metric, min_, max_, status, passed, column, value, sort, feedback, rating_max)
        return JSONBody(rows_page(store, info, f, page_no, size).as_dict())

    @router.get("/api/runs/{run_id}/distributions")
    def distributions_api(run_id: str) -> JSONBody:
        return JSONBody({"metrics": distributions(store, pages.run(run_id))})

    @router.get("/runs/{run_id}/rows/{idx}", response_class=HTMLResponse)
    def row_page(request: Request, run_id: str, idx: int) -> HTMLResponse:
        info, detail = pages.row(run_id, idx)
        return pages.render("row.html", request, title=f"Row {idx} of {info.id}", info=info, row=detail)

    @router.get("/api/runs/{run_id}/rows/{idx}")
    def row_api(run_id: str, idx: int) -> JSONBody:
        return JSONBody(pages.row(run_id, idx)[1])

    return router
