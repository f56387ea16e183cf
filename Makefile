# The two commands (README.md):   make test   |   make tune
# Everything else here is a step of those two.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PRESET ?= default
BUILD_DIR ?= build
export CUDACXX ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
JOBS ?= $(shell nproc)
# make tune MODEL=path/to/config.json [TP=2]: that model's shapes instead of the catalogue's (docs/shapes.md)
MODEL ?=
TP ?= 1

.PHONY: help deps configure build test tune check-gpu clean

help:
	@echo "make test   install dependencies, configure, build everything (all kernel variants), run all tests"
	@echo "make tune   on a GPU machine: build, benchmark every variant, select winners, rewrite tuned headers and reports"
	@echo "            KTUNE_PROFILE=1 make tune also profiles S and the winners with CUPTI (tools/tune.sh profile)"
	@echo "            make tune MODEL=path/to/config.json [TP=n]: a Hugging Face model's own shapes, merged into the tables"
	@echo "make deps | configure | build | clean"

deps:
	@tools/install-deps.sh

configure: deps
	cmake --preset $(PRESET)

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	ctest --preset $(PRESET) -j $(JOBS)

# Checked first, before anything is installed or built.
check-gpu:
	@tools/check-gpu.sh

# tools/tune.sh builds with failure isolation (a shard that fails to compile is reported and left
# out), so tune depends on configure, not on build.
tune: check-gpu
	@$(MAKE) --no-print-directory configure
	KTUNE_MODEL="$(MODEL)" KTUNE_TP="$(TP)" tools/tune.sh all

clean:
	rm -rf $(BUILD_DIR) build-debug
