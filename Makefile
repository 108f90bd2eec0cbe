# One task runner. `make run` starts the product, `make test` runs the tests (what .ci/run calls).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install run test test-fast test-distributed lint bench bench-quality bench-rerank bench-ingest bench-latency bench-soak bench-research bench-research-web bench-where bench-distributed clean-data

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

## run: create the environment, start the embedded database, migrate, load the demo corpus, serve the API
run: install
	$(BIN)/python -m backend demo

## test: lint, types, then the whole suite against a real PostgreSQL + pgvector (embedded unless
## TEST_DATABASE_URL is set). What .ci/run calls.
test: lint
	$(BIN)/python -m pytest -q

## test-fast: skip the tests that run the real local embedding model
test-fast: install
	$(BIN)/python -m pytest -q -m 'not slow and not benchmark'

## test-distributed: the tests of tests/distributed on a throw-away Citus cluster (coordinator + 2 workers
## from the embedded PostgreSQL, Citus built from CITUS_SRC, cached in .data/citus-build). Without a
## Citus source folder or a cached build it prints "skipped" and exits 0. Not part of .ci/run.
test-distributed: install
	$(BIN)/python -m backend cluster test

## lint: ruff (style and format) and mypy over backend/, tests/ and bench/
lint: install
	$(BIN)/ruff check backend tests bench
	$(BIN)/ruff format --check backend tests bench
	$(BIN)/mypy

bench: bench-quality bench-ingest

bench-latency: install
	$(BIN)/python -m bench.latency --sizes 10000 100000

## bench-soak: the API server under 10 minutes of mixed load; its RSS curve and PostgreSQL connections
bench-soak: install
	$(BIN)/python -m bench.soak --minutes 10 --concurrency 4

bench-quality: install
	$(BIN)/python -m bench.quality --all

## bench-rerank: rerank policies fitted leave-one-dataset-out, the dynamic cut's calibration (issue 12)
bench-rerank: install
	$(BIN)/python -m bench.rerank

bench-ingest: install
	$(BIN)/python -m bench.ingest

## bench-research: deep research on compound questions from the development sets, beside /chat (issue 14)
bench-research: install
	$(BIN)/python -m bench.research --all --compounds 40

## bench-research-web: compound questions answered only from the fake Bocha / Serper / Baike (issue 30)
bench-research-web: install
	$(BIN)/python -m bench.research --web --compounds 40

## bench-distributed: on a running cluster (python -m backend cluster up): retrieval quality against one
## node on the development sets, then router / fan-out latency at 100k chunks (docs/benchmarks.md)
bench-distributed: install
	$(BIN)/python -m bench.distributed --all
	$(BIN)/python -m bench.distributed.latency --size 100000 --shards 8

## bench-where: date filters the WhereBuilder puts on content questions (all false) and on scoping ones
bench-where: install
	$(BIN)/python -m bench.where --show 10

clean-data:
	-$(BIN)/python -m backend db stop
	rm -rf .data
