# Everything installs into .venv, which the targets create themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint format bench clean check-python check-java

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory check-python
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,notebook]'
	@touch $(STAMP)

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "WQL needs Python 3.11 or newer; found " + sys.version.split()[0])'

check-java:
	@command -v java >/dev/null 2>&1 || { echo "WQL runs on Apache Spark, which needs Java 17 or newer: 'java' is not on PATH."; exit 1; }

demo: $(STAMP) check-java
	$(BIN)/wql run examples/traffic.wql

test: $(STAMP) check-java lint
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check wql tests benchmarks
	$(BIN)/ruff format --check wql tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format wql tests benchmarks
	$(BIN)/ruff check --fix wql tests benchmarks

bench: $(STAMP) check-java
	$(BIN)/python benchmarks/sliding.py
	$(BIN)/python benchmarks/slide_by_tuple.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
