# air for Python — every set-up step lives here, so a fresh machine needs only `make demo` / `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# AIR_SPEEDUPS=require: the install compiles airstore's C speedups or fails (hatch_build.py);
# `AIR_SPEEDUPS=off make install` installs without them (the pure-Python paths), `auto` with
# them when a compiler is there. The stamp names the mode: another mode reinstalls.
AIR_SPEEDUPS ?= require
STAMP  := $(VENV)/.installed-speedups-$(AIR_SPEEDUPS)
SYSDEPS_STAMP := $(VENV)/.sysdeps
PYTEST_ARGS ?=
# The suite runs on every core (pytest-xdist, -n auto: a worker per core and one more, as a
# worker waits about a quarter of its time on the processes its tests start; tests/_schedule.py);
# a test file stays on one worker (--dist loadfile), so its module fixtures (an OAuth provider, a
# gateway rig) start once. PYTEST_WORKERS=N runs N workers, PYTEST_WORKERS=0 one process.
PYTEST_WORKERS ?= auto

.PHONY: all demo test test-fast lint typecheck typecheck-log pytest install sysdeps wrk bench conformance conformance-gateway clean

all: test

$(BIN)/python:
	@echo "==> creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade --quiet pip

$(STAMP): $(BIN)/python pyproject.toml hatch_build.py airstore/_speedups.c
	@[ "$(AIR_SPEEDUPS)" != require ] || bash scripts/compiler.sh $(BIN)/python
	@echo "==> installing air and its dev tools into $(VENV) (first time takes a minute or two)"
	AIR_SPEEDUPS=$(AIR_SPEEDUPS) $(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	@rm -f $(VENV)/.installed $(VENV)/.installed-speedups-*
	@touch $(STAMP)

install: $(STAMP)

# System packages the tests need: redis-server (RedisStore), chromium + chromedriver (dashboard).
$(SYSDEPS_STAMP): scripts/sysdeps.sh | $(BIN)/python
	@bash scripts/sysdeps.sh
	@touch $(SYSDEPS_STAMP)

sysdeps: $(SYSDEPS_STAMP)

# The OAuth tests' authorization server: oidc-provider under Node 22, from npm, into .oidc/.
OIDC_STAMP := .oidc/.installed
$(OIDC_STAMP): scripts/oidc.sh
	@bash scripts/oidc.sh
	@touch $(OIDC_STAMP)

demo: $(STAMP)
	$(BIN)/air demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# PYTHONDONTWRITEBYTECODE is emptied for the run: with it set, every one of the hundreds of
# processes the suite starts would compile the packages from source again (and each worker
# pytest's rewritten test modules), seconds of CPU in all; the bytecode goes to __pycache__/.
pytest: $(STAMP) $(SYSDEPS_STAMP) $(OIDC_STAMP)
	PYTHONDONTWRITEBYTECODE= AIR_TEST_OIDC=require $(BIN)/python -m pytest -n $(PYTEST_WORKERS) \
		--dist loadfile $(PYTEST_ARGS)

# The inner loop: one package's tests without the slow, browser and Redis ones
# (`make test-fast PKG=airstore`; PKG is a directory under tests/).
PKG ?= airstore
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile tests/$(PKG) \
		-m "not slow and not browser and not redis" $(PYTEST_ARGS)

# `make test`: the installs side by side (pip, apt and npm mostly download), then ruff, then mypy
# beside pytest (mypy keeps one core busy for a while; pytest spends much of its time waiting on
# the servers it starts). `make lint typecheck pytest` is the same, one step after the other.
# mypy's findings are kept in .venv/mypy.log and shown after pytest's, with the verdict last.
test:
	@$(MAKE) --no-print-directory -j3 $(STAMP) $(SYSDEPS_STAMP) $(OIDC_STAMP)
	@$(MAKE) --no-print-directory lint
	@status=0; $(MAKE) --no-print-directory -j2 typecheck-log pytest || status=$$?; \
		echo "==> mypy (run beside pytest):"; cat $(VENV)/mypy.log; exit $$status

typecheck-log: $(STAMP)
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 || { echo "==> mypy found errors (shown after pytest)"; exit 1; }

# wrk drives bench/gateway_bench.py (Debian's package; without it the bench uses its own driver);
# valgrind counts instructions for bench/kv_instructions_bench.py (without it, that bench says so).
WRK_STAMP := $(VENV)/.wrk
$(WRK_STAMP): | $(BIN)/python
	@command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; } \
		|| echo "wrk is not installed: bench/gateway_bench.py uses its built-in driver"
	@command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; } \
		|| echo "valgrind is not installed: bench/kv_instructions_bench.py measures nothing"
	@touch $(WRK_STAMP)

wrk: $(WRK_STAMP)

# Every benchmark program: ours beside the peers, tables with ratios (several minutes in all).
BENCHES := store_bench kv_instructions_bench flush_bench backends_bench mcp_bench meter_bench meter_slo_bench otel_bench dashboard_bench definitions_bench gateway_bench fleet_bench auth_bench auth_http_bench
bench: $(STAMP) $(SYSDEPS_STAMP) $(WRK_STAMP)
	@for b in $(BENCHES); do echo "==> bench/$$b.py"; $(BIN)/python bench/$$b.py || exit 1; done

# The official MCP conformance suites over HTTP, both protocol eras (Node 22 and the suites from
# npm into .conformance/; about half a minute once installed; .ci/run runs it after `test`).
conformance: $(STAMP)
	bash scripts/conformance.sh

# The same suite against `air gateway` in front of examples/conformance_server.py (same baseline).
conformance-gateway: $(STAMP)
	bash scripts/conformance_gateway.sh

clean:
	rm -rf $(VENV) .oidc .mypy_cache .ruff_cache .pytest_cache .hypothesis airstore/_speedups.*.so
