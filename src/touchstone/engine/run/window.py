"""The records of the batches a run is working on, by their index in the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from touchstone.data.loaders import Record


class RecordWindow(Sequence[Record]):
    """Records by their index in the run, for the batches being worked on (what an executor's
    ``score_indices`` looks rows up in): every record when the run holds them, else the batches
    :meth:`hold` keeps until :meth:`release`."""

    def __init__(self, n_rows: int, records: Sequence[Record] | None = None) -> None:
        self._n, self._all = n_rows, records
        self._batches: dict[int, list[Record]] = {}

    def hold(self, start: int, batch: list[Record]) -> None:
        if self._all is None:
            self._batches[start] = batch

    def release(self, start: int) -> None:
        self._batches.pop(start, None)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        if self._all is not None:
            return self._all[index]
        for start, batch in self._batches.items():
            if start <= index < start + len(batch):
                return batch[index - start]
        raise IndexError(f"row {index} is not in a batch being worked on")
