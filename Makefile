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

# two workers (pytest-xdist): the machines have 2 cores, and one process took close to CI's
# 90 minutes on a slower one (2026-11-29). A fixed hash seed: set and dict orders, and with
# them the order of the terms tvtv builds, are those of every other run of the suite (with
# tests/conftest.py's fresh Z3 context per test, a test's solver runs do not depend on the
# worker it lands in)
PYTEST := PYTHONHASHSEED=0 $(BIN)/python -m pytest -q -n 2 --durations=40

test: $(STAMP)
	$(PYTEST)

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

bench: $(STAMP)
	$(BIN)/python bench/abstract_vs_ieee.py

docs: $(STAMP)
	$(BIN)/tvtv ops --markdown > docs/semantics.md

clean:
	rm -rf $(VENV) out .pytest_cache
