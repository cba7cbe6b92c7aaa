# Symplex: environments, C kernels, extension packages, tests, demo and benchmarks.
#
#   make demo       build the demo scenes, solve, bake; writes out/ (.blend, plots, previews)
#   make test       every test: solver and CLI, then the Blender-facing tests under every Blender of the
#                   support matrix (4.2 LTS, 4.5 LTS, 5.0, 5.2 LTS, 5.3) with the built extension
#   make test-fast  the quick developer run: every test marked neither slow nor heavy, under Blender 5.0 only
#   make extension  dist/symplex-<version>-<platform>.zip, one per platform, to install in Blender
#   make bench      the benchmark suite beside its peers (BENCH_ARGS=--quick for a short run)
#
# Pip only. One environment per Blender, each made once and kept until its requirements file changes
# (stamp files). Blender 4.2 - 5.0 run Python 3.11, Blender 5.1+ Python 3.13:
#   .venv    bpy 5.0.1 (Python 3.11) + solver, demo, benchmark and test tools  (requirements.txt)
#   .venv42  bpy 4.2.23 (4.2 LTS, Python 3.11)                                  (requirements-blender42.txt)
#   .venv45  bpy 4.5.15 (4.5 LTS, Python 3.11)                                  (requirements-blender45.txt)
#   .venv52  bpy 5.2.3  (5.2 LTS, Python 3.13)                                  (requirements-blender52.txt)
#   .venv53  bpy 5.3.0  (Python 3.13, numpy 2.5)                                 (requirements-blender53.txt)

SHELL := /bin/bash

# Python 3.11: `python3.11`, else `python3` when that is 3.11. Python 3.13: `python3.13`, else pyenv's.
# Override with PYTHON311=/path/to/python3.11 PYTHON313=/path/to/python3.13 (.ci/run finds both).
PYTHON311 ?= $(shell command -v python3.11 2>/dev/null || \
	(python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null && command -v python3))
PYTHON313 ?= $(shell (python3.13 -c '' 2>/dev/null && command -v python3.13) || \
	ls -d $$(pyenv root 2>/dev/null || echo $$HOME/.pyenv)/versions/3.13*/bin/python3.13 2>/dev/null | tail -n1)

VENV := .venv
PY := $(VENV)/bin/python

# The Blender-facing test environments beside .venv (Blender 5.0): suffix -> the Python it is made from.
BLENDER_ENVS := 42 45 52 53
PYTHON_FOR_42 = $(PYTHON311)
PYTHON_FOR_45 = $(PYTHON311)
PYTHON_FOR_52 = $(PYTHON313)
PYTHON_FOR_53 = $(PYTHON313)
# The tests that need no Blender (the solver and the bridge's bpy-free mapping maths) run once more here:
# numpy 2.x and the SciPy the extension bundles for Python 3.13.
SOLVER_ENV_NUMPY2 := 53
BPY_FREE_TESTS := tests/solver tests/bridge

