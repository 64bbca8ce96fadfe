# Ringmaster: the commands a person (and CI) runs. `make help` lists them.
SHELL := /bin/bash
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
SANITIZE ?=
JOBS ?= $(shell nproc)
CLUSTER_DIR ?= $(BUILD_DIR)/cluster
REAL_NODES ?= 2
REAL_NODE_GPUS ?= 4
CTEST_ARGS ?=
OPERATOR_BENCH_ARGS ?= --jobs 200,100,500,1000 --workers 8 --gpus-per-node 64 --failures 100
CMAKE_FLAGS ?=

CLUSTER := tests/harness/cluster/cluster.sh
CTEST := ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -j $(JOBS) $(CTEST_ARGS)

.PHONY: help deps build configure wheel format gpu-kit fuzz-build fuzz-smoke fuzz test test-unit test-integration test-e2e test-gpu test-gpu-emulated gpu-carry \
        cluster-up cluster-down cluster-status demo images push bench bench-operator bench-python bench-runtime bench-checkpoint bench-allreduce \
        bench-report soak soak-collective-kills bench-goodput \
        test-sanitize clean

help:
	@echo "make demo          see it work: the operator keeping an elastic job's membership on a local cluster"
	@echo "make test          install deps, build, run every test tier on CPU (unit, integration, e2e)"
	@echo "make deps          install build and test dependencies (idempotent; seconds when present)"
	@echo "make build         configure and build into $(BUILD_DIR)/ (SANITIZE=address|thread)"
	@echo "make test-unit | test-integration | test-e2e | test-gpu | test-gpu-emulated   one tier"
	@echo "make images        build the operator and worker images (docker/) without a daemon: OCI archives in $(BUILD_DIR)/images/"
	@echo "make push REGISTRY=ghcr.io/my-team   push those images to a registry with skopeo (SKOPEO_ARGS for credentials)"
	@echo "make gpu-kit       the GPU suite in $(BUILD_DIR)/gpu-kit (<= 60 MiB): on a GPU machine run its run.sh (tests/gpu_kit/README.md)"
	@echo "make gpu-carry     the kit and this build's NCCL pruned to sm_$(GPU_SM), compressed (<= 60 MiB), for a one-GPU machine whose torch's NCCL is < 2.30"
	@echo "make wheel         build the Python package's wheel into $(BUILD_DIR)/ (ringmaster-*.whl)"
	@echo "make format        format the C++ (clang-format) and Python (ruff) files as make test checks them"
	@echo "make cluster-up    start a local control plane with fake GPU nodes and REAL_NODES (2) real ones: kubelet,"
	@echo "                   containerd, a registry (kubeconfig: $(CLUSTER_DIR)/kubeconfig; root for real nodes)"
	@echo "make cluster-down  stop it (safe to run twice)"
	@echo "make fuzz          run every libFuzzer target for FUZZ_SECONDS (600) each; prints executions and crashes"
	@echo "make test-sanitize unit + integration tiers under ASan+UBSan (build-asan/), the concurrency tests under TSan (build-tsan/)"
	@echo "make soak          random faults against one elastic job training SOAK_MINUTES (30); the exact result, a table of faults"
	@echo "make soak-collective-kills  4 NCCL ranks (CPU emulation), a rank killed inside a collective 200 times: every agreed step checked"
	@echo "make bench-goodput a job killed every 2 minutes for 10, without and with a warm spare: its goodput and lost seconds by phase"
	@echo "make bench         run the benchmarks: bench-operator (OPERATOR_BENCH_ARGS), bench-python (PyTorch recovery, DDP and FSDP2 step, TensorFlow step vs MultiWorkerMirroredStrategy),"
	@echo "                   bench-runtime (worker death -> next allreduce vs bare Gloo; NCCL revoke+shrink emulated), bench-checkpoint (save/restore vs O_DIRECT dd),"
	@echo "                   bench-allreduce (CPU allreduce and fusion vs torch.distributed's Gloo); each writes $(BENCH_DIR)/<bench>.json,"
	@echo "                   then bench-report: one table of every figure against its goal, and plots ($(BENCH_DIR)/summary.md, *.png)"

deps:
	@hack/deps.sh all

