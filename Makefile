# The two commands: `make run` and `make test`. Both set up what they need first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test faults soak install lint bench bench-search clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/maka serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

test: $(STAMP)
	@scripts/ensure-postgres $(BIN)/python
	@scripts/ensure-dovecot
	@scripts/ensure-chromium
	@scripts/ensure-tesseract
	@scripts/ensure-ffmpeg
	$(MAKE) --no-print-directory lint
	$(BIN)/pytest -n 2

# The fault suite (tests/faults/): real `maka serve` replicas on a private PostgreSQL cluster,
# killed and starved under traffic. Minutes, not seconds; not part of `make test`.
faults: $(STAMP)
	@scripts/ensure-postgres $(BIN)/python  # installs the server binaries the private cluster needs
	$(BIN)/pytest -m faults tests/faults

# The soak (tests/soak/soak.py): one `maka serve` on the embedded SQLite default under mixed
# webhook traffic for SOAK_MINUTES; a line a minute; fails on any loss, duplicate or RSS growth
# over 10% after warm-up. Bounded; not part of `make test`. SOAK_ARGS='--database postgresql'.
SOAK_MINUTES ?= 10
SOAK_ARGS ?=
soak: $(STAMP)
	$(BIN)/python -m tests.soak.soak --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

# Every benchmark in turn, then one table of its figures beside their baselines
# (benchmarks/run_all.py). `make bench BENCH_ARGS=--quick` for a smoke run. sync.py wants
# PostgreSQL (MAKA_BENCH_DATABASE_URL, default the test server).
# growth.py's largest history: SIZE=1m (default 100k; long on 2 cores), and its database:
# GROWTH_DATABASE=postgresql (default sqlite). `make bench BENCH_ARGS=growth` runs it alone.
BENCH_ARGS ?=
SIZE ?=
GROWTH_DATABASE ?=
bench: $(STAMP)
	@MAKA_TEST_DATABASE_URL="$${MAKA_BENCH_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}" \
		scripts/ensure-postgres $(BIN)/python
	MAKA_GROWTH_SIZE=$(SIZE) MAKA_GROWTH_DATABASE=$(GROWTH_DATABASE) \
		$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

# The search path beside bare tantivy in one run (benchmarks/search_ratio.py): the query,
# WorkHub evidence and scoped memory search, each a ratio with a 2x target; exits 1 past it.
bench-search: $(STAMP)
	$(BIN)/python benchmarks/search_ratio.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .maka .pytest_cache .mypy_cache .ruff_cache
