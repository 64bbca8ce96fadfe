# Ringmaster: the commands a person (and CI) runs. `make help` lists them.
SHELL := /bin/bash
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
SANITIZE ?=
JOBS ?= $(shell nproc)
CLUSTER_DIR ?= $(BUILD_DIR)/cluster
CTEST_ARGS ?=
OPERATOR_BENCH_ARGS ?= --jobs 200 --workers 8 --nodes 200 --failures 100
CMAKE_FLAGS ?=

CLUSTER := tests/harness/cluster/cluster.sh
CTEST := ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -j $(JOBS) $(CTEST_ARGS)

.PHONY: help deps build configure fuzz-smoke test test-unit test-integration test-e2e test-gpu \
        cluster-up cluster-down cluster-status demo images bench bench-operator bench-python clean

help:
	@echo "make demo          see it work: the operator keeping an elastic job's membership on a local cluster"
	@echo "make test          install deps, build, run every test tier on CPU (unit, integration, e2e)"
	@echo "make deps          install build and test dependencies (idempotent; seconds when present)"
	@echo "make build         configure and build into $(BUILD_DIR)/ (SANITIZE=address|thread)"
	@echo "make test-unit | test-integration | test-e2e | test-gpu   one tier"
	@echo "make images        build the operator and worker images (docker/) without a daemon: OCI archives in $(BUILD_DIR)/images/"
	@echo "make cluster-up    start a local control plane with fake GPU nodes (kubeconfig: $(CLUSTER_DIR)/kubeconfig)"
	@echo "make cluster-down  stop it (safe to run twice)"
	@echo "make bench         run the benchmarks: bench-operator (OPERATOR_BENCH_ARGS), bench-python (PyTorch recovery, DDP step)"

deps:
	@tests/harness/deps.sh all

# The Python package's native module is built against the project's venv (build/venv, made by make deps).
PYTHON_FLAGS ?= -DPython_EXECUTABLE=$(CURDIR)/build/venv/bin/python

configure:
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DRINGMASTER_SANITIZE=$(SANITIZE) $(PYTHON_FLAGS) $(CMAKE_FLAGS) >/dev/null \
	  || { echo "ringmaster: error: cmake configure failed -- run 'make deps' first, then see the message above"; exit 1; }

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Every CPU tier. GPU tests carry the label `gpu` and run with `make test-gpu` on a machine with a GPU.
test: deps build images fuzz-smoke
	$(CTEST) -LE gpu

# The libFuzzer targets (clang): built in $(FUZZ_BUILD_DIR) and run briefly on their seed corpora, so
# they keep building and a regression in the parsers they cover shows. Longer runs: FUZZ_SECONDS=600.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 10
FUZZ_TARGETS := fuzz_watch_decoder fuzz_kubeconfig
FUZZ_CORPORA := fuzz_watch_decoder:watch fuzz_kubeconfig:kubeconfig
fuzz-smoke: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGMASTER_FUZZ=ON -DRINGMASTER_PYTHON=OFF >/dev/null \
	  || { echo "ringmaster: error: configuring the fuzz build failed -- run 'make deps' (it installs clang-14)"; exit 1; }
	@cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS) --target $(FUZZ_TARGETS)
	@for pair in $(FUZZ_CORPORA); do \
	  t=$${pair%%:*}; work=$$(mktemp -d); cp -r kube/fuzz/corpus/$${pair#*:}/. $$work/; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BUILD_DIR)/bin/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $$work 2>&1 | grep -E "stat::number_of_executed_units|^==[0-9]+==ERROR|^SUMMARY" ; \
	  status=$${PIPESTATUS[0]}; rm -rf $$work; [ "$$status" = 0 ] || { echo "ringmaster: error: $$t found a failure"; exit 1; }; \
	done

# The shipped Dockerfiles, built with buildah on a Debian base bootstrapped by mmdebstrap (docker/build-images.sh).
images: deps
	@IMAGES_DIR=$(abspath $(BUILD_DIR))/images docker/build-images.sh

test-unit: build
	$(CTEST) -L unit

test-integration: build
	$(CTEST) -L integration

test-e2e: build
	$(CTEST) -L e2e

test-gpu: build
	$(CTEST) -L gpu

cluster-up:
	@tests/harness/deps.sh tools
	@$(CLUSTER) up --dir $(CLUSTER_DIR)

cluster-down:
	@$(CLUSTER) down --dir $(CLUSTER_DIR)

cluster-status:
	@$(CLUSTER) status --dir $(CLUSTER_DIR)

demo: deps build
	@tests/harness/demo.sh

# Benchmarks print figures (with a peer measured in the same run where one exists); they are not tests.
PYTHON_BENCH_TRIALS ?= 10
bench: bench-operator bench-python

bench-operator: build
	$(BUILD_DIR)/bin/ringmaster-operator-bench $(OPERATOR_BENCH_ARGS)

# PyTorch: recovery after a kill -9 (ringmaster.torch elastic vs torchrun vs torchft) and DDP step time
# (the "ringmaster" backend vs torch's Gloo), in build/venv.
bench-python: build
	build/venv/bin/python worker-runtime/python/bench/recovery_bench.py --trials $(PYTHON_BENCH_TRIALS)
	build/venv/bin/python worker-runtime/python/bench/ddp_step_bench.py

clean:
	rm -rf $(BUILD_DIR)/CMakeFiles $(BUILD_DIR)/bin $(BUILD_DIR)/lib $(BUILD_DIR)/CMakeCache.txt