# The Python package's native module is built against the project's venv (build/venv, made by make deps).
PYTHON_FLAGS ?= -DPython_EXECUTABLE=$(CURDIR)/build/venv/bin/python

configure:
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DRINGMASTER_SANITIZE=$(SANITIZE) $(PYTHON_FLAGS) $(CMAKE_FLAGS) >/dev/null \
	  || { echo "ringmaster: error: cmake configure failed -- run 'make deps' first, then see the message above"; exit 1; }

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The GPU suite in one folder for a GPU machine with only a driver and torch: carry $(BUILD_DIR)/gpu-kit there and
# run its run.sh (a report lands in $$OUT). tests/gpu_kit/README.md.
gpu-kit: build
	@tests/gpu_kit/make_kit.sh $(BUILD_DIR) $(BUILD_DIR)/gpu-kit

# The kit with this build's NCCL (2.30.7) pruned to GPU_SM's device code, under 60 MiB, for a GPU machine that
# takes 64 MiB of files and whose torch brings an NCCL too old for two ranks on one GPU: carry $(BUILD_DIR)/gpu-carry
# and run its run.sh (tests/gpu_kit/README.md).
GPU_SM ?= 90
gpu-carry: gpu-kit
	@tests/gpu_kit/make_carry.sh $(BUILD_DIR) $(BUILD_DIR)/gpu-carry $(GPU_SM)

# Every CPU tier, the GPU suite on the CPU emulation of NCCL and CUDA included (label `gpu-emulated`).
# The same tests against a real GPU carry the label `gpu` and run with `make test-gpu`.
test: deps build images fuzz-smoke wheel
	$(CTEST) -LE '^gpu$$'

# The libFuzzer targets (clang): built in $(FUZZ_BUILD_DIR) and run briefly on their seed corpora, so
# they keep building and a regression in the parsers they cover shows. `make fuzz` runs each for
# FUZZ_SECONDS (600) on a corpus kept in $(FUZZ_BUILD_DIR)/corpus/ and ends with a table of executions
# and crashes; a failing input lands in $(FUZZ_BUILD_DIR)/artifacts/<target>/.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SMOKE_SECONDS ?= 8
FUZZ_SECONDS ?= 600
FUZZ_CORPORA := \
  fuzz_watch_decoder:kube/fuzz/corpus/watch \
  fuzz_kubeconfig:kube/fuzz/corpus/kubeconfig \
  fuzz_store_wire:worker-runtime/fuzz/corpus/store_wire \
  fuzz_store_server:worker-runtime/fuzz/corpus/store_server \
  fuzz_membership:worker-runtime/fuzz/corpus/membership \
  fuzz_peer_report:worker-runtime/fuzz/corpus/peer_report \
  fuzz_checkpoint_manifest:worker-runtime/fuzz/corpus/checkpoint_manifest \
  fuzz_checkpoint_state:worker-runtime/fuzz/corpus/checkpoint_state \
  fuzz_worker_env:worker-runtime/fuzz/corpus/worker_env
FUZZ_TARGETS := $(foreach pair,$(FUZZ_CORPORA),$(firstword $(subst :, ,$(pair))))

fuzz-build: deps
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGMASTER_FUZZ=ON -DRINGMASTER_PYTHON=OFF >/dev/null \
	  || { echo "ringmaster: error: configuring the fuzz build failed -- run 'make deps' (it installs clang-14)"; exit 1; }
	@cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS) --target $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	@tests/harness/fuzz.sh $(FUZZ_BUILD_DIR) $(FUZZ_SMOKE_SECONDS) $(FUZZ_CORPORA)

fuzz: fuzz-build
	@tests/harness/fuzz.sh --keep-corpus $(FUZZ_BUILD_DIR) $(FUZZ_SECONDS) $(FUZZ_CORPORA)

# The shipped Dockerfiles, built with buildah on a Debian base bootstrapped by mmdebstrap (docker/build-images.sh).
# With `make cluster-up`'s cluster running (its registry's address in $(CLUSTER_DIR)/registry), they are pushed
# there too and its real nodes pull the worker image (cluster.sh push).
images: deps
	@IMAGES_DIR=$(abspath $(BUILD_DIR))/images docker/build-images.sh
	@if [ -s $(CLUSTER_DIR)/registry ] && $(CLUSTER) status --dir $(CLUSTER_DIR) 2>/dev/null | grep -q " ready;"; then \
	  $(CLUSTER) push --dir $(CLUSTER_DIR) --images $(abspath $(BUILD_DIR))/images; fi

