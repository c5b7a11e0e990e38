# mcpexec — every target installs what it needs first (tests/setup/install.sh is idempotent).
PY := .venv/bin/python
export PATH := $(CURDIR)/.venv/bin:$(PATH)

.PHONY: rust-test install install-local install-demo test test-unit test-integration test-sandbox test-cluster crds images e2e faults lint bench demo clean

install:
	@bash tests/setup/install.sh

install-local:
	@bash tests/setup/install.sh local

install-demo:
	@bash tests/setup/install.sh demo

# Every tier, the real single-node cluster (e2e, root) last: it builds its node once (cached by version).
test: install lint rust-test
	$(PY) -m pytest -q tests
	$(PY) -m pytest -q -m e2e tests/e2e

# The PII scanner's Rust unit tests (native/pii-scan/src/*.rs), in the wheel build's target directory.
rust-test:
	PATH="$$PATH:$${CARGO_HOME:-$$HOME/.cargo}/bin" \
	  CARGO_TARGET_DIR="$${MCPEXEC_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/mcpexec}/cargo-target/pii-scan" \
	  cargo test --locked --quiet --manifest-path native/pii-scan/Cargo.toml

# In-process only: starts no process, server or sandbox (tests/unit/conftest.py fails a test that does).
test-unit: install-local rust-test
	$(PY) -m pytest -q tests/unit

# Real Redis, the reference MCP servers (npm, PyPI), the in-process gateway, the runtime, helm template.
test-integration: install-local
	$(PY) -m pytest -q tests/integration

# Real gVisor (runsc, root): `mcpexec run`, the rootfs images.
test-sandbox: install-local
	$(PY) -m pytest -q tests/sandbox

# A real etcd + kube-apiserver + kube-controller-manager (Go-built, cached): the operator, the chart's install.
test-cluster: install
	$(PY) -m pytest -q tests/cluster

# The chart ships a copy of the CRDs (Helm installs a chart's crds/ folder); crds/ is the source.
crds:
	cp crds/*.yaml charts/mcpexec/crds/

images: install-local
	bash images/build-rootfs.sh

# Only the real single-node cluster (containerd, gVisor shim, kubelet, CNI, NetworkPolicy enforcement).
e2e: install
	$(PY) -m pytest -q -m e2e tests/e2e

# The whole fault tier on the e2e node (tests/e2e/faults: pods killed and deleted, Redis cut off and OOM-killed, the
# operator killed through a burst, the kubelet restarted); `make test` and `make e2e` run its CI-sized part.
faults: install
	MCPEXEC_FAULTS=full $(PY) -m pytest -q -m e2e tests/e2e/faults

lint: install-local
	$(PY) -m ruff check mcpexec controller gateway runtime images tests
	$(PY) -m ruff format --check mcpexec controller gateway runtime images tests
	$(PY) -m mypy mcpexec controller gateway runtime
	.venv/bin/lint-imports
	PATH="$$PATH:$${CARGO_HOME:-$$HOME/.cargo}/bin" cargo fmt --check --manifest-path native/pii-scan/Cargo.toml
	PATH="$$PATH:$${CARGO_HOME:-$$HOME/.cargo}/bin" \
	  CARGO_TARGET_DIR="$${MCPEXEC_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/mcpexec}/cargo-target/pii-scan" \
	  cargo clippy --locked --all-targets --manifest-path native/pii-scan/Cargo.toml -- -D warnings

# `make bench` runs every bench; `make bench NAME...` only those (e.g. make bench operator_throughput).
ifeq (bench,$(firstword $(MAKECMDGOALS)))
  BENCH_NAMES := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
  $(eval $(BENCH_NAMES):;@:)
endif
bench: install
	$(PY) -m tests.bench $(BENCH_NAMES)

demo: install-demo
	.venv/bin/mcpexec run examples/direct-code.yaml

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache tests/mcp-servers/node_modules
