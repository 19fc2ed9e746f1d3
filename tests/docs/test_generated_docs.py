"""The generated reference pages match the code they are generated from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_docs", module)
    spec.loader.exec_module(module)
    return module


def test_committed_reference_pages_equal_a_fresh_generation() -> None:
    gen_docs = _gen_docs()
    for path, text in gen_docs.pages().items():
        assert path.exists(), f"{path} is missing: run python scripts/gen_docs.py"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run python scripts/gen_docs.py"


def test_every_metric_and_command_has_a_section() -> None:
    from touchstone.cli.app import COMMANDS
    from touchstone.evaluators import registry

    gen_docs = _gen_docs()
    metrics = gen_docs.METRICS_PAGE.read_text(encoding="utf-8")
    cli = gen_docs.CLI_PAGE.read_text(encoding="utf-8")
    for name in registry.available():
        assert f"\n## {name}\n" in metrics
    for entry in COMMANDS:
        assert f"\n## touchstone {entry.name}\n" in cli
    assert "--judge-model" in cli and "--show-estimate" in cli
