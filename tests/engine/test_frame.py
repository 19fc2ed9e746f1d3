"""engine/sdk_frame: rows and metrics as the compatible SDK's pandas frame makes them. The expected
values are what pandas 2.x gives for ``pd.DataFrame(records)`` / ``to_dict("records")`` and the
SDK's ``_aggregate_metrics`` (checked against azure-ai-evaluation 1.18.10 by the compat snippets)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from touchstone import evaluate
from touchstone.engine.result import RESULTS_FILE
from touchstone.engine.sdk_frame.columns import Columns, sdk_rows
from touchstone.engine.sdk_frame.metrics import sdk_metrics
from touchstone.engine.sdk_frame.values import coerce
from touchstone.evaluators.custom import CallableEvaluator, as_sdk_evaluator


def _col(rows: list[dict[str, Any]], key: str) -> tuple[list[Any], str]:
    cols = Columns.of(rows)
    return cols.values[key], cols.kinds[key]


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(
        (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        or (x == y and type(x) is type(y))
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize(
    ("rows", "values", "kind"),
    [
        ([{"a": 1}, {"a": 2}], [1, 2], "int"),
        ([{"a": 1}, {}], [1.0, math.nan], "float"),
        ([{"a": 1}, {"a": None}], [1.0, math.nan], "float"),
        ([{"a": 1}, {"a": 2.5}], [1.0, 2.5], "float"),
        ([{"a": True}, {"a": False}], [True, False], "bool"),
        ([{"a": True}, {}], [True, math.nan], "object"),
        ([{"a": True}, {"a": None}], [True, None], "object"),
        ([{"a": 1}, {"a": True}], [1, True], "object"),
        ([{"a": None}, {"a": None}], [None, None], "object"),
        ([{"a": None}, {}], [math.nan, math.nan], "float"),
        ([{"a": "x"}, {"a": None}, {}], ["x", None, math.nan], "object"),
        ([{"a": [1]}, {}], [[1], math.nan], "object"),
        ([{"a": 2**70}, {"a": 1}], [2**70, 1], "object"),
    ],
)
def test_columns_follow_pandas(rows: list[dict[str, Any]], values: list[Any], kind: str) -> None:
    got, got_kind = _col(rows, "a")
    assert got_kind == kind
    assert _same(got, values), got


def test_numpy_scalars_read_as_python() -> None:
    import numpy as np

    values, kind = coerce([np.int64(3), 2])
    assert kind == "int" and values == [3, 2] and all(type(v) is int for v in values)


def test_per_turn_dict_is_spread_into_columns_after_the_others() -> None:
    rows = [
        {"m": 4.0, "evaluation_per_turn": {"m": [3.0, 5.0], "m_reason": ["a", "b"]}, "m_reason": "r"},
        {"m": 2.0, "m_reason": "s"},
    ]
    cols = Columns.of(rows)
    assert list(cols.values) == ["m", "m_reason", "evaluation_per_turn.m", "evaluation_per_turn.m_reason"]
    assert cols.values["evaluation_per_turn.m"][0] == [3.0, 5.0]
    assert math.isnan(cols.values["evaluation_per_turn.m"][1])


def test_failed_rows_keep_their_error_beside_nan() -> None:
    outs: list[dict[str, Any] | None] = [{"s": 1}, {"x_error": "boom", "x_status": "failed"}, {"s": 3}]
    rows, columns = sdk_rows([{"q": "a"}, {"q": "b"}, {"q": "c"}], {"x": outs}, {"x": [False, True, False]})
    assert rows[0] == {"inputs.q": "a", "outputs.x.s": 1.0}
    assert math.isnan(rows[1]["outputs.x.s"]) and rows[1]["outputs.x.x_error"] == "boom"
    assert "outputs.x.x_error" not in rows[2]
    assert columns["x"].kinds["s"] == "float"


def test_target_rows_have_line_numbers_and_nested_leaves() -> None:
    targets: list[tuple[dict[str, Any] | None, str | None]] = [
        ({"response": "r0", "meta": {"n": 1}}, None),
        (None, "ValueError: no"),
    ]
    rows, _ = sdk_rows([{"q": "a"}, {"q": "b", "ctx": {"k": "v"}}], {}, {}, targets)
    assert rows[0]["inputs.line_number"] == 0 and rows[1]["inputs.line_number"] == 1
    assert rows[0]["outputs.meta.n"] == 1.0 and math.isnan(rows[1]["outputs.meta.n"])
    assert rows[1]["outputs.target_error"] == "ValueError: no"
    assert rows[1]["inputs.ctx.k"] == "v" and rows[0]["inputs.ctx.k"] is None
    assert math.isnan(rows[0]["inputs.ctx"])
    no_target, _ = sdk_rows([{"q": "a"}], {}, {})
    assert no_target == [{"inputs.q": "a"}]


def test_conversation_data_is_not_flattened() -> None:
    rows, _ = sdk_rows([{"conversation": {"messages": []}}], {}, {})
    assert rows == [{"inputs.conversation": {"messages": []}}]


def test_metrics_as_the_sdk_aggregates() -> None:
    cols = {
        "j": Columns.of([
            {"j": 4.0, "j_result": "pass", "j_threshold": 3, "j_passed": True, "j_reason": "x",
             "j_prompt_tokens": 10, "other_result": "fail"},
            {"j": 2.0, "j_result": "fail", "j_threshold": 3, "j_passed": False, "j_reason": "y",
             "j_prompt_tokens": 12, "other_result": "pass"},
        ]),
        "f": Columns.of([{"ok": True, "n": 1}, {"n": 3}]),
        "fluency": Columns.of([{"fluency_prompt_tokens": 5}, {"fluency_prompt_tokens": 7}]),
        "s": Columns.of([{"violence_score": 5}, {"violence_score": 0}, {"violence_score": 4}]),
        "pm": Columns.of([{"protected_material_label": True}, {"protected_material_label": False}]),
    }
    metrics = sdk_metrics(cols)
    assert metrics["j.j"] == 3.0 and metrics["j.j_passed"] == 0.5
    assert metrics["j.j_prompt_tokens"] == 11.0  # a custom name: averaged
    assert "fluency.fluency_prompt_tokens" not in metrics  # an SDK metric's token count: left out
    assert "j.j_threshold" not in metrics and "j.j_reason" not in metrics
    assert metrics["j.binary_aggregate"] == 0.5  # the last *_result column wins
    assert "f.ok" not in metrics  # booleans with a gap: not numeric for pandas
    assert metrics["f.n"] == 2.0
    assert metrics["s.violence_score"] == 3.0 and metrics["s.violence_defect_rate"] == 0.67
    assert metrics["pm.protected_material_defect_rate"] == 0.5
    assert "pm.protected_material_label" not in metrics


def test_own_aggregate_and_callable_outputs(tmp_path: Path) -> None:
    class Length:
        def __call__(self, *, response: str) -> int:
            return len(response)

        def __aggregate__(self, values: list[int]) -> dict[str, int]:
            return {"max": max(values)}

    def verdict(response: str) -> bool:
        return len(response) > 2

    rows = [{"response": "abcd"}, {"response": "a"}]
    res = evaluate(data=rows, evaluators={"len": Length(), "v": verdict}, store=tmp_path / "s.db")
    assert [r["outputs.len.output"] for r in res["rows"]] == [4, 1]
    assert [r["outputs.v.output"] for r in res["rows"]] == [True, False]
    assert res["metrics"] == {"len.output": 2.5, "v.output": 0.5, "len.max": 4}
    assert isinstance(as_sdk_evaluator(verdict, "v"), CallableEvaluator)


def test_output_folder_and_file(tmp_path: Path) -> None:
    rows = [{"response": "a", "ground_truth": "a"}]
    folder = tmp_path / "out"
    folder.mkdir()
    res = evaluate(
        data=rows, evaluators={"n": lambda response: 1}, output_path=folder, store=tmp_path / "s.db"
    )
    saved = json.loads((folder / RESULTS_FILE).read_text())
    assert saved == {"rows": res["rows"], "metrics": res["metrics"], "studio_url": None}
    assert (folder / "rows.jsonl").exists() and (folder / "summary.json").exists()
    file = tmp_path / "res.json"
    evaluate(data=rows, evaluators={"n": lambda response: 1}, output_path=file, store=tmp_path / "s.db")
    assert set(json.loads(file.read_text())) == {"rows", "metrics", "studio_url"}


def test_fail_on_evaluator_errors_raises_the_sdk_exception(tmp_path: Path) -> None:
    from touchstone._exceptions import ErrorBlame, ErrorCategory, EvaluationException

    def broken(response: str) -> float:
        raise RuntimeError("exploded")

    with pytest.raises(EvaluationException) as info:
        evaluate(data=[{"response": "a"}], evaluators={"b": broken}, fail_on_evaluator_errors=True,
                 store=tmp_path / "s.db")
    assert info.value.category is ErrorCategory.FAILED_EXECUTION
    assert info.value.blame is ErrorBlame.UNKNOWN
    assert "Evaluator b failed on 1 of 1 rows (100%): RuntimeError: exploded" in str(info.value)


def test_csv_empty_cells_are_nan_in_rows(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("response,note\nabc,\nde,ok\n")
    res = evaluate(data=str(data), evaluators={"n": lambda response: len(response)}, store=tmp_path / "s.db")
    assert math.isnan(res["rows"][0]["inputs.note"]) and res["rows"][1]["inputs.note"] == "ok"