# Pushes build/images/*.tar to $(REGISTRY) with skopeo (no daemon): REGISTRY=ghcr.io/my-team; SKOPEO_ARGS
# for credentials or --dest-tls-verify=false (docker/push-images.sh).
push: images
	@IMAGES_DIR=$(abspath $(BUILD_DIR))/images REGISTRY=$(REGISTRY) docker/push-images.sh

# The formatters make test checks (unit.CppFormat.ClangFormat, unit.PythonLint.RuffCheckAndFormat), applied to
# the tree: clang-format on every C++ file, ruff's format and its safe fixes on every Python file.
format: deps
	@git ls-files '*.h' '*.cc' '*.cpp' '*.cu' | xargs build/venv/bin/clang-format -i
	@build/venv/bin/ruff format --quiet . && build/venv/bin/ruff check --quiet --fix .

# The TrainingJob CRD, crds/ringmaster.io_trainingjobs.yaml, from hack/crd/trainingjob.crd.in.yaml (edit that): spec.template
# is inlined from the pinned Kubernetes's OpenAPI document (in the Go module cache after make deps; hack/crd/gen_crd.py).
# Python with PyYAML (Debian's python3-yaml). unit.Crd.GeneratedAndDescribed fails when the CRD is stale.
.PHONY: crd
CRD_PYTHON ?= python3
crd:
	@$(CRD_PYTHON) hack/crd/gen_crd.py

# The Python package as a wheel, build/ringmaster-*.whl (scikit-build-core: a Release build of the native
# module alone against build/venv's Python, the NCCL/CUDA headers of build/deps/cuda; its CMake tree is kept
# in $(BUILD_DIR)/wheel-build so a second run rebuilds only what changed). The wheel depends on no nvidia-*
# wheel: the module loads torch's NCCL and CUDA runtime at run time.
wheel: deps
	@CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) build/venv/bin/python -m pip wheel --no-deps --no-build-isolation \
	  --disable-pip-version-check -w $(BUILD_DIR) \
	  --config-settings=build-dir=$(abspath $(BUILD_DIR))/wheel-build \
	  --config-settings=cmake.define.RINGMASTER_CUDA_PREFIX=$(CURDIR)/build/deps/cuda worker-runtime/python

test-unit: build wheel
	$(CTEST) -L unit

test-integration: build
	$(CTEST) -L integration

test-e2e: build
	$(CTEST) -L e2e

test-gpu: build
	$(CTEST) -L '^gpu$$'

test-gpu-emulated: build
	$(CTEST) -L '^gpu-emulated$$'

# The sanitizers (tests/harness/sanitize.sh): the unit and integration tiers in an ASan+UBSan tree
# ($(ASAN_BUILD_DIR)), then the tests labelled `concurrency` (their code runs threads: the store, the Gloo
# communicator, the async checkpoint writer, the elastic driver, the work queue, informers; see
# ringmaster_add_gtest) in a TSan tree ($(TSAN_BUILD_DIR)). Any report (also from a program a test starts)
# fails the target; LSan/TSan suppress third-party code only (tests/harness/*-suppressions.txt).
# Left out: e2e and gpu; the Python tests (unit.python.*: a sanitized native module needs the sanitizer's
# runtime LD_PRELOADed into python, so these trees build no module, RINGMASTER_PYTHON=OFF); and
# image_checks_test (integration.{Operator,Worker}ImageTest.*: it checks the images `make images` built
# from build/, no sanitized code runs in it) with the fixture that pushes them (cluster.images).
# Not part of make test: two more builds of the tree and slow tests, the better part of an hour on 2 cores.
ASAN_BUILD_DIR ?= build-asan
TSAN_BUILD_DIR ?= build-tsan
test-sanitize:
	@JOBS=$(JOBS) tests/harness/sanitize.sh address $(ASAN_BUILD_DIR) tests-unit,tests-integration \
	  -L 'unit|integration' -E '^unit\.python\.|^integration\.(Operator|Worker)ImageTest\.|^cluster\.images$$' $(CTEST_ARGS)
	@JOBS=$(JOBS) tests/harness/sanitize.sh thread $(TSAN_BUILD_DIR) tests-concurrency -L concurrency $(CTEST_ARGS)

