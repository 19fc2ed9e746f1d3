"""The result of ``evaluate()``: a dict shaped like ``azure-ai-evaluation``'s, with more on top."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class EvaluationResult(dict[str, Any]):
    """``result["rows"]``, ``result["metrics"]`` and ``result["studio_url"]`` as in the compatible
    SDK; plus ``summary`` (per metric key: mean, n, n_failed, 95% CI, pass rate), ``run`` (id, name,
    times, status, config, package version) and :meth:`to_pandas`."""

    def __init__(
        self,
        rows: list[dict[str, Any]],
        metrics: dict[str, float],
        summary: dict[str, dict[str, Any]],
        run: dict[str, Any],
    ) -> None:
        super().__init__(rows=rows, metrics=metrics, studio_url=None)
        self.summary = summary
        self.run = run

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self["rows"]  # type: ignore[no-any-return,unused-ignore]

    @property
    def metrics(self) -> dict[str, float]:
        return self["metrics"]  # type: ignore[no-any-return,unused-ignore]

    @property
    def n_failed(self) -> int:
        """Scores that could not be obtained, over all evaluators."""
        return sum(1 for row in self.rows for key, value in row.items() if key.endswith("_error") and value)

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    def summary_document(self) -> dict[str, Any]:
        return {"metrics": self.metrics, "summary": self.summary, "run": self.run}

    def write(self, output_path: str | os.PathLike[str]) -> None:
        """A ``.json`` path gets the SDK's single JSON file; any other path is a directory that gets
        ``rows.jsonl`` (exactly ``result["rows"]``) and ``summary.json``."""
        path = Path(output_path)
        if path.suffix.lower() == ".json":
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {"rows": self.rows, "metrics": self.metrics, "studio_url": None}
            path.write_text(json.dumps(doc, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
            return
        path.mkdir(parents=True, exist_ok=True)
        with (path / "rows.jsonl").open("w", encoding="utf-8") as fh:
            for row in self.rows:
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        (path / "summary.json").write_text(
            json.dumps(self.summary_document(), ensure_ascii=False, indent=2, default=str), encoding="utf-8"
        )
