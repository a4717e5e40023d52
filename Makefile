# air for Python — every set-up step lives here, so a fresh machine needs only `make demo` / `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SYSDEPS_STAMP := $(VENV)/.sysdeps
PYTEST_ARGS ?=

.PHONY: all demo test lint typecheck pytest install sysdeps bench conformance clean

all: test

$(BIN)/python:
	@echo "==> creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip

$(STAMP): $(BIN)/python pyproject.toml
	@echo "==> installing air and its dev tools into $(VENV) (first time takes a minute or two)"
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# System packages the tests need: redis-server (RedisStore), chromium + chromedriver (dashboard).
$(SYSDEPS_STAMP): | $(BIN)/python
	@bash scripts/sysdeps.sh
	@touch $(SYSDEPS_STAMP)

sysdeps: $(SYSDEPS_STAMP)

demo: $(STAMP)
	$(BIN)/air demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) $(SYSDEPS_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# Every benchmark program: ours beside the peers, tables with ratios (several minutes in all).
BENCHES := store_bench backends_bench mcp_bench meter_bench otel_bench dashboard_bench definitions_bench
bench: $(STAMP) $(SYSDEPS_STAMP)
	@command -v wrk >/dev/null 2>&1 || apt-get install -y -qq wrk >/dev/null 2>&1 || echo "no wrk: the HTTP bench uses its built-in keep-alive driver"
	@for b in $(BENCHES); do echo "==> bench/$$b.py"; $(BIN)/python bench/$$b.py || exit 1; done

# The official MCP conformance suite over HTTP (Node 22 from npm into .conformance/; not in `test`).
conformance: $(STAMP)
	bash scripts/conformance.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
