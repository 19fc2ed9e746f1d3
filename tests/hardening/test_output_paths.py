"""One output-path guard for every command that writes: an output never replaces an input, a folder
is never taken for a file (or the other way round), and the refusal comes before any judge call, as
one message and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.fakes.openai_server import FakeOpenAIServer
from touchstone.cli import app
from touchstone.errors import InputValidationError
from touchstone.outputs import check_output_file, check_output_folder

runner = CliRunner()


def _clean(result: Any, words: str) -> None:
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "Traceback" not in text and words in text, text


def _rows(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"response": f"r{i}", "ground_truth": f"r{i}"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_out_folder_holding_the_input_is_refused(tmp_path: Path) -> None:
    data = _rows(tmp_path / "data" / "rows.jsonl")
    before = data.read_bytes()
    result = runner.invoke(app, ["eval", str(data), "--out", str(tmp_path / "data"), "-q",
                                 "--store", str(tmp_path / "runs.db")])
    _clean(result, "would replace the input")
    assert data.read_bytes() == before


def test_eval_input_named_like_the_summary_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "out" / "summary.json"
    data.parent.mkdir()
    data.write_text(json.dumps([{"response": "a", "ground_truth": "a"}]))
    result = runner.invoke(app, ["eval", str(data), "--out", str(tmp_path / "out"), "-q",
                                 "--store", str(tmp_path / "runs.db")])
    _clean(result, "would replace the input")


def test_pairwise_output_over_its_pairs_is_refused_before_any_call(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"query": "q", "model_a": "a", "model_b": "b", "response_a": "x",
                                 "response_b": "y"}) + "\n")
    before = pairs.read_bytes()
    args = ["pairwise", str(pairs), "--judge-model", "m", "--judge-base-url", fake_openai.base_url, "-q"]
    _clean(runner.invoke(app, [*args, "-o", str(pairs)]), "is the input")
    _clean(runner.invoke(app, [*args, "-o", str(tmp_path)]), "is a folder")
    assert fake_openai.count == 0 and pairs.read_bytes() == before


def test_simulate_out_folder_is_refused_before_any_call(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["simulate", "-s", "qa", "-t", "tests.fakes.openai_server:nothing", "-o",
                                 str(tmp_path), "--judge-base-url", fake_openai.base_url])
    _clean(result, "is a folder")
    assert fake_openai.count == 0


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_guard_through_links_and_dots(tmp_path: Path, kind: str) -> None:
    data = _rows(tmp_path / "in" / "rows.jsonl")
    link = tmp_path / "alias"
    link.symlink_to(tmp_path / "in")
    with pytest.raises(InputValidationError):
        if kind == "file":
            check_output_file(link / ".." / "in" / "rows.jsonl", "-o", inputs=[data])
        else:
            check_output_folder(link, "--out", inputs=[data])
    # elsewhere is fine, and a missing folder is made later
    assert check_output_folder(tmp_path / "new" / "out", "--out", inputs=[data]) == tmp_path / "new" / "out"


def test_a_file_where_a_folder_should_be(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("x")
    with pytest.raises(InputValidationError, match="which is a file"):
        check_output_file(blocker / "votes.jsonl", "-o")
    with pytest.raises(InputValidationError, match="is a file"):
        check_output_folder(blocker, "--out")