# Minutes of random faults (kill -9, SIGSTOP, partitions, scale, operator and apiserver loss) against one
# elastic job on a cluster of its own (build/soak-cluster, its workers on two real nodes from the images), then
# the exact-result check and a table of the faults survived (tests/soak/elastic_soak_test.cc). Not part of make test.
SOAK_MINUTES ?= 30
soak: deps build images
	@$(CLUSTER) up --dir $(BUILD_DIR)/soak-cluster --fresh --real-nodes 2 --real-node-gpus 8
	@$(CLUSTER) push --dir $(BUILD_DIR)/soak-cluster --images $(BUILD_DIR)/images || \
	  { $(CLUSTER) down --dir $(BUILD_DIR)/soak-cluster; exit 1; }
	@RINGMASTER_TEST_CLUSTER_DIR=$(abspath $(BUILD_DIR))/soak-cluster RINGMASTER_SOAK_MINUTES=$(SOAK_MINUTES) \
	  $(BUILD_DIR)/bin/elastic_soak_test; rc=$$?; $(CLUSTER) down --dir $(BUILD_DIR)/soak-cluster; exit $$rc

# Kills inside collectives, at soak length: the gpu-emulated test elastic_collective_kill_test.cc (20 kills in make
# test) with COLLECTIVE_KILLS (200) workers SIGKILLed inside their gradient's allreduce on the CPU emulation of NCCL and
# CUDA; then the same check (every rank's agreed state at every step is the one-process run's, exact weights, every
# sample once). Not part of make test: 220 kills (10% spare) in 191 s on the shared 2-core machine.
COLLECTIVE_KILLS ?= 200
soak-collective-kills: build
	RINGMASTER_KILLS=$(COLLECTIVE_KILLS) RINGMASTER_EMULATED_GPUS=4 \
	  RINGMASTER_GPU_EMULATION_LIBRARY=$(abspath $(BUILD_DIR))/lib/libringmaster_emulated_gpu.so \
	  $(BUILD_DIR)/bin/runtime_elastic_collective_kill_test

# Goodput as the operator accounts it (status.goodput): a job killed every GOODPUT_KILL_SECONDS for GOODPUT_MINUTES of
# training, without and with a warm spare, on a cluster of its own (tests/soak/goodput_bench.cc). Not part of make test.
GOODPUT_MINUTES ?= 10
GOODPUT_KILL_SECONDS ?= 120
bench-goodput: deps build images
	@$(CLUSTER) up --dir $(BUILD_DIR)/goodput-cluster --fresh --real-nodes 2 --real-node-gpus 8
	@$(CLUSTER) push --dir $(BUILD_DIR)/goodput-cluster --images $(BUILD_DIR)/images || \
	  { $(CLUSTER) down --dir $(BUILD_DIR)/goodput-cluster; exit 1; }
	@RINGMASTER_TEST_CLUSTER_DIR=$(abspath $(BUILD_DIR))/goodput-cluster RINGMASTER_GOODPUT_MINUTES=$(GOODPUT_MINUTES) \
	  RINGMASTER_GOODPUT_KILL_SECONDS=$(GOODPUT_KILL_SECONDS) $(BUILD_DIR)/bin/goodput_bench_test; rc=$$?; \
	  $(CLUSTER) down --dir $(BUILD_DIR)/goodput-cluster; exit $$rc

cluster-up:
	@hack/deps.sh tools
	@$(CLUSTER) up --dir $(CLUSTER_DIR) --real-nodes $(REAL_NODES) --real-node-gpus $(REAL_NODE_GPUS) --kueue --gang

cluster-down:
	@$(CLUSTER) down --dir $(CLUSTER_DIR)

cluster-status:
	@$(CLUSTER) status --dir $(CLUSTER_DIR)

demo: deps build
	@tests/harness/demo.sh

