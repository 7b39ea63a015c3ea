# Two commands on a fresh machine with only Node.js and npm: `make dev` and `make test`.
# Bun comes from the npm registry into .tools/ when it is not on the PATH.

BUN_VERSION := 1.4.5
BUN := $(shell command -v bun 2>/dev/null || echo $(CURDIR)/.tools/node_modules/.bin/bun)
# The recipes, and the processes they start (tests spawn `bun`), find that Bun on the PATH.
export PATH := $(dir $(BUN)):$(PATH)

.PHONY: dev reset sdk test test-unit lint format bench start typecheck install clean cli image-check

dev: install
	$(BUN) run src/dev.ts

# Deletes what `make dev` keeps (the embedded database, the development organization and its
# credentials) and nothing else: stop `make dev` first. DATA_DIR as make dev was given it.
DATA_DIR ?= .data
reset:
	rm -rf -- "$(DATA_DIR)"

test: install
	$(BUN) test --timeout 30000

# The tests that need no database (*.unit.test.ts); one that asks for it fails.
test-unit: install
	TEST_DATABASE=none $(BUN) test --timeout 30000 .unit.test.ts

# The floor plan (.dependency-cruiser.cjs, docs/architecture.md) and Biome's lint and format
# checks (biome.jsonc). dependency-cruiser runs on Bun's runtime: it refuses Node.js 20.
lint: install
	$(BUN) --bun node_modules/.bin/depcruise src --config .dependency-cruiser.cjs
	$(BUN) --bun node_modules/.bin/biome check --error-on-warnings .

# Rewrites the code in the project's format.
format: install
	$(BUN) --bun node_modules/.bin/biome format --write .

bench: install
	$(BUN) run test/bench/run.ts

start: install
	$(BUN) run src/index.ts

# The production image built from the Containerfile and run against the machine's PostgreSQL
# (test/image/check.ts; docs/operations.md, "Checking the image"). Installs podman when missing.
image-check: install
	$(BUN) run test/image/check.ts

# The command-line client as one executable (Bun's runtime inside): dist/agent-mail, or CLI_OUT
CLI_OUT ?= dist/agent-mail
cli: install
	$(BUN) build --compile --minify src/cli-client/main.ts --outfile $(CLI_OUT)

# The SDK's types (sdk/src/schema.ts) regenerated from a running `make dev` (on PORT, default 3000)
sdk: install
	$(BUN) sdk/scripts/generate.ts

typecheck: install
	$(BUN) x tsc --noEmit -p .

install: node_modules/.installed

$(CURDIR)/.tools/node_modules/.bin/bun:
	npm install --prefix .tools --no-save --no-audit --no-fund --loglevel=error bun@$(BUN_VERSION)

node_modules/.installed: package.json bun.lock $(wildcard patches/*.patch) | $(BUN)
	$(BUN) install --frozen-lockfile
	@touch $@

clean:
	rm -rf node_modules .tools .data
