VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install test lint typecheck bench serve

install:
	python3 -m venv $(VENV)
	$(PY) -m pip install -e '.[dev]'

test:
	$(PY) -m pytest

lint:
	$(VENV)/bin/ruff check src tests benchmarks

typecheck:
	$(VENV)/bin/mypy

bench:
	$(PY) -m groupcoord.cli bench assignors
	$(PY) -m groupcoord.cli bench heartbeats
