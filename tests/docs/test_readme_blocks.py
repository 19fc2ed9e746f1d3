"""Every code block of the README and of the documentation (its quick start and guides) runs as written.

Each document's blocks run in order, in a clean temporary folder holding only a copy of
``examples/`` (the text tells readers to run them from the clone's root, where ``examples/`` is),
with only a judge endpoint set: ``OPENAI_BASE_URL`` points at the loopback fake judge and
``OPENAI_API_KEY=sk-test``; ``HOME`` is the temporary folder, so the run store and the judge cache
start empty. ``bash``/``sh``/``console`` blocks run with ``bash -e`` (``touchstone`` on ``PATH`` from
this interpreter's environment), ``python`` blocks as scripts of their own. A ``text`` block right
after a block is what that block prints: each of its lines must appear in the output (run ids and
the store's path are read as placeholders).

An HTML comment on the line before a block changes how it is run, and should stay rare:
``<!-- not run: REASON -->`` (installs, the whole test suite), ``<!-- server: URL -->`` (a command
that serves until stopped: it is started, must answer URL with 200, and is then stopped), and
``<!-- skip: REASON -->`` (a block that shows a known bug, named in REASON, to be fixed in the code).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", ROOT / "docs" / "quickstart.md")
"""What a newcomer reads first: every block must run."""
GUIDES = tuple(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "quickstart.md")
"""The guides: held to the same rule, so their examples stay true as the code moves."""
ALL = DOCUMENTS + GUIDES
RUN_LANGS = {"bash": "bash", "sh": "bash", "console": "bash", "python": "python"}
BLOCK_TIMEOUT = 240.0
SERVER_WAIT = 60.0

_FENCE = re.compile(r"^```([\w-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*(not run|server|skip)\s*:\s*(.*?)\s*-->$")
_RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{6}\b")
_STORED_IN = re.compile(r"(stored in|runs in) \S+")


@dataclass
class Block:
    """One fenced block of a document."""

    lang: str
    code: str
    line: int
    marker: tuple[str, str] | None
    expected: str | None = None
    """The ``text`` block that follows it: what it prints."""


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with their markers and expected outputs (a ``text``
    block is what the runnable block before it prints when no other block lies between them)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i, previous = 0, ""
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            previous = lines[i].strip() or previous
            i += 1
            continue
        start, lang, body = i + 1, fence.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        code = "\n".join(body) + "\n"
        last = found[-1] if found else None
        if lang == "text" and last is not None and last.lang in RUN_LANGS and last.expected is None:
            last.expected = code
        marker = _MARKER.match(previous)
        found.append(Block(lang, code, start, (marker.group(1), marker.group(2)) if marker else None))
        previous = "```"
        i += 1
    return found


def _normalise(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = _STORED_IN.sub(r"\1 STORE", _RUN_ID.sub("RUN", line)).rstrip()
        if line:
            out.append(line)
    return out


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def _environment(folder: Path, judge: FakeOpenAIServer) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TOUCHSTONE_", "OPENAI_", "AZURE_", "ANTHROPIC_", "RAY_", "PYTEST"))
    }
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "HOME": str(folder / "home"),
        "OPENAI_BASE_URL": judge.base_url,
        "OPENAI_API_KEY": "sk-test",
        "COLUMNS": "80",
        "PYTHONPATH": "",
    })
    (folder / "home").mkdir()
    return env


def _command(block: Block, folder: Path, index: int) -> list[str]:
    if RUN_LANGS[block.lang] == "python":
        script = folder / f"_block{index}.py"
        script.write_text(block.code, encoding="utf-8")
        return [sys.executable, str(script)]
    script = folder / f"_block{index}.sh"
    script.write_text(block.code, encoding="utf-8")
    return ["bash", "-e", str(script)]


def _serve(command: list[str], url: str, folder: Path, env: dict[str, str]) -> str:
    """Start a serving command, wait until ``url`` answers 200, stop it; a problem is returned."""
    proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    problem = f"{url} did not answer within {SERVER_WAIT:.0f} s"
    deadline = time.monotonic() + SERVER_WAIT
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    problem = "" if reply.status == 200 else f"{url} answered {reply.status}"
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    return f"{problem}\n{output}" if problem else ""


def _run(command: list[str], folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one block; past the timeout its whole process group is stopped (a block's server, say,
    must not outlive the test) and it counts as failed."""
    proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stderr += f"\ntimed out after {BLOCK_TIMEOUT:.0f} s"
        return subprocess.CompletedProcess(command, -9, stdout, stderr)
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def run_document(path: Path, folder: Path, judge: FakeOpenAIServer) -> list[str]:
    """Run every block of ``path`` in order in ``folder``; the problems found."""
    shutil.copytree(ROOT / "examples", folder / "examples")
    env = _environment(folder, judge)
    problems: list[str] = []
    where = path.relative_to(ROOT)
    for index, block in enumerate(blocks(path)):
        if block.lang not in RUN_LANGS or (block.marker and block.marker[0] in ("not run", "skip")):
            continue
        command = _command(block, folder, index)
        if block.marker and block.marker[0] == "server":
            problem = _serve(command, block.marker[1], folder, env)
            if problem:
                problems.append(f"{where}:{block.line}: {problem}")
            continue
        done = _run(command, folder, env)
        if done.returncode != 0:
            problems.append(f"{where}:{block.line}: exit {done.returncode}\n{block.code}"
                            f"--- stdout\n{done.stdout[-3000:]}--- stderr\n{done.stderr[-3000:]}")
            break  # later blocks may build on this one
        if block.expected is not None:
            printed = _normalise(done.stdout)
            missing = [line for line in _normalise(block.expected) if line not in printed]
            if missing:
                problems.append(f"{where}:{block.line}: printed output lacks {missing}\n"
                                f"--- stdout\n{done.stdout[-3000:]}")
    return problems


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_every_block_runs_as_written(path: Path, tmp_path: Path, judge: FakeOpenAIServer) -> None:
    problems = run_document(path, tmp_path, judge)
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_markers_are_rare(path: Path) -> None:
    runnable = [b for b in blocks(path) if b.lang in RUN_LANGS]
    skipped = [b for b in runnable if b.marker and b.marker[0] in ("not run", "skip")]
    assert len(skipped) <= 6, f"{path.name}: {len(skipped)} blocks are not run"
    assert all(b.marker[1] for b in skipped if b.marker), f"{path.name}: a marker without its reason"


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_first_pages_mostly_run(path: Path) -> None:
    runnable = [b for b in blocks(path) if b.lang in RUN_LANGS]
    run = [b for b in runnable if not (b.marker and b.marker[0] in ("not run", "skip"))]
    assert len(run) >= 4 and len(run) > len(runnable) // 2, f"{path.name}: too few blocks are run"


def test_install_hints_name_our_distribution() -> None:
    """No install line names PyPI's ``touchstone`` (another project): ours is ``touchstone-genai``."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    wrong = re.compile(r"pip install[^\n`]*['\" ]touchstone(\[|['\" ]|$)", re.MULTILINE)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not wrong.search(text), f"{page.relative_to(ROOT)} installs another project's touchstone"