# Benchmarks print figures (with a peer measured in the same run where one exists); they are not tests.
# Each also writes its figures to $(BENCH_DIR)/<name>.json; bench-report (last) turns whatever JSONs are there
# into one table against the goals ($(BENCH_DIR)/summary.md) and plots (bench/README.md: how to read it).
PYTHON_BENCH_TRIALS ?= 10
BENCH_DIR ?= $(BUILD_DIR)/bench
bench: bench-operator bench-python bench-runtime bench-checkpoint bench-allreduce
	@$(MAKE) --no-print-directory bench-report

# Its peer, Kubeflow's training-operator, is built here on first use (hack/deps.sh bench-tools), not by make deps.
bench-operator: build
	@hack/deps.sh bench-tools
	$(BUILD_DIR)/bin/ringmaster-operator-bench $(OPERATOR_BENCH_ARGS) --json $(BENCH_DIR)/operator.json

# Re-renders the report from the JSONs in $(BENCH_DIR) (a bench with none shows as "not run").
bench-report:
	build/venv/bin/python bench/bench_report.py --dir $(BENCH_DIR)

# CPU allreduce: ours vs torch's Gloo process group at 2, 4, 8 ranks, 1M-256M, and fused vs unfused 1,000 x 4K.
bench-allreduce: build
	build/venv/bin/python bench/runtime/allreduce_bench.py --perf $(BUILD_DIR)/bin/ringmaster-perf $(ALLREDUCE_BENCH_ARGS) \
	  --json $(BENCH_DIR)/allreduce.json

# PyTorch: recovery after a kill -9 (ringmaster.torch elastic vs torchrun vs torchft), DDP step time and
# FSDP2-on-a-mesh step time (the "ringmaster" backend vs torch's Gloo), in build/venv.
bench-python: build
	build/venv/bin/python bench/python/recovery_bench.py --trials $(PYTHON_BENCH_TRIALS) \
	  --json $(BENCH_DIR)/python-recovery.json
	build/venv/bin/python bench/python/ddp_step_bench.py --json $(BENCH_DIR)/python-ddp.json
	build/venv/bin/python bench/python/fsdp_step_bench.py --json $(BENCH_DIR)/python-fsdp.json
	build/venv/bin/python bench/python/tf_step_bench.py

# Checkpoint save/restore against dd (O_DIRECT, fsync, page cache dropped) in a temporary directory on the
# disk under CHECKPOINT_BENCH_DIR, removed afterwards (also when interrupted).
CHECKPOINT_BENCH_DIR ?= /tmp
CHECKPOINT_BENCH_ARGS ?= --sizes-mib 256,1024 --reps 5
bench-checkpoint: build
	@dir=$$(mktemp -d $(CHECKPOINT_BENCH_DIR)/ringmaster-checkpoint-bench.XXXXXX) && trap 'rm -rf "$$dir"' EXIT && \
	  $(BUILD_DIR)/bin/ringmaster-checkpoint-bench --dir "$$dir/scratch" $(CHECKPOINT_BENCH_ARGS) \
	    --json $(BENCH_DIR)/checkpoint.json

# Recovery: a worker's death -> the next successful allreduce, by phase, against bare Gloo's connect; then
# the NCCL path (revoke, shrink) beside Gloo at 4 and 8 ranks on the CPU emulation of NCCL and CUDA.
bench-runtime: build
	$(BUILD_DIR)/bin/ringmaster-elastic-bench --trials 20 --json $(BENCH_DIR)/runtime.json
	$(BUILD_DIR)/bin/ringmaster-agreement-bench --sizes 2,4,8 --json $(BENCH_DIR)/agreement.json
	RINGMASTER_EMULATED_GPUS=8 RINGMASTER_GPU_EMULATION_LIBRARY=$(abspath $(BUILD_DIR))/lib/libringmaster_emulated_gpu.so \
	  NCCL_DEBUG=NONE $(BUILD_DIR)/bin/ringmaster-elastic-bench --sizes 4,8 --trials 20 --backends gloo,nccl \
	  --json $(BENCH_DIR)/runtime-nccl-emulated.json

clean:
	rm -rf $(BUILD_DIR)/CMakeFiles $(BUILD_DIR)/bin $(BUILD_DIR)/lib $(BUILD_DIR)/CMakeCache.txt
