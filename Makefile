# Two commands a fresh machine (Python 3.11 only) can run:
#   make check   validate FuseOps on 50 generated graphs (sets up .venv first)
#   make test    run the test suite (sets up .venv first)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.tvtv-installed

.PHONY: setup check test test-fast bench docs clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

check: $(STAMP)
	$(BIN)/tvtv check --pass FuseOps --graphs 50 --seed 0 --json out/fuseops.json

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/abstract_vs_ieee.py

docs: $(STAMP)
	$(BIN)/tvtv ops --markdown > docs/semantics.md

clean:
	rm -rf $(VENV) out .pytest_cache
