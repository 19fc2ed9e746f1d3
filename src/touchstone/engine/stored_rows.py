"""``evaluate()``'s rows of a large run, read from the run store page by page instead of held.

:class:`StoredRows` is a read-only sequence: ``len``, indexing, slices (lists), iteration (one page
of :data:`PAGE_ROWS` rows at a time) and ``==`` with a list behave as on the list of rows a small
run returns, and each row is rendered exactly as :func:`~touchstone.engine.sdk_frame.columns.sdk_rows`
renders it, with the :class:`~touchstone.engine.sdk_frame.gather.FrameSchema` gathered over the whole run.
A page is read as :class:`RowParts` (:func:`read_parts`: the evaluators' outputs from the store; the
input rows from the records when the run holds them, else from the store's copy of each row), then
rendered by :func:`~touchstone.engine.sdk_frame.render.frame_row`, as the output files' rows are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, overload

from touchstone.data.loaders import Record
from touchstone.engine.sdk_frame.gather import FrameSchema
from touchstone.engine.sdk_frame.render import Outputs, frame_row
from touchstone.store import Store

PAGE_ROWS = 2000


class RowParts(NamedTuple):
    """What one row of the frame is rendered from (:func:`~touchstone.engine.sdk_frame.render.frame_row`)."""

    idx: int
    data: Mapping[str, Any]
    source: str
    target: Mapping[str, Any] | None
    target_error: str | None
    outputs: Mapping[tuple[int, str], Outputs]
    """The evaluators' outputs by (row, evaluator), of the row's page."""


def read_parts(
    store: Store, run_id: str, start: int, stop: int, records: Sequence[Record] | None = None
) -> list[RowParts]:
    """Rows ``start`` to ``stop`` (exclusive) of run ``run_id`` as the store holds them, read with two
    queries (the data from ``records`` when the run holds them)."""
    results = store.results
    inputs = results.row_inputs(run_id, start, stop, with_data=records is None)
    outputs = results.outputs_by_result(run_id, start, stop)
    parts = []
    for i in range(start, stop):
        got = inputs.get(i)
        target, error = (None, None) if got is None else (got.target, got.target_error)
        if records is not None:
            rec = records[i]
            data, source = rec.data, rec.source
        elif got is None:
            data, source = {}, ""
        else:
            data, source = got.data or {}, got.source or ""
        parts.append(RowParts(i, data, source, target, error, outputs))
    return parts


class StoredRows(Sequence[dict[str, Any]]):
    """The rows of run ``run_id``, rendered from ``store`` on demand (see the module's text).

    ``unscored(name, i)``: the outputs standing for a (row, evaluator) pair the store has no result
    for (an aborted run's failure), or None."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        n_rows: int,
        schema: FrameSchema,
        *,
        records: Sequence[Record] | None = None,
        unscored: Callable[[str, int], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self._store, self._run_id, self._n = store, run_id, n_rows
        self._schema, self._records, self._unscored = schema, records, unscored
        self._page: tuple[int, list[dict[str, Any]]] | None = None

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._n)
            if step == 1:
                return self._range(start, stop) if start < stop else []
            return [self[i] for i in range(start, stop, step)]
        i = index + self._n if index < 0 else index
        if not 0 <= i < self._n:
            raise IndexError("row index out of range")
        first = i - i % PAGE_ROWS
        if self._page is None or self._page[0] != first:
            self._page = (first, self._range(first, min(self._n, first + PAGE_ROWS)))
        return self._page[1][i - first]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, self._n, PAGE_ROWS):
            yield from self._range(start, min(self._n, start + PAGE_ROWS))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, StoredRows)):
            return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared by value, as a list

    def __repr__(self) -> str:
        return f"<StoredRows: {self._n} rows of run {self._run_id}>"

    def _range(self, start: int, stop: int) -> list[dict[str, Any]]:
        """Rows ``start`` to ``stop`` (exclusive), rendered."""
        schema, unscored = self._schema, self._unscored
        return [frame_row(schema, *parts, unscored)
                for parts in read_parts(self._store, self._run_id, start, stop, self._records)]
