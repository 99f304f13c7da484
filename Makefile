# pgmem entry points. `make demo` and `make test` each work alone on a fresh
# Debian 12/13 machine as root: they depend on `setup`, which is idempotent.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PGMEM := $(VENV)/bin/pgmem
# pip takes torch 2.13.0 (CPU build) from this folder when it exists.
WHEELS := $(wildcard /opt/wheels)
PIP_FLAGS := $(if $(WHEELS),--find-links $(WHEELS),)
# The official MCP Inspector (npm), whose CLI the MCP tests drive.
INSPECTOR := tests/inspector/node_modules/.bin/mcp-inspector

.PHONY: setup postgres citus demo test lint db bench clean

setup: postgres $(VENV)/.installed $(INSPECTOR)

postgres:
	@if [ "$$(id -u)" = 0 ]; then bash scripts/install-postgres.sh >/dev/null; \
	else sudo bash scripts/install-postgres.sh >/dev/null; fi

# Citus from the vendored source, for `pgmem db start --citus` and tests/test_citus.py;
# only on request, so `make demo` stays fast (scripts/install-citus.sh).
citus: postgres
	@if [ "$$(id -u)" = 0 ]; then bash scripts/install-citus.sh; \
	else sudo bash scripts/install-citus.sh; fi

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV) || { apt-get install -y -qq python3-venv && python3 -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	# CPU torch first, so sentence-transformers never pulls a CUDA build.
	$(PY) -m pip install -q $(PIP_FLAGS) "torch==2.13.0"
	$(PY) -m pip install -q $(PIP_FLAGS) -e ".[local,dev,mcp,langgraph]"
	@touch $@

$(INSPECTOR): tests/inspector/package.json
	@command -v npm >/dev/null || apt-get install -y -qq nodejs npm
	npm install --prefix tests/inspector --no-package-lock --no-audit --no-fund --silent
	@touch $@

db: setup
	$(PGMEM) db start

demo: setup
	$(PGMEM) demo

test: setup
	$(VENV)/bin/pytest

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: setup
	$(PGMEM) bench

clean:
	-$(PGMEM) db stop
	rm -rf $(VENV) .pgmem
