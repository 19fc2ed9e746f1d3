"""``/compare`` (run B against run A, optionally on the rows with some user feedback) and
``/api/compare``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from touchstone.ui.comparison import FEEDBACK_FILTERS, FeedbackRows, comparison_view
from touchstone.ui.pages import JSONBody, Pages, parse_float
from touchstone.ui.run_list import RunFilter, list_runs


def compare_router(pages: Pages) -> APIRouter:
    """The comparison page and JSON over the pages' store."""
    router = APIRouter()
    store = pages.store

    @router.get("/compare", response_class=HTMLResponse)
    def compare_page(request: Request, a: str = "", b: str = "", alpha: str = "0.05", feedback: str = "",
                     rating_max: str = "") -> HTMLResponse:
        only = FeedbackRows(feedback, parse_float(rating_max, "rating_max"))
        view = comparison_view(store, a, b, alpha, only=only) if a and b else None
        recent = list_runs(store, RunFilter(), 1, 200).items
        return pages.render("compare.html", request, title="Compare", a=a, b=b, alpha=alpha, view=view,
                            recent=recent, feedback=feedback, rating_max=rating_max,
                            feedback_filters=FEEDBACK_FILTERS)

    @router.get("/api/compare")
    def compare_api(a: str, b: str, alpha: str = "0.05", feedback: str = "",
                    rating_max: str = "") -> JSONBody:
        only = FeedbackRows(feedback, parse_float(rating_max, "rating_max"))
        return JSONBody(comparison_view(store, a, b, alpha, only=only))

    return router
