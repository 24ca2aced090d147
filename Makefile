# Every target sets up what it needs; `make run` and `make test` work on a fresh clone.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run local test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: the operator chat. `pumpops chat` exits 3 when no chat model can answer (no Ollama with the
# model, no usable offline model). On a terminal `make run` then asks whether to install the offline model
# (`make local`: llama.cpp built for this CPU and a 1.1 GB download checked against its SHA-256) and chats
# with it; INSTALL_MODEL=yes installs without asking, INSTALL_MODEL=no never asks. Declined, failed, or
# without a terminal, it shows the fleet summary straight from the tool: a fresh machine still answers.
INSTALL_MODEL ?= ask
run: $(STAMP)
	@case '$(INSTALL_MODEL)' in ask|yes|no) ;; \
		*) echo "INSTALL_MODEL must be ask (the default), yes or no, not '$(INSTALL_MODEL)'." >&2; exit 2 ;; esac
	$(BIN)/pumpops db init
	$(BIN)/pumpops ingest
	@$(BIN)/pumpops chat; code=$$?; [ $$code -eq 3 ] || exit $$code; \
	answer='$(INSTALL_MODEL)'; \
	if [ "$$answer" = ask ]; then \
		answer=no; \
		if [ -t 0 ]; then \
			printf '\nInstall the offline chat model now? It builds llama.cpp for this CPU (about 6 minutes on 2 cores)\n'; \
			printf 'and downloads 1.1 GB, checked against its SHA-256. [y/N] '; \
			read -r answer || answer=no; \
		fi; \
	fi; \
	case "$$answer" in \
		[yY]*) if $(MAKE) --no-print-directory local; then \
				$(BIN)/pumpops chat; code=$$?; [ $$code -eq 3 ] || exit $$code; \
				echo "The offline model is installed but cannot answer here (see above)."; \
			else echo "The offline model could not be installed (see above)."; fi ;; \
		*) echo "To chat, install the offline model (make run INSTALL_MODEL=yes, or make local) or point Ollama.Host at a server (README)." ;; \
	esac; \
	echo "The fleet summary, straight from the tool:"; \
	exec $(BIN)/pumpops tools call assets.get_system_summary

# The offline model (issue #7): the verified GGUF, then llama-cpp-python built from source for this CPU, but
# without AMX, whose tile instructions some hypervisors advertise and then trap (the first prompt batch dies by
# SIGILL); `pumpops model status` runs it once. About 6 minutes on 2 cores. A build that already runs the model
# here (its self-test passes) is kept; LLAMA_CFLAGS given on the command line always rebuilds. The self-test
# runs once either way: in the check that keeps a build, or in the status after a new one.
LLAMA_CFLAGS ?= -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
local: $(STAMP)
	$(BIN)/pumpops model status --no-self-test --json \
		| $(BIN)/python -c "import json, sys; sys.exit(not json.load(sys.stdin)['installed'])" \
		|| $(BIN)/pumpops model install --no-self-test
	@if [ "$(origin LLAMA_CFLAGS)" != "command line" ] && $(BIN)/pumpops model status --json \
		| $(BIN)/python -c "import json, sys; sys.exit(json.load(sys.stdin)['self_test'] != 'ok')"; then \
		echo "llama-cpp-python already runs the model here (its self-test passed): kept (make local LLAMA_CFLAGS='...' rebuilds it)"; \
		$(BIN)/pumpops model status --no-self-test; \
	else \
		set -x; \
		$(BIN)/python -m pip uninstall --quiet --yes llama-cpp-python && \
		CMAKE_ARGS="-DCMAKE_C_FLAGS='$(LLAMA_CFLAGS)' -DCMAKE_CXX_FLAGS='$(LLAMA_CFLAGS)'" \
			$(BIN)/python -m pip install --quiet --no-cache-dir -e '.[local]' && \
		$(BIN)/pumpops model status; \
	fi

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
	$(BIN)/python bench/postgres_bench.py
	$(BIN)/python bench/agent_bench.py
	$(BIN)/python bench/retrieval_bench.py
	$(BIN)/python bench/memory_bench.py
	$(BIN)/python bench/local_model_bench.py
	$(BIN)/python bench/routing_bench.py
	$(BIN)/python bench/import_bench.py
	$(BIN)/python bench/tracing_bench.py
	@command -v mosquitto >/dev/null || test -x /usr/sbin/mosquitto || \
		echo "bench: no mosquitto (Debian: apt-get install mosquitto); the MQTT figures use amqtt, a Python broker"
	$(BIN)/python bench/telemetry_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
