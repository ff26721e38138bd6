# The two commands README promises: `make demo` and `make test`. Everything they need is built
# here from PyPI and npm, so a fresh clone goes green with nothing installed by hand.
PYTHON ?= python3
# Another interpreter's full run: `make test PYTHON=/path/to/python3.13 VENV=.venv-3.13`.
VENV ?= .venv
BIN := $(VENV)/bin
NODE_DIR := tests/e2e/node
WEB_DIR := web
CHROMIUM := /usr/bin/chromium
REDIS_SERVER := /usr/bin/redis-server
# pytest-xdist workers for `make test`. The suite mostly waits (real uvicorn servers, sockets, the
# Node clients, Chromium), so four workers keep two cores busy; each worker starts its own
# session servers (PostgreSQL, Redis, the demo) on ports of their own. TEST_WORKERS=0 runs it in
# one process. Work stealing keeps the slow server tests from ending on one worker alone.
TEST_WORKERS ?= 4

.PHONY: demo web page chromium services test lint unit test-pythons bench clean

# apt-get install the Debian packages $(1): as root, else through sudo; without sudo, print the
# command to run (after the reason $(2)) and fail. Only called once the packages are found missing,
# so a provisioned machine never touches the network.
apt_install = if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y $(1); \
	elif command -v sudo >/dev/null 2>&1; then \
		sudo apt-get update && sudo apt-get install -y $(1); \
	else echo "$(2):" "sudo apt-get update && sudo apt-get install -y $(1)" >&2; exit 1; fi

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The demo page (demo_app.py serves web/dist at /).
$(WEB_DIR)/node_modules/.installed: $(WEB_DIR)/package.json $(WEB_DIR)/package-lock.json
	cd $(WEB_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(WEB_DIR)/dist/.built: $(WEB_DIR)/node_modules/.installed $(WEB_DIR)/index.html $(WEB_DIR)/vite.config.js $(shell find $(WEB_DIR)/src -type f)
	cd $(WEB_DIR) && npm run build
	touch $@

web: $(WEB_DIR)/dist/.built

# The page `adk-asgi web` serves, shipped inside the package (and so in a wheel, and in a git
# install, with no Node): the build of web/, committed under adk_asgi/web/page/. After a change
# in web/, `make page` and commit it; tests/packaging checks it is the current build.
PAGE_DIR := adk_asgi/web/page
page: web
	rm -rf $(PAGE_DIR) && mkdir -p $(PAGE_DIR)
	cp -r $(WEB_DIR)/dist/index.html $(WEB_DIR)/dist/assets $(PAGE_DIR)/

# The Next.js example (examples/nextjs), built for tests/recipes/test_nextjs_app.py. `next build`
# fixes the address its rewrite forwards /agent/... to (AGENT_URL), so the test's agent listens on
# a fixed port, outside Linux's ephemeral range (32768-60999): the test reads it from the build.
NEXTJS_DIR := examples/nextjs
NEXTJS_AGENT_URL ?= http://127.0.0.1:18731
.PHONY: nextjs

$(NEXTJS_DIR)/node_modules/.installed: $(NEXTJS_DIR)/package.json $(NEXTJS_DIR)/package-lock.json
	cd $(NEXTJS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(NEXTJS_DIR)/.next/.built: $(NEXTJS_DIR)/node_modules/.installed $(NEXTJS_DIR)/next.config.js $(NEXTJS_DIR)/tsconfig.json $(shell find $(NEXTJS_DIR)/app -type f)
	cd $(NEXTJS_DIR) && NEXT_TELEMETRY_DISABLED=1 AGENT_URL=$(NEXTJS_AGENT_URL) npm run build
	touch $@

nextjs: $(NEXTJS_DIR)/.next/.built

# Debian's Chromium, for the browser tests (tests/browser): apt-get as root, else through sudo.
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		$(call apt_install,chromium,The browser tests need Debian's Chromium at $(CHROMIUM)); \
	fi

# Debian's PostgreSQL and Redis, for the tests against real backing services (the session starts
# throw-away servers on loopback from these binaries, tests/backing_services.py): installed like
# chromium when missing.
services:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -x $(REDIS_SERVER) ] || missing="$$missing redis-server"; \
	missing="$${missing# }"; \
	if [ -n "$$missing" ]; then \
		$(call apt_install,$$missing,The backing-service tests need Debian's $$missing); \
	fi

demo: $(BIN)/.installed web
	$(BIN)/python demo_app.py

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict adk_asgi bench

test: $(BIN)/.installed $(NODE_DIR)/node_modules/.installed web nextjs chromium services lint
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal

unit: $(BIN)/.installed
	$(BIN)/pytest -q tests/unit

# The other Pythons the package claims (requires-python >= 3.11; $(VENV) is the one `make test`
# runs on): the quick tests under each, in a venv of its own (.venv-3.12, .venv-3.13) that uv
# makes in seconds where pip takes over a minute. An interpreter is looked for as python3.N on
# PATH (a pyenv shim that is not active fails and is passed over), in pyenv's versions, then in
# /usr/bin and /usr/local/bin; one that is not there is skipped with a line saying so.
OTHER_PYTHONS ?= 3.12 3.13
QUICK_TESTS ?= tests/unit
PYENV_ROOT ?= $(HOME)/.pyenv

test-pythons: $(BIN)/.installed
	@for v in $(OTHER_PYTHONS); do \
		py=""; \
		for c in python$$v $(PYENV_ROOT)/versions/$$v.*/bin/python$$v /usr/bin/python$$v \
				/usr/local/bin/python$$v; do \
			if "$$c" -c '' >/dev/null 2>&1; then py="$$c"; break; fi; \
		done; \
		if [ -z "$$py" ]; then \
			echo "test-pythons: SKIPPED Python $$v: no python$$v on PATH, in $(PYENV_ROOT)/versions or /usr/bin"; \
			continue; \
		fi; \
		venv=.venv-$$v; \
		if [ ! -f $$venv/.installed ] || [ pyproject.toml -nt $$venv/.installed ]; then \
			$(BIN)/uv venv --quiet --allow-existing --no-python-downloads --python "$$py" $$venv \
			&& VIRTUAL_ENV=$$venv $(BIN)/uv pip install --quiet -e '.[dev]' \
			&& touch $$venv/.installed || exit 1; \
		fi; \
		echo "test-pythons: $$($$venv/bin/python --version) ($$py): $(QUICK_TESTS)"; \
		$$venv/bin/pytest -q $(QUICK_TESTS) || exit 1; \
	done

# The bench extra: the peers measured side by side (ag-ui-adk), not a dependency of the package.
bench: $(BIN)/.installed
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench.throughput
	$(BIN)/python -m bench.live
	$(BIN)/python -m bench.concurrency
	$(BIN)/python -m bench.live_concurrency
	$(BIN)/python -m bench.scale_out
	$(BIN)/python -m bench.session_reads
	$(BIN)/python -m bench.sse_layers

clean:
	rm -rf $(VENV) .venv-3.* $(NODE_DIR)/node_modules $(WEB_DIR)/node_modules $(WEB_DIR)/dist $(NEXTJS_DIR)/node_modules $(NEXTJS_DIR)/.next .pytest_cache .mypy_cache .ruff_cache
