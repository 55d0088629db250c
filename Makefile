# The README's two commands: `make demo` and `make check`; and `make bench`.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
# make fuzz: seconds per fuzz target; make check runs each CHECK_FUZZ_SECONDS
FUZZ_SECONDS ?= 600
CHECK_FUZZ_SECONDS ?= 30
JOBS       ?= $(shell nproc)
PYTEST     ?= python3 -m pytest
CMAKE_FLAGS ?= -DFMX_WERROR=ON
# make bench: Debian's python3 has python3-matplotlib (a pyenv python3 may not)
BENCH_PY   ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
REPS       ?= 3
IMPI_VENV  ?= /opt/fmx-bench/impi
OMPI5_VENV ?= /opt/fmx-bench/ompi5
MPICH_VENV ?= /opt/fmx-bench/mpich
# Tests and benches ask nothing on the host's own interfaces: no discovery
# broadcast (only namespaces the tests make carry traffic; test_net turns
# it on inside them).
export FMX_NET_DISCOVER_MS ?= 0
MPI_VENVS   = IMPI_VENV=$(IMPI_VENV) OMPI5_VENV=$(OMPI5_VENV) MPICH_VENV=$(MPICH_VENV)

.PHONY: all deps build build-asan build-tsan build-fuzz demo check check-layers check-unit check-system clean \
        bench bench-deps check-bench fuzz check-fuzz package-deps check-package

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_FLAGS) -DFMX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)

build-tsan: deps
	cmake -S . -B $(TSAN_BUILD) $(CMAKE_FLAGS) -DFMX_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(TSAN_BUILD) -j$(JOBS)

# libFuzzer targets (tests/fuzz): clang, ASan+UBSan, every library file instrumented.
build-fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DFMX_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_targets

# Long runs (FUZZ_SECONDS per target); the corpus stays in $(FUZZ_BUILD)/corpus.
fuzz: build-fuzz
	sh scripts/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

check-fuzz: build-fuzz
	sh scripts/run-fuzz.sh $(FUZZ_BUILD) $(CHECK_FUZZ_SECONDS)

demo: build
	./$(BUILD)/fmx_info
	./$(BUILD)/fmx_perf pingpong --sizes 0,8,64,1K,4K,16K,64K,256K,1M,4M,16M,64M

# Plain build: unit + system tests; ASan+UBSan build: the same again;
# TSan build: the unit tests (the threaded ones are what it is for).
check: check-layers build build-asan build-tsan bench-deps
	$(MAKE) --no-print-directory check-unit check-system BUILD=$(BUILD)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) --no-print-directory check-unit check-system BUILD=$(ASAN_BUILD)
	TSAN_OPTIONS=halt_on_error=1 $(MAKE) --no-print-directory check-unit BUILD=$(TSAN_BUILD)
	$(MAKE) --no-print-directory check-fuzz
	$(MAKE) --no-print-directory check-bench
	$(MAKE) --no-print-directory check-package

# The include arrows between layers (written in the script).
check-layers:
	python3 scripts/check-layers.py

check-unit:
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

check-system:
	FMX_BUILD_DIR=$(abspath $(BUILD)) $(MPI_VENVS) $(PYTEST) -q tests/system

# Peer comparison (bench/run.py): fmx against Open MPI, MPICH, UCX, libfabric
# shm and Intel MPI, interleaved. QUICK=1: one short rep under BUILD/bench-quick,
# checked (every configuration ran or is skipped with a reason), docs untouched.
bench-deps:
	@$(MPI_VENVS) sh scripts/install-bench-deps.sh

bench: build bench-deps
	$(BENCH_PY) bench/run.py --build $(BUILD) --impi $(IMPI_VENV) --ompi5 $(OMPI5_VENV) --mpich $(MPICH_VENV) \
	  --reps $(REPS) \
	  $(if $(filter-out 0,$(QUICK)),--quick) $(if $(filter-out 0,$(CHECK)),--check)
	$(BENCH_PY) bench/net.py --build $(BUILD) --reps $(REPS) $(if $(filter-out 0,$(QUICK)),--quick)
	$(BENCH_PY) bench/apps.py --build $(BUILD) --impi $(IMPI_VENV) --mpich $(MPICH_VENV) --reps $(REPS) \
	  $(if $(filter-out 0,$(QUICK)),--quick)
	$(BENCH_PY) bench/incast.py --build $(BUILD) --reps $(REPS) $(if $(filter-out 0,$(QUICK)),--quick)
	$(BENCH_PY) bench/incast.py --uplink --senders 2,4 --build $(BUILD) --reps $(REPS) \
	  $(if $(filter-out 0,$(QUICK)),--quick)
	$(BENCH_PY) bench/crowd.py --build $(BUILD) --reps $(REPS) $(if $(filter-out 0,$(QUICK)),--quick)
	$(BENCH_PY) bench/scale.py --build $(BUILD) --reps $(REPS) $(if $(filter-out 0,$(QUICK)),--quick)
	$(BENCH_PY) bench/sim.py --build $(BUILD) $(if $(filter-out 0,$(QUICK)),--quick)

check-bench:
	$(MAKE) --no-print-directory bench QUICK=1

# Installed the ways sites install it (scripts/check-package.sh): the Debian
# packages built, lintian-clean, installed, used with nothing set, purged;
# EasyBuild's easyconfig built and its module loaded with Lmod; the Spack
# recipe against a stand-in of Spack's API. As root.
package-deps: deps
	@sh scripts/apt-install-missing.sh package dpkg-dev debhelper fakeroot lintian lmod man-db python3-venv

check-package: package-deps
	sh scripts/check-package.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
