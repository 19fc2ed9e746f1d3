"""engine.planning presets: the table of presets, the rag preset's conditional ranking metric, the
inputs a column mapping provides, --metrics added to a preset, unknown presets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from touchstone.engine.planning import (
    PRESETS,
    choose_metrics,
    column_mapping_config,
    data_columns,
    mapped_inputs,
    preset_metrics,
)
from touchstone.errors import InputValidationError
from touchstone.evaluators import registry

TRIAD = ["faithfulness", "answer_relevancy", "context_relevance"]


RAG_COLUMNS = {"query", "context", "response"}


def test_rag_preset() -> None:
    assert preset_metrics("rag", RAG_COLUMNS) == TRIAD
    assert preset_metrics("rag", None) == [*TRIAD, "ranking"]  # columns unknown: every metric kept
    assert preset_metrics("rag", RAG_COLUMNS | {"retrieved_documents"}) == TRIAD  # ids without labels
    both = RAG_COLUMNS | {"retrieved_documents", "retrieval_ground_truth"}
    assert preset_metrics("rag", both) == [*TRIAD, "ranking"]


def test_every_preset_names_registered_metrics() -> None:
    names = set(registry.available())
    for preset in PRESETS.values():
        assert set(preset.metric_names) <= names
        assert preset.description


def test_choose_metrics() -> None:
    assert choose_metrics(None, None) == ["f1_score", "exact_match"]
    assert choose_metrics(["bleu_score"], None) == ["bleu_score"]
    assert choose_metrics(["bleu_score", "faithfulness"], "rag", RAG_COLUMNS) == [*TRIAD, "bleu_score"]
    with pytest.raises(InputValidationError, match=r"unknown preset 'ragg'; known: question-answering, "):
        choose_metrics(None, "ragg")


def test_mapped_inputs() -> None:
    cols = {"q", "docs", "labels", "response"}
    config = column_mapping_config({"query": "q", "retrieved_documents": "docs",
                                    "retrieval_ground_truth": "labels"})
    assert mapped_inputs(cols, config) >= {"query", "retrieved_documents", "retrieval_ground_truth"}
    missing = column_mapping_config({"retrieved_documents": "nope"})
    assert "retrieved_documents" not in mapped_inputs({"retrieved_documents"}, missing)
    target = column_mapping_config({"response": "${target.answer}"})
    assert "response" in mapped_inputs(set(), target)


def test_data_columns(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [{"a": 1}, {"b": 2, "a": 3}]) + "\n")
    assert data_columns(path) == {"a", "b"}