# C kernels: every addon/solver/native/*.c, compiled to objects in build/ and linked into one library
# that the solver loads with ctypes (plain C ABI, so one build serves every Python).
CC ?= cc
KERNEL_CFLAGS := -O2 -std=c11 -fPIC -Wall -Wextra
KERNEL_DIR := addon/solver/native
KERNEL_SRC := $(wildcard $(KERNEL_DIR)/*.c)
KERNEL_HDR := $(wildcard $(KERNEL_DIR)/*.h)
KERNEL_OBJ := $(patsubst $(KERNEL_DIR)/%.c,build/kernels/%.o,$(KERNEL_SRC))
KERNEL_LIB := $(KERNEL_DIR)/libsymplex_kernels.so

# Tests that need real Blender; they run under .venv (5.0) and every environment in BLENDER_ENVS.
BLENDER_TESTS := tests/blender
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: all venv venvs $(addprefix venv,$(BLENDER_ENVS)) kernels test-fast wheels extension test demo bench clean distclean

all: extension

venv: $(VENV)/.stamp
venvs: venv $(addprefix venv,$(BLENDER_ENVS))
$(addprefix venv,$(BLENDER_ENVS)): venv%: .venv%/.stamp

$(VENV)/.stamp: requirements.txt
	@test -n "$(PYTHON311)" || { echo "error: Python 3.11 not found (install python3.11 or pass PYTHON311=...)" >&2; exit 1; }
	$(PYTHON311) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -r requirements.txt
	@touch $@

.venv%/.stamp: requirements-blender%.txt
	@test -n "$(PYTHON_FOR_$*)" || { echo "error: no Python for .venv$* (see PYTHON311 / PYTHON313 in the Makefile)" >&2; exit 1; }
	rm -rf .venv$*
	$(PYTHON_FOR_$*) -m venv .venv$*
	.venv$*/bin/python -m pip install --disable-pip-version-check -r $<
	@touch $@

kernels: $(if $(KERNEL_SRC),$(KERNEL_LIB))

build/kernels/%.o: $(KERNEL_DIR)/%.c $(KERNEL_HDR)
	@mkdir -p $(@D)
	$(CC) $(KERNEL_CFLAGS) -c $< -o $@

$(KERNEL_LIB): $(KERNEL_OBJ)
	$(CC) -shared -o $@ $^ -lm

# The SciPy wheels listed in blender_manifest.toml, checked against tools/wheels.sha256.
wheels: venv
	$(PY) tools/fetch_wheels.py

extension: venv kernels wheels
	$(PY) tools/build_extension.py --out dist

# Every run always happens, so one CI run reports every failure; the target fails if any did. Every test runs
# under .venv; the Blender environments leave out the tests marked slow (pytest.ini), which repeat on them what
# the faster tests already cover there (long physics runs, the whole demo), to keep the run within CI's time;
# the numpy-2 run of the bpy-free tests also leaves out the heavy ones (at least one test of every module runs
# there: the numpy and SciPy APIs each module calls). The .venv run goes in the foreground; the other
# environments run one after another beside it, single-threaded, on the second core, each into its log in
# build/test-logs, printed when all are done.
TEST_LOGS := build/test-logs

test: venvs kernels extension
	@status=0; rm -rf $(TEST_LOGS); mkdir -p $(TEST_LOGS); \
	( rc=0; \
	  echo ".venv$(SOLVER_ENV_NUMPY2)/bin/python -m pytest $(BPY_FREE_TESTS) -m 'not slow and not heavy' $(PYTEST_ARGS)" \
	    > $(TEST_LOGS)/numpy2.log; \
	  OMP_NUM_THREADS=1 .venv$(SOLVER_ENV_NUMPY2)/bin/python -m pytest -p no:cacheprovider $(BPY_FREE_TESTS) -m 'not slow and not heavy' \
	    $(PYTEST_ARGS) >> $(TEST_LOGS)/numpy2.log 2>&1 || rc=1; \
	  for env in $(BLENDER_ENVS); do \
	    echo ".venv$$env/bin/python -m pytest $(BLENDER_TESTS) -m 'not slow' $(PYTEST_ARGS)" > $(TEST_LOGS)/blender$$env.log; \
	    OMP_NUM_THREADS=1 .venv$$env/bin/python -m pytest -p no:cacheprovider $(BLENDER_TESTS) -m 'not slow' $(PYTEST_ARGS) \
	      >> $(TEST_LOGS)/blender$$env.log 2>&1 || rc=1; \
	  done; \
	  exit $$rc ) & beside=$$!; \
	echo "$(PY) -m pytest tests $(PYTEST_ARGS)"; \
	$(PY) -m pytest tests $(PYTEST_ARGS) || status=1; \
	wait $$beside || status=1; \
	for log in $(TEST_LOGS)/*.log; do echo; echo "== $$log"; cat $$log; done; \
	exit $$status

# Every test marked neither slow nor heavy (pytest.ini), under .venv only: the run to make while working. Each
# test module keeps at least one test here; `make test` runs the heavy tests in every environment.
test-fast: venv kernels
	$(PY) -m pytest tests -m "not slow and not heavy" $(PYTEST_ARGS)

demo: venv kernels
	$(PY) -m addon demo --out out

bench: venv kernels
	$(PY) -m addon bench $(BENCH_ARGS)

# Build outputs only; `distclean` also drops the environments and the downloaded wheels.
clean:
	rm -rf build dist out .pytest_cache $(KERNEL_LIB)
	find . -path './.venv*' -prune -o -name __pycache__ -type d -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV) $(addprefix .venv,$(BLENDER_ENVS)) wheels
