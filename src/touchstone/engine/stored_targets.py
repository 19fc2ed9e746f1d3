"""The target's output (or error) per row of a run, kept in the run store only.

``evaluate(target=...)`` stores each row with what the target returned (``rows.target``,
``rows.target_error``) as soon as the target answers; the evaluators read it again when they score the
row, the figures when they are fed, the corpus metrics at the end. :class:`StoredTargets` serves those
reads from the store a page of rows at a time, holding at most :data:`PAGES` pages, so a run with a
target holds bounded memory whatever its size (it held every output for the whole run before).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

from touchstone.store import Store

TargetResult = tuple["dict[str, Any] | None", "str | None"]
"""The target's output on a row, or why it has none (its error)."""

PAGE_ROWS = 5000
PAGES = 8
"""Pages held: the batches the CPU-bound and judge passes work on at once, with room to spare."""


class StoredTargets:
    """``get(i, default)``, ``targets[i] = result`` and ``update(mapping)`` as on the dict of every
    row's :data:`TargetResult` it replaces; rows without one give ``default``.

    A result set here is kept in its page (read first, so a page never misses a result the store
    has not written yet), and is written to the store by the runner beside the row."""

    def __init__(self, store: Store, run_id: str, page_rows: int = PAGE_ROWS, pages: int = PAGES) -> None:
        self._store, self._run_id = store, run_id
        self._page_rows, self._max = page_rows, pages
        self._pages: collections.OrderedDict[int, dict[int, TargetResult]] = collections.OrderedDict()

    def get(self, i: int, default: Any = None) -> Any:
        return self._page(i).get(i, default)

    def __setitem__(self, i: int, result: TargetResult) -> None:
        self._page(i)[i] = result

    def update(self, results: Mapping[int, TargetResult]) -> None:
        for i, result in results.items():
            self[i] = result

    def _page(self, i: int) -> dict[int, TargetResult]:
        first = i - i % self._page_rows
        page = self._pages.get(first)
        if page is not None:
            self._pages.move_to_end(first)
            return page
        page = {
            idx: (target, error)
            for idx, target, error in self._store.results.target_outputs(
                self._run_id, first, first + self._page_rows, answered_only=True
            )
        }
        self._pages[first] = page
        while len(self._pages) > self._max:
            self._pages.popitem(last=False)
        return page
