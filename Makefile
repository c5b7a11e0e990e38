# mcpexec — every target installs what it needs first (tests/setup/install.sh is idempotent).
PY := .venv/bin/python
export PATH := $(CURDIR)/.venv/bin:$(PATH)

.PHONY: install test test-unit test-local test-cluster lint bench demo e2e clean

install:
	@bash tests/setup/install.sh

test: install lint
	$(PY) -m pytest -q tests

test-unit: install
	$(PY) -m pytest -q tests -m "not cluster and not sandbox"

test-cluster: install
	$(PY) -m pytest -q tests -m cluster

lint: install
	$(PY) -m ruff check mcpexec controller gateway runtime tests
	$(PY) -m ruff format --check mcpexec controller gateway runtime tests
	$(PY) -m mypy mcpexec controller gateway runtime

bench: install
	$(PY) -m tests.bench

demo: install
	.venv/bin/mcpexec run examples/direct-code.yaml

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache tests/mcp-servers/node_modules
