"""The web app's people-in-the-loop routes: annotation pages and their JSON, and production
feedback (``POST /api/feedback``, its per-window aggregates, a run's rows with their feedback, and
a run's active-learning queue).

Pages: ``/annotate`` (the tasks), ``/annotate/<task>?annotator=<id>`` (one annotator's page: the
script ``annotate.js`` fetches the items in the annotator's order, blinded, and posts each answer;
keyboard: 1-5 rate, a / b / t choose, n / p move). No system name is ever sent to the page.

``POST /api/feedback`` itself is :mod:`touchstone.ui.feedback_api` (a lean endpoint, since
production sends it one event per request); the feedback read here is what it stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from touchstone.errors import InputValidationError
from touchstone.people import annotations as an
from touchstone.people import feedback as fb
from touchstone.people import queue as q
from touchstone.store.people import Answer
from touchstone.ui.pages import JSONBody, Pages

MAX_BODY = 1 << 20
"""Largest JSON request body accepted (bytes)."""


def _json(content: Any, status: int = 200) -> JSONBody:
    return JSONBody(content, status_code=status)


def _error(message: str, status: int, field: str | None = None) -> JSONBody:
    return _json({"error": message, **({"field": field} if field else {})}, status)


def shown_answers(task: an.Task, annotator: str, answers: Sequence[Answer]) -> dict[str, Any]:
    """An annotator's stored answers as the page shows them: ``{item: {dimension: value}}``, a
    pairwise choice named by the side it is shown on for this annotator."""
    out: dict[str, dict[str, Any]] = {}
    for answer in answers:
        value: Any = answer.value
        if task.kind == "pairwise" and value in ("a", "b"):
            sides = an.sides_for(task.id, annotator, answer.item, 2)
            value = "ab"[sides.index("ab".index(value))]
        elif task.kind == "likert":
            value = int(value)
        out.setdefault(str(answer.item), {})[answer.dimension] = value
    return out


def annotation_router(pages: Pages) -> APIRouter:
    """The routes of this module over the pages' store (``POST /api/feedback`` is
    :mod:`touchstone.ui.feedback_api`'s)."""
    router = APIRouter()
    _annotation_routes(router, pages)
    _feedback_routes(router, pages)
    return router


def _annotation_routes(router: APIRouter, pages: Pages) -> None:
    store = pages.store

    @router.get("/annotate", response_class=HTMLResponse)
    def tasks_page(request: Request) -> HTMLResponse:
        return pages.render("annotate_tasks.html", request, title="Annotate", tasks=an.list_tasks(store))

    @router.get("/annotate/{task_id}", response_class=HTMLResponse)
    def task_page(request: Request, task_id: str, annotator: str = "") -> HTMLResponse:
        try:
            task = an.get_task(store, task_id)
            if annotator:
                an.check_annotator(annotator)
        except an.AnnotationError as exc:
            status = 404 if "no annotation task" in str(exc) else 400
            return pages.render("error.html", request, status, title="Annotate", message=str(exc))
        if not annotator:
            return pages.render("annotate_who.html", request, title=task.name or "Annotate", task=task)
        return pages.render("annotate.html", request, title=task.name or "Annotate", task=task,
                            annotator=annotator, dimensions=json.dumps(list(task.dimensions)))

    @router.get("/api/annotate/{task_id}")
    def task_api(task_id: str, annotator: str) -> Any:
        try:
            task = an.get_task(store, task_id)
            an.check_annotator(annotator)
        except an.AnnotationError as exc:
            return _error(str(exc), 404 if "no annotation task" in str(exc) else 400)
        items = an.items_of(store, task.id)
        order = an.order_for(task.id, annotator, len(items))
        return _json({
            "task": {"id": task.id, "name": task.name, "kind": task.kind,
                     "dimensions": list(task.dimensions)},
            "items": [an.item_view(task, items[i], annotator) for i in order],
            "answers": shown_answers(task, annotator, an.answers_of(store, task.id, annotator)),
            "progress": an.progress(store, task, annotator),
        })

    @router.post("/api/annotate/{task_id}/answers")
    async def answers_api(task_id: str, request: Request) -> Any:
        body, problem = await _read_json(request)
        if problem is not None:
            return problem
        if not isinstance(body, dict) or not isinstance(body.get("answers"), list):
            return _error('expected {"annotator": ..., "answers": [{item, dimension, value}]}', 422,
                          "answers")
        annotator = body.get("annotator")

        def save() -> dict[str, Any]:
            an.save_answers(store, task_id, str(annotator), body["answers"], shown=True)
            return an.progress(store, an.get_task(store, task_id), str(annotator))

        try:
            return _json({"progress": await run_in_threadpool(save)})
        except an.AnnotationError as exc:
            return _error(str(exc), 404 if "no annotation task" in str(exc) else 422)


async def _read_json(request: Request) -> tuple[Any, Any]:
    """The request's JSON body, or None and the 4xx answer saying what is wrong with it."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return None, _error(f"send the body as application/json (got {kind or 'no content type'!r})", 415,
                            "content-type")
    raw = await request.body()
    if len(raw) > MAX_BODY:
        return None, _error(f"the body is {len(raw)} bytes; at most {MAX_BODY}", 413, "body")
    try:
        return json.loads(raw), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, _error(f"the body is not valid JSON: {exc}", 400, "body")
    except RecursionError:  # "[[[[...": the decoder's own limit, not a server error
        return None, _error("the body is not valid JSON: nested too deeply", 400, "body")


def _feedback_routes(router: APIRouter, pages: Pages) -> None:
    store = pages.store

    @router.get("/api/feedback/windows")
    def windows_api(window: str = "day", since: str = "", until: str = "", run: str = "",
                    metric: str = "") -> Any:
        try:
            found = fb.aggregate(store, window, since or None, until or None, run or None, metric or None)
        except InputValidationError as exc:
            return _error(str(exc), 400, "window")
        return _json({"window": window, "windows": [w.as_dict() for w in found]})

    @router.get("/api/runs/{run_id}/feedback")
    def run_feedback_api(run_id: str, column: str = "", min_: float | None = Query(None, alias="min"),
                         max_: float | None = Query(None, alias="max"), id_column: str = "") -> Any:
        pages.run(run_id)
        columns = fb.run_feedback(store, run_id, id_column or None)
        if column:
            try:
                keep = set(fb.filter_rows(store, run_id, column, min_, max_, id_column or None))
            except InputValidationError as exc:
                return _error(str(exc), 400, "column")
            columns = {i: c for i, c in columns.items() if i in keep}
        return _json({"run_id": run_id, "columns": list(fb.FEEDBACK_COLUMNS),
                      "rows": [{"idx": i, **c} for i, c in sorted(columns.items())]})

    @router.get("/api/runs/{run_id}/queue")
    def queue_api(run_id: str, budget: int = Query(50, ge=0, le=100_000), metric: list[str] = Query([]),
                  id_column: str = "") -> Any:
        pages.run(run_id)
        ranked = q.build_queue(store, run_id, budget, metric or None, id_column=id_column or None)
        return _json({"run_id": run_id, "items": [x.as_dict() for x in ranked]})
