"""Running compatibility snippets and comparing their results (used by ``record.py`` and the test).

A snippet is a script under ``snippets/`` written against ``azure.ai.evaluation``. It runs in a
subprocess with its own empty working folder, with ``COMPAT_BASE_URL`` / ``COMPAT_API_KEY`` pointing
at the fake judge, offline, and prints its result through ``_emit.emit`` as the last
``COMPAT-JSON:`` line. Under touchstone the same text runs with ``azure.ai.evaluation`` replaced by
``touchstone`` (:func:`rewrite`).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SNIPPETS = HERE / "snippets"
GOLDEN = HERE / "golden"
PREFIX = "COMPAT-JSON: "
API_KEY = "sk-compat-not-a-real-key-0000"
TIMEOUT_S = 120.0

TYPE_ONLY_SUFFIXES = ("prompt_tokens", "completion_tokens", "total_tokens")
"""Keys whose values depend on the exact prompt each tool sends (the fake server counts a quarter of
the prompt's characters as tokens): only their type is compared."""


def snippet_names() -> list[str]:
    """Every snippet's name (file stem), sorted; helper modules start with ``_``."""
    return sorted(p.stem for p in SNIPPETS.glob("*.py") if not p.name.startswith("_"))


def rewrite(source: str) -> str:
    """The snippet's text as a touchstone user would have it: the import changed, nothing else."""
    return source.replace("azure.ai.evaluation", "touchstone")


def _env(base_url: str, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPAT_", "PYTEST_"))}
    env.update(
        {
            "COMPAT_BASE_URL": base_url,
            "COMPAT_API_KEY": API_KEY,
            "PYTHONPATH": str(SNIPPETS),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "TOUCHSTONE_STORE": str(workdir / "store.db"),
            "TOUCHSTONE_CACHE": str(workdir / "cache.db"),
            "PYTHONHASHSEED": "0",
            "PYTHONWARNINGS": "ignore",
        }
    )
    return env


def run_snippet(
    name: str, python: str, base_url: str, *, touchstone: bool, timeout: float = TIMEOUT_S
) -> dict[str, Any]:
    """Run one snippet; ``{"ok", "stdout_json", "error", "error_type"}``."""
    source = (SNIPPETS / f"{name}.py").read_text(encoding="utf-8")
    if touchstone:
        source = rewrite(source)
    with tempfile.TemporaryDirectory(prefix=f"compat-{name}-") as tmp:
        work = Path(tmp)
        script = work / f"{name}.py"
        script.write_text(source, encoding="utf-8")
        try:
            proc = subprocess.run(
                [python, str(script)],
                cwd=work,
                env=_env(base_url, work),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return {
                "ok": False,
                "stdout_json": None,
                "error": f"timed out after {timeout:g} s",
                "error_type": "Timeout",
            }
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(PREFIX)]
    if proc.returncode == 0 and lines:
        return {
            "ok": True,
            "stdout_json": json.loads(lines[-1][len(PREFIX) :]),
            "error": None,
            "error_type": None,
        }
    error_type, message = exception_line(proc.stderr)
    if error_type is None:
        error_type, message = "NoResult", f"exit status {proc.returncode}, no {PREFIX.strip()} line"
    return {"ok": False, "stdout_json": None, "error": message[:500], "error_type": error_type}


def exception_line(stderr: str) -> tuple[str | None, str]:
    """The class name (without module) and the first line of the last traceback's exception."""
    lines = stderr.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last)")]
    if not starts:
        return None, ""
    for ln in lines[starts[-1] + 1 :]:
        if ln and not ln[0].isspace():
            head = ln.partition(":")[0]
            return head.strip().rsplit(".", 1)[-1], ln.strip()
    return None, ""


def dumps_record(record: dict[str, Any]) -> str:
    """A golden record as JSON text with one result leaf per line (readable diffs)."""
    head = {k: v for k, v in record.items() if k != "stdout_json"}
    parts = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(head.items())]
    leaves = record.get("stdout_json")
    if leaves is None:
        parts.append(' "stdout_json": null')
    else:
        inner = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(leaves.items()))
        parts.append(' "stdout_json": {\n' + inner + "\n }")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def run_all(
    names: Iterable[str], python: str, base_url: str, *, touchstone: bool, workers: int | None = None
) -> dict[str, dict[str, Any]]:
    """Run snippets in parallel subprocesses; results by name."""
    names = list(names)
    workers = workers or max(2, min(8, (os.cpu_count() or 2) * 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = pool.map(lambda n: run_snippet(n, python, base_url, touchstone=touchstone), names)
        return dict(zip(names, results, strict=True))


def _same_value(kind: str, expected: Any, actual: Any) -> bool:
    if kind == "float" and isinstance(expected, float) and isinstance(actual, float):
        return math.isclose(expected, actual, rel_tol=0.0, abs_tol=1e-9)
    return bool(expected == actual)


def compare(golden: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """The differences between a golden record and touchstone's, one line each; empty when touchstone
    gives every golden key with the same type and value (extra keys are allowed)."""
    if not golden["ok"]:
        if actual["ok"]:
            return [f"SDK raised {golden['error_type']} ({golden['error']}); touchstone ran"]
        if golden["error_type"] != actual["error_type"]:
            raised = f"touchstone raised {actual['error_type']}: {actual['error']}"
            return [f"SDK raised {golden['error_type']}, {raised}"]
        return []
    if not actual["ok"]:
        return [f"touchstone crashed: {actual['error']}"]
    expected: dict[str, list[Any]] = golden["stdout_json"]
    got: dict[str, list[Any]] = actual["stdout_json"]
    problems: list[str] = []
    for path, (kind, value) in sorted(expected.items()):
        if path not in got:
            problems.append(f"`{path}` missing (SDK: {kind} {value!r})")
            continue
        got_kind, got_value = got[path]
        if got_kind != kind:
            problems.append(f"`{path}` type {got_kind} {got_value!r} vs SDK {kind} {value!r}")
        elif path.endswith(TYPE_ONLY_SUFFIXES):
            continue
        elif not _same_value(kind, value, got_value):
            problems.append(f"`{path}` value {got_value!r} vs SDK {value!r}")
    return problems


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.json"


def load_golden(name: str) -> dict[str, Any]:
    return dict(json.loads(golden_path(name).read_text(encoding="utf-8")))


def main_python() -> str:
    return sys.executable
