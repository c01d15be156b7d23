# IOP developer entry points. Everything installs itself: only Node.js 20+ and a C++ toolchain are assumed.
SHELL := /bin/bash
.DEFAULT_GOAL := all

PNPM_VERSION := 10.34.9
TOOLS_DIR := $(CURDIR)/.tools
PNPM := $(TOOLS_DIR)/node_modules/.bin/pnpm
# turbo looks pnpm up on PATH.
export PATH := $(TOOLS_DIR)/node_modules/.bin:$(PATH)

export TURBO_TELEMETRY_DISABLED := 1
export TURBO_NO_UPDATE_NOTIFIER := 1
export DO_NOT_TRACK := 1
# Native addons compile from source here; build them against the local Node headers when present.
ifneq ($(wildcard /usr/include/node/node.h),)
export npm_config_nodedir ?= /usr
endif

.PHONY: all install compile build gen check-gen typecheck lint knip fmt format-check test test-unit test-one test-e2e run clean \
        build-edge pack-edge pack-node-target

all: compile

$(PNPM):
	@echo "==> installing pnpm $(PNPM_VERSION) into .tools/"
	@mkdir -p $(TOOLS_DIR)
	npm install --prefix $(TOOLS_DIR) --no-save --no-audit --no-fund --loglevel=error pnpm@$(PNPM_VERSION)

node_modules/.modules.yaml: $(PNPM) pnpm-lock.yaml package.json $(wildcard apps/*/package.json packages/*/package.json)
	@echo "==> pnpm install"
	$(PNPM) install --frozen-lockfile
	@touch $@

install: node_modules/.modules.yaml

# Compile every package (TypeScript → dist/). `make build` is the release archive, below.
compile: install
	@echo "==> compile"
	$(PNPM) exec turbo run build

# Release build (needs the network once: Node 22 runtimes and node-pty prebuilt packages via `npm pack`, cached
# in .cache/release). Tools pinned here, installed into .tools/release, not into the workspace lockfile.
RELEASE_TOOLS := $(TOOLS_DIR)/release/node_modules/.bin/postject
NODE_TARGETS ?= linux-amd64 linux-arm64 darwin-amd64 darwin-arm64 windows-amd64 windows-arm64
NODE_TARGET ?=

$(RELEASE_TOOLS):
	@echo "==> installing release tools (esbuild, postject) into .tools/release/"
	npm install --prefix $(TOOLS_DIR)/release --no-save --no-audit --no-fund --loglevel=error esbuild@0.28.2 postject@1.0.0-alpha.6

# dist/iop-edge-<version>-linux-<arch>.tar.gz: the edge executable, edge.example.yaml, artifacts/ (NODE_TARGETS).
build: compile $(RELEASE_TOOLS)
	node scripts/release/build.mjs all --targets "$(NODE_TARGETS)"

# dist/release/iop-edge only (then `make pack-edge`).
build-edge: compile $(RELEASE_TOOLS)
	node scripts/release/build.mjs edge

# One node artifact into dist/release/artifacts (then `make pack-edge`).
pack-node-target: compile $(RELEASE_TOOLS)
	@test -n "$(NODE_TARGET)" || { echo "usage: make pack-node-target NODE_TARGET=<os>-<arch>"; exit 2; }
	node scripts/release/build.mjs node-target $(NODE_TARGET)

# The edge archive from dist/release/iop-edge and every artifact in dist/release/artifacts.
pack-edge: $(RELEASE_TOOLS)
	node scripts/release/build.mjs pack-edge

gen: install
	$(PNPM) --filter @iop/proto gen

# The committed generated code must match what the .proto sources produce.
check-gen: install
	@echo "==> check generated protobuf code"
	$(PNPM) --filter @iop/proto gen
	@git diff --exit-code -- packages/proto/src/gen || { echo "packages/proto is stale: run 'make gen' and commit"; exit 1; }

typecheck: compile
	@echo "==> typecheck"
	$(PNPM) exec turbo run typecheck

lint: compile
	@echo "==> eslint"
	$(PNPM) exec eslint --max-warnings=0 .

# Unused files, exports and dependencies (knip.json says where each workspace starts).
knip: install
	@echo "==> knip"
	$(PNPM) exec knip --no-progress

format-check: install
	@echo "==> prettier --check"
	$(PNPM) exec prettier --check .

fmt: install
	$(PNPM) exec prettier --write .

# Every package's jest suites, then the benchmark's own tests (node's runner); one summary line for both.
test-unit: compile
	@echo "==> tests"
	@mkdir -p .cache
	@set -o pipefail; status=0; \
	  $(PNPM) exec turbo run test --concurrency=1 --continue 2>&1 | tee .cache/test-unit.log || status=$$?; \
	  echo "==> bench tests (node --test bench/lib/)"; \
	  node --test bench/lib/ 2>&1 | tee -a .cache/test-unit.log || status=$$?; \
	  node scripts/test-summary.mjs .cache/test-unit.log; exit $$status

# One test file: make test-one FILE=apps/edge/src/service/run-supervisor.test.ts (jest in the file's package).
test-one: compile
	@test -n "$(FILE)" || { echo "usage: make test-one FILE=<path to a .test.ts file>"; exit 2; }
	@package=$$(echo "$(FILE)" | sed -E 's#^((apps|packages)/[^/]+)/.*#\1#'); \
	  test -f "$$package/package.json" || { echo "$(FILE) is not in apps/* or packages/*"; exit 2; }; \
	  cd "$$package" && node --experimental-vm-modules --no-warnings=ExperimentalWarning \
	    $(CURDIR)/node_modules/jest/bin/jest.js "$(CURDIR)/$(FILE)"

test: check-gen typecheck lint knip format-check test-unit

test-e2e: compile
	bash scripts/e2e-smoke.sh

run: compile
	bash scripts/run-local.sh

clean:
	rm -rf apps/*/dist packages/*/dist .turbo apps/*/.turbo packages/*/.turbo
