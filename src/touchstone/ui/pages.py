"""What every route of the dashboard shares: :class:`Pages` (the store, the template environment,
rendering, and the run and row lookups that answer 404), :class:`JSONBody` (the ``/api`` answers),
and the parsing of a number from the query string.

The routers (:mod:`touchstone.ui.routes`, one per page) build on this module and never on each
other.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from touchstone.store.base import RunInfo, Store
from touchstone.ui.row_detail import row_detail
from touchstone.ui.safety import json_bytes, path, safe_href
from touchstone.ui.views import NotFound, QueryError, finite, get_run

HERE = Path(__file__).resolve().parent
PAGE_SIZES = (25, 50, 100, 200)


class JSONBody(Response):
    """JSON with ``<``, ``>``, ``&`` escaped and NaN sent as null (see :func:`safety.json_bytes`)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json_bytes(finite(content))


def environment() -> Environment:
    """The templates' environment: autoescaped, strict about undefined names, with the dashboard's
    link helpers and number filters."""
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
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)


def parse_float(text: str, name: str) -> float | None:
    """A finite number from the query string (None when empty); a :class:`QueryError` otherwise."""
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
        self.env = environment()

    def render(self, template: str, request: Request, status: int = 200, /, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(request_path=request.url.path, **context)
        return HTMLResponse(html, status_code=status)

    def run(self, run_id: str) -> RunInfo:
        info = get_run(self.store, run_id)
        if info is None:
            raise NotFound(f"no run {run_id!r} in this store")
        return info

    def row(self, run_id: str, idx: int) -> tuple[RunInfo, dict[str, Any]]:
        info = self.run(run_id)
        detail = row_detail(self.store, info, idx)
        if detail is None:
            raise NotFound(f"run {run_id!r} has no row {idx}")
        return info, detail
