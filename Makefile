# The habits: `make run` starts everything on a fresh machine, `make test` runs the whole suite.
SHELL := /bin/bash
# The virtualenv's interpreter: a Python whose tarfile has the fix for CVE-2024-6232 (3.12.6+ or 3.11.10+) when one
# is on PATH, else python3.11 (the bundle reader bounds that parse itself: leaderboard/bundles/tar_headers.py).
PATCHED_PY := $(shell for p in python3.12 python3.11; do $$p -c 'import sys; v = sys.version_info[:3]; \
	sys.exit(not ((3, 12, 6) <= v < (3, 13) or (3, 11, 10) <= v < (3, 12)))' 2>/dev/null && echo $$p && break; done)
PY ?= $(or $(PATCHED_PY),python3.11)
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
PG_URL ?= postgresql://postgres@127.0.0.1:5432/test
REDIS_URL_TEST ?= redis://127.0.0.1:6379/15
# Real GPU verdicts shown beside the CPU demo when the file exists (scripts/gpu_e2e.sh exports it; README).
GPU_RESULTS ?= leaderboard/fixtures/h200_e2e.json

.PHONY: install run web worker migrate demo lint format check test test-fast test-sqlite test-postgres services chromium ci reap bench clean

$(BIN)/activate: requirements.txt requirements-dev.txt requirements-gpu.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $(BIN)/activate

# Kernels run as an unprivileged user when the evaluator is root: that user must be able to reach this Python
# (evaluator/harness/sandbox/privileges.py; adds o+x to directories such as /root under pyenv, never read or write).
# Kernels run in Linux namespaces made by bubblewrap (evaluator/harness/sandbox/namespaces.py): installed here where apt works
# (as root); elsewhere install it yourself or set EVALUATOR_REQUIRE_SANDBOX=False for a weaker isolation.
install: $(BIN)/activate
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; }; } || \
		echo "sandbox: bubblewrap (bwrap) is not installed and could not be installed here"
	@$(BIN)/python -m evaluator.harness.sandbox.privileges --open
	@# The command-line client as `.venv/bin/kbv` (pyproject.toml packages only client/; no download)
	@$(BIN)/pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "kbv: client not installed"
	@$(BIN)/python -m evaluator.harness.sandbox.namespaces  # fails when this checkout cannot run a kernel in the sandbox

migrate: install
	DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py migrate --noinput
	DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py createcachetable  # throttle counts (no CACHE_URL)

demo: migrate
	DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py load_demo
	@if [ -n "$(KERNELBENCH)" ]; then \
		DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py import_problems "$(KERNELBENCH)" && \
		for sweep in baselines-h200-lead; do \
			DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py import_baselines \
				benchmarks/results/$$sweep.jsonl --hardware h200 2>/dev/null || exit 1; done; \
		for sweep in baselines-h200-compile-sample baselines-h200-compile-rest; do \
			DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py import_baselines \
				benchmarks/results/$$sweep.jsonl --hardware h200 --precisions compile 2>/dev/null || exit 1; done; fi
	@if [ -f "$(GPU_RESULTS)" ]; then \
		DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py load_gpu_results "$(GPU_RESULTS)"; fi

# Wheels for a GPU machine without network (scripts/gpu_e2e.sh installs from them): requirements.txt minus torch,
# for that machine's Python (3.12, manylinux x86_64), binary only. The folder travels with the tree: keep it small.
WHEELS_PY ?= 3.12
wheels:
	grep -v -i '^torch' requirements.txt > $(VENV)/requirements-wheels.txt
	$(BIN)/pip download -q -d wheels -r $(VENV)/requirements-wheels.txt --only-binary=:all: --python-version $(WHEELS_PY) \
		--implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 --platform manylinux1_x86_64
	@size=$$(du -sm wheels | cut -f1); echo "wheels/: $$(ls wheels | wc -l) files, $$size MiB"; \
		if [ $$size -gt 55 ]; then echo "wheels/ is over 55 MiB" >&2; exit 1; fi

# The product end to end on this machine (issue 20): OUT=folder for the record and the results fixture.
gpu-e2e:
	bash scripts/gpu_e2e.sh $${OUT:-var/gpu-e2e} $(GPU_E2E_ARGS)

.PHONY: wheels gpu-e2e

# Web server and one CPU worker on the embedded defaults (SQLite + filesystem broker under var/).
run: demo
	DJANGO_DEBUG=$${DJANGO_DEBUG:-True} HOST=$(HOST) PORT=$(PORT) $(BIN)/python scripts/run_all.py

web: install
	DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/python manage.py runserver $(HOST):$(PORT)

worker: install
	DJANGO_DEBUG=$${DJANGO_DEBUG:-True} $(BIN)/celery -A config worker -Q eval-$${EVALUATOR_DEFAULT_HARDWARE:-cpu},eval-$${EVALUATOR_DEFAULT_HARDWARE:-cpu}-rerun,default -c 1 --prefetch-multiplier 1 -l INFO

reap: install
	$(BIN)/python manage.py reap_evaluations

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy  # every body checked, Django/DRF plugins, strict flags for evaluator/harness: pyproject.toml [tool.mypy]

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

check: install
	SECRET_KEY=check $(BIN)/python manage.py check
	SECRET_KEY=check $(BIN)/python manage.py makemigrations --check --dry-run
	SECRET_KEY=check $(BIN)/python manage.py spectacular --validate --fail-on-warn --file var/schema.yml

# Start the local servers the service tests use, if they are down (CI runs on a machine that has them installed).
services:
	@bash scripts/ensure_services.sh

chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# The whole suite on SQLite (with the real Redis/RabbitMQ/worker tests), then again on PostgreSQL.
test: install services chromium lint check test-sqlite test-postgres

test-sqlite: install
	$(BIN)/pytest -q --durations=15  # the slowest tests, to see where the time goes

# The inner loop (about a minute or two): no real harness processes, workers, servers or browser. `make test` before pushing.
test-fast: install
	$(BIN)/pytest -q -m "not slow and not browser and not services"

test-postgres: install
	DATABASE_URL=$(PG_URL) $(BIN)/pytest -q -m "not browser and not slow" \
		--ignore=tests/harness --ignore=tests/redteam  # these two never touch the database

ci: test

bench: install
	@echo "See README 'Performance': benchmarks/*.py, results in benchmarks/results/"

clean:
	rm -rf var/ test-artifacts/
