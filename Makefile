# Symplex: environments, C kernels, extension packages, tests, demo and benchmarks.
#
#   make demo       build the demo scenes, solve, bake; writes out/ (.blend, plots, previews)
#   make test       every test: solver, CLI, and real Blender 5.0 and 4.2 with the built extension
#   make extension  dist/symplex-<version>-<platform>.zip, one per platform, to install in Blender
#   make bench      the benchmark suite beside its peers (BENCH_ARGS=--quick for a short run)
#
# Pip only. Two Python 3.11 environments (Blender's Python), each made once and kept until its
# requirements file changes (stamp files):
#   .venv    bpy 5.0.1 (Blender 5.0) + solver, demo, benchmark and test tools  (requirements.txt)
#   .venv42  bpy 4.2.23 (Blender 4.2 LTS) for the Blender-facing tests         (requirements-blender42.txt)

SHELL := /bin/bash

# Python 3.11: `python3.11`, else `python3` when that is 3.11. Override with PYTHON311=/path/to/python.
PYTHON311 ?= $(shell command -v python3.11 2>/dev/null || \
	(python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null && command -v python3))

VENV := .venv
VENV42 := .venv42
PY := $(VENV)/bin/python
PY42 := $(VENV42)/bin/python

# C kernels: every addon/solver/native/*.c, compiled to objects in build/ and linked into one library
# that the solver loads with ctypes (plain C ABI, so one build serves every Python).
CC ?= cc
KERNEL_CFLAGS := -O2 -std=c11 -fPIC -Wall -Wextra
KERNEL_DIR := addon/solver/native
KERNEL_SRC := $(wildcard $(KERNEL_DIR)/*.c)
KERNEL_HDR := $(wildcard $(KERNEL_DIR)/*.h)
KERNEL_OBJ := $(patsubst $(KERNEL_DIR)/%.c,build/kernels/%.o,$(KERNEL_SRC))
KERNEL_LIB := $(KERNEL_DIR)/libsymplex_kernels.so

# Tests that need real Blender; they run under both .venv (5.0) and .venv42 (4.2).
BLENDER_TESTS := tests/blender
PYTEST_ARGS ?=
BENCH_ARGS ?=

.PHONY: all venv venv42 kernels wheels extension test demo bench clean distclean

all: extension

venv: $(VENV)/.stamp
venv42: $(VENV42)/.stamp

$(VENV)/.stamp: requirements.txt
	@test -n "$(PYTHON311)" || { echo "error: Python 3.11 not found (install python3.11 or pass PYTHON311=...)" >&2; exit 1; }
	$(PYTHON311) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV42)/.stamp: requirements-blender42.txt
	@test -n "$(PYTHON311)" || { echo "error: Python 3.11 not found (install python3.11 or pass PYTHON311=...)" >&2; exit 1; }
	$(PYTHON311) -m venv $(VENV42)
	$(PY42) -m pip install --disable-pip-version-check -r requirements-blender42.txt
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

# Both runs always happen, so one CI run reports every failure; the target fails if either did.
test: venv venv42 kernels extension
	@status=0; \
	echo "$(PY) -m pytest tests $(PYTEST_ARGS)"; \
	$(PY) -m pytest tests $(PYTEST_ARGS) || status=1; \
	echo "$(PY42) -m pytest $(BLENDER_TESTS) $(PYTEST_ARGS)"; \
	$(PY42) -m pytest $(BLENDER_TESTS) $(PYTEST_ARGS) || status=1; \
	exit $$status

demo: venv kernels
	$(PY) -m addon demo --out out

bench: venv kernels
	$(PY) -m addon bench $(BENCH_ARGS)

# Build outputs only; `distclean` also drops the environments and the downloaded wheels.
clean:
	rm -rf build dist out .pytest_cache $(KERNEL_LIB)
	find . -path ./$(VENV) -prune -o -path ./$(VENV42) -prune -o -name __pycache__ -type d -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV) $(VENV42) wheels
