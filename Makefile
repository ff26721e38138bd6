# The two commands README promises: `make demo` and `make test`. Everything they need is built
# here from PyPI and npm, so a fresh clone goes green with nothing installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NODE_DIR := tests/e2e/node

.PHONY: demo test lint unit bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python demo_app.py

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict adk_asgi

test: $(BIN)/.installed $(NODE_DIR)/node_modules/.installed lint
	$(BIN)/pytest -q

unit: $(BIN)/.installed
	$(BIN)/pytest -q tests/unit

bench: $(BIN)/.installed
	$(BIN)/python -m bench.throughput

clean:
	rm -rf $(VENV) $(NODE_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache
