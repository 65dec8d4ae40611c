# Fleet's two entry points. Each recipe first installs what the build needs when it
# is missing, so both work on a fresh Debian machine with a Rust toolchain.

# A persistent target directory outside the checkout keeps builds warm across clones.
CARGO_TARGET_DIR ?= $(HOME)/.cache/fleet-target
export CARGO_TARGET_DIR

SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# clang and libclang: RocksDB's bindings are generated with bindgen.
SYSTEM_PACKAGES := clang libclang-dev

.PHONY: test gate deps bench bench-failover dev demo

# Where `make dev` keeps its fleet (certificates, configs, RocksDB, logs).
DEV_DIR ?= $(HOME)/.cache/fleet-dev

## Runs the demo: a local three-node fleet deliberates, notifies, and survives a failover drill.
demo: deps
	cargo build --workspace --all-targets
	$(CARGO_TARGET_DIR)/debug/fleetctl demo

## Starts a local three-node fleet (beast, 5070, mac) on 127.0.0.1:7100-7105 until Ctrl-C.
dev: deps
	cargo build --workspace --all-targets
	$(CARGO_TARGET_DIR)/debug/fleetctl dev --dir $(DEV_DIR)

## Runs the whole gate: formatting, lints, docs, and every test.
test: deps gate

# The container fault tests (tests/partitions.rs) run where a Docker engine answers,
# and must then pass; without one they say so and are skipped.
FLEET_REQUIRE_DOCKER ?= $(shell docker info >/dev/null 2>&1 && echo 1 || echo 0)
export FLEET_REQUIRE_DOCKER

gate:
	@echo "container fault tests: FLEET_REQUIRE_DOCKER=$(FLEET_REQUIRE_DOCKER)"
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	# Every module's docs build and every link in them resolves: as `cargo doc` shows
	# them (no public page links to a private item), and with the private items too.
	RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps
	RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps --document-private-items
	# The process tests start the fleetd and fleetctl binaries of this build.
	cargo build --workspace --all-targets
	@if cargo nextest --version >/dev/null 2>&1; then \
		cargo nextest run --workspace --no-fail-fast; \
	else \
		cargo test --workspace --no-fail-fast; \
	fi

## Installs missing system packages (Debian/Ubuntu).
deps:
	@missing=""; \
	for package in $(SYSTEM_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# Rounds of the write bench: each starts every system at once and measures each client
# count on each in turn, so Fleet and etcd are compared seconds apart on a host whose
# speed drifts.
FLEET_BENCH_ROUNDS ?= 3
export FLEET_BENCH_ROUNDS

## Measures write latency and throughput beside etcd 3.4, optimised builds (installs etcd-server if missing).
bench: deps
	@command -v etcd >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq etcd-server; }
	# The benches start the fleetd binary of the same (optimised) build.
	cargo build --workspace --release --bins
	cargo bench --workspace --bench write_latency

## Measures failover time (20 kills of the primary) beside etcd 3.4's (20 kills of its leader).
bench-failover: deps
	@command -v etcd >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq etcd-server; }
	cargo build --workspace --release --bins
	cargo bench --workspace --bench failover
