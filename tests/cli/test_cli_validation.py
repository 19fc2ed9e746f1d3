"""A corpus of malformed inputs: each gets exit status 2 and a message naming the line and the field,
with no traceback, and costs nothing (no run is stored). Valid inputs run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = {"query": "q", "response": "the cat", "ground_truth": "cat"}


def jsonl(*rows: object) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


# (name, file bytes, file suffix, extra CLI args, substrings the message must contain)
CASES: list[tuple[str, bytes, str, list[str], list[str]]] = [
    ("invalid json", jsonl(GOOD, "{not json"), ".jsonl", [], ["line 2", "invalid JSON"]),
    (
        "missing field",
        jsonl(GOOD, {"query": "q", "ground_truth": "x"}),
        ".jsonl",
        [],
        ["line 2", 'field "response"', "missing"],
    ),
    (
        "number for string",
        jsonl(GOOD, GOOD, {"response": 42, "ground_truth": "x"}),
        ".jsonl",
        [],
        ["line 3", 'field "response"', "expected a string", "a number"],
    ),
    (
        "number in ground truth list",
        jsonl({"response": "x", "ground_truth": ["a", 3]}),
        ".jsonl",
        [],
        ["line 1", 'field "ground_truth"', "list of strings"],
    ),
    ("empty file", b"", ".jsonl", [], ["empty"]),
    ("whitespace file", b"\n\n  \n", ".jsonl", [], ["empty"]),
    (
        "not utf-8",
        jsonl(GOOD) + b'{"response": "caf\xe9", "ground_truth": "x"}\n',
        ".jsonl",
        [],
        ["line 2", "UTF-8"],
    ),
    ("json array line", jsonl(GOOD, [1, 2]), ".jsonl", [], ["line 2", "expected a JSON object"]),
    ("unknown metric", jsonl(GOOD), ".jsonl", ["-m", "f1_scor"], ["unknown metric", "f1_score"]),
    (
        "mapping to missing column",
        jsonl(GOOD),
        ".jsonl",
        ["--map", "response=answer_text"],
        ["answer_text", "columns are"],
    ),
    (
        "bad threshold",
        jsonl(GOOD),
        ".jsonl",
        ["--threshold", "f1_score=high"],
        ["--threshold", "expected a number"],
    ),
    ("csv missing column", b"query,response\nq,the cat\n", ".csv", [], ["line 2", 'field "ground_truth"']),
    ("csv not utf-8", b"response,ground_truth\ncaf\xe9,x\n", ".csv", [], ["line 2", "UTF-8"]),
]


def run_cli(args: list[str], store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "touchstone.cli", *args, "--store", str(store), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name,content,suffix,args,expected", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_exit_2(
    tmp_path: Path, name: str, content: bytes, suffix: str, args: list[str], expected: list[str]
) -> None:
    path = tmp_path / f"data{suffix}"
    path.write_bytes(content)
    store = tmp_path / "runs.db"
    proc = run_cli(["eval", str(path), *args], store)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = " ".join(proc.stderr.split())
    for part in expected:
        assert part in message, f"{part!r} not in {proc.stderr!r}"
    assert "Traceback" not in proc.stderr + proc.stdout
    if "unknown metric" not in message:
        assert str(path) in message or "--" in message
    # nothing was run or stored
    from touchstone.store.sqlite import RunStore

    assert RunStore(store).list_runs() == []


def test_bom_and_blank_trailing_lines_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + jsonl(GOOD, GOOD) + b"\n\n")
    proc = run_cli(["eval", str(path), "--out", str(tmp_path / "out")], tmp_path / "runs.db")
    assert proc.returncode == 0, proc.stderr
    rows = (tmp_path / "out" / "rows.jsonl").read_text().splitlines()
    assert len(rows) == 2


def test_many_bad_lines_reported_together(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(jsonl(*([{"response": 1, "ground_truth": "x"}] * 30)))
    proc = run_cli(["eval", str(path), "-m", "f1_score"], tmp_path / "runs.db")
    assert proc.returncode == 2
    # the same problem on every row is said once, naming the rows (not thirty times)
    assert "30 rows (lines 1-30)" in proc.stderr and "30 problems in all" in proc.stderr
    assert proc.stderr.count("expected a string") == 1


def test_different_problems_stay_one_line_each_and_a_column_is_suggested(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    good = jsonl(*([{"query": "q", "answer_text": "a", "ground_truth": "a"}] * 4))
    path.write_bytes(good + b'{"query": "q", oops}\n')
    proc = run_cli(["eval", str(path), "-m", "f1_score"], tmp_path / "runs.db")
    assert proc.returncode == 2
    text = " ".join(proc.stderr.split())
    assert "line 5: invalid JSON" in text  # the broken line...
    assert '4 rows (lines 1-4), field "response": missing' in text  # ...hides nothing else
    assert "--map response=answer_text" in text


def test_conversation_problems(tmp_path: Path) -> None:
    from touchstone import Evaluator, InputSpec, InputValidationError, evaluate

    class TurnCount(Evaluator):
        metric = prefix = score_key = "turns"
        inputs = (InputSpec("conversation", "conversation"),)

        def _score(self, **inputs: object) -> dict[str, object]:
            return self.result(float(len(inputs["conversation"]["messages"])))  # type: ignore[index]

    bad_role = {"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}]}
    # (a conversation without an assistant message is accepted, as the SDK accepts it: nothing to judge)
    no_content = {"messages": [{"role": "user", "content": 5}]}
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    with pytest.raises(InputValidationError) as info:
        evaluate(data=[good, bad_role, no_content], evaluators={"t": TurnCount()}, store=tmp_path / "s.db")
    text = str(info.value)
    assert "row 2" not in text  # lists of dicts are numbered like lines
    assert "<list>, line 2" in text and "role" in text and "bot" in text
    assert "<list>, line 3" in text and "content" in text and "string" in text
    result = evaluate(data=[good], evaluators={"t": TurnCount()}, store=tmp_path / "s.db")
    assert result["rows"][0]["outputs.t.turns"] == 2.0


def test_string_for_list_and_bad_documents(tmp_path: Path) -> None:
    from touchstone import Evaluator, InputSpec, InputValidationError, evaluate

    class Hits(Evaluator):
        metric = prefix = score_key = "hits"
        inputs = (InputSpec("retrieved_documents", "ranked_documents"), InputSpec("context", "context"))

        def _score(self, **inputs: object) -> dict[str, object]:
            return self.result(1.0)

    rows = [
        {"retrieved_documents": "doc-1", "context": "fine"},
        {"retrieved_documents": ["doc-1"], "context": [{"title": "no content"}]},
        {"retrieved_documents": [{"document_id": "d", "relevance_score": "high"}], "context": 7},
    ]
    with pytest.raises(InputValidationError) as info:
        evaluate(data=rows, evaluators={"h": Hits()}, store=tmp_path / "s.db")
    text = str(info.value)
    assert 'line 1, field "retrieved_documents": expected a list' in text and "got a string" in text
    assert 'line 2, field "context"' in text and "content" in text
    assert 'line 3, field "retrieved_documents"' in text and "relevance_score" in text
    assert 'line 3, field "context"' in text
    assert isinstance(info.value, ValueError)
