"""Compatibility with azure-ai-evaluation 1.18.10: every snippet under ``snippets/`` run with the
import changed to touchstone, compared with what the real SDK gave (``golden/``, recorded by
``record.py``): the same keys (touchstone may add keys), the same JSON types, the same values (floats
to 1e-9; token counts by type only). See ``tests/compat/README.md``.

``KNOWN_DIFFERENCES`` lists the snippets that differ today, with the exact difference: those run as
strict xfails, so fixing one makes its test fail until its entry is removed here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat.harness import compare, golden_path, load_golden, run_all, snippet_names
from tests.compat.judge import compat_judge
from tests.fakes.openai_server import FakeOpenAIServer

KNOWN_DIFFERENCES: dict[str, str] = {
}
"""Snippet -> what differs (touchstone's value first, then the SDK's). Remove an entry when fixed."""

INTENDED_DIFFERENCES: dict[str, str] = {
    "evaluate_missing_column": "issue 11 keeps touchstone's stricter way: a missing column is an error "
    "before running (as the SDK's exception type), where the SDK scores nothing and returns empty metrics",
}
"""Snippets where touchstone differs on purpose (decided in issue 11): not compared; they must run."""

SDK_COULD_NOT_RUN: dict[str, str] = {
}
"""Snippets whose golden records an SDK failure due to the recording environment, not to the SDK's
behaviour: not compared, only required to run under touchstone."""

NAMES = snippet_names()


@pytest.fixture(scope="module")
def touchstone_results() -> Iterator[dict[str, dict[str, Any]]]:
    """Every snippet run once under touchstone (parallel subprocesses, one fake judge)."""
    server = FakeOpenAIServer(handler=compat_judge).start()
    try:
        yield run_all(NAMES, sys.executable, server.base_url, touchstone=True)
    finally:
        server.stop()


def test_every_snippet_has_a_golden() -> None:
    missing = [n for n in NAMES if not golden_path(n).exists()]
    assert not missing, (
        f"record them: python tests/compat/record.py --sdk-python <sdk python> {' '.join(missing)}"
    )


def test_known_differences_name_existing_snippets() -> None:
    assert set(KNOWN_DIFFERENCES) <= set(NAMES)
    assert set(SDK_COULD_NOT_RUN) <= set(NAMES)
    assert set(INTENDED_DIFFERENCES) <= set(NAMES)


def _crashes(name: str) -> bool:
    """Whether the snippet's documented difference is that touchstone cannot run it at all."""
    return KNOWN_DIFFERENCES.get(name, "").startswith("touchstone crashes")


def _run_params() -> list[Any]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name])] if _crashes(name) else [],
        )
        for name in NAMES
    ]


@pytest.mark.parametrize("name", _run_params())
def test_snippet_runs_under_touchstone(name: str, touchstone_results: dict[str, dict[str, Any]]) -> None:
    """100% of the snippets run (an exception the snippet itself expects is caught inside it)."""
    result = touchstone_results[name]
    golden = load_golden(name)
    if not golden["ok"] and name not in SDK_COULD_NOT_RUN:
        assert not result["ok"] and result["error_type"] == golden["error_type"], result["error"]
        return
    assert result["ok"], f"{name} crashed under touchstone: {result['error']}"


def _params() -> list[Any]:
    params = []
    for name in NAMES:
        marks = []
        if name in KNOWN_DIFFERENCES:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_DIFFERENCES[name]))
        if name in SDK_COULD_NOT_RUN:
            marks.append(pytest.mark.skip(reason=SDK_COULD_NOT_RUN[name]))
        if name in INTENDED_DIFFERENCES:
            marks.append(pytest.mark.skip(reason=INTENDED_DIFFERENCES[name]))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("name", _params())
def test_snippet_matches_sdk(name: str, touchstone_results: dict[str, dict[str, Any]]) -> None:
    problems = compare(load_golden(name), touchstone_results[name])
    hint = " (if this snippet was listed in KNOWN_DIFFERENCES and now passes, remove its entry)"
    assert not problems, f"{name} differs from azure-ai-evaluation 1.18.10:\n" + "\n".join(problems) + hint
