# Every target sets up what it needs; `make chat` and `make test` work on a fresh clone.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: the operator chat. Without a reachable model it says how to start one, then shows
# the fleet summary straight from the tool, so a fresh machine still answers something useful.
run: $(STAMP)
	$(BIN)/pumpops db init
	$(BIN)/pumpops ingest
	$(BIN)/pumpops chat || $(BIN)/pumpops tools call assets.get_system_summary

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/registry_bench.py
	$(BIN)/python bench/agent_bench.py
	$(BIN)/python bench/retrieval_bench.py
	$(BIN)/python bench/memory_bench.py
	$(BIN)/python bench/local_model_bench.py
	$(BIN)/python bench/routing_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
