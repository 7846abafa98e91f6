# Every target creates the virtualenv and installs the project on first use (and again when
# pyproject.toml changes): `make serve` and `make test` are all a fresh checkout needs.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: install serve test lint typecheck bench conformance

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(INSTALLED)

# The coordinator on 127.0.0.1:9092 (extra options: make serve ARGS='--port 0 --storage memory').
serve: $(INSTALLED)
	$(VENV)/bin/groupcoord serve $(ARGS)

# The whole suite (a subset: make test ARGS='tests/test_offsets.py -x'); pytest's exit status 5
# (no test collected) is a failure with its own message.
# Two workers, whole files per worker (pytest-xdist): most of the suite waits on subprocesses
# and sockets, and serially it outgrew CI's 20 minutes on this machine's 2 cores.
test: $(INSTALLED)
	$(PY) -m pytest -n 2 --dist loadfile $(ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; fi; \
	exit $$status

lint: $(INSTALLED)
	$(VENV)/bin/ruff check src tests benchmarks

typecheck: $(INSTALLED)
	$(VENV)/bin/mypy

bench: $(INSTALLED)
	$(VENV)/bin/groupcoord bench assignors
	$(VENV)/bin/groupcoord bench heartbeats

# librdkafka's own test suite against groupcoord (tests/conformance/librdkafka.py, docs/clients.md):
# librdkafka's source comes from the npm registry (npm pack) and is built once, cached in
# ~/.cache/groupcoord/conformance; each test of the curated list (tests/conformance/suite.py) runs
# on a fresh server, both group protocols, plaintext and a SASL_SSL subset. CI's subset:
# make conformance ARGS='--subset ci'.
conformance: $(INSTALLED)
	$(PY) tests/conformance/librdkafka.py $(ARGS)
