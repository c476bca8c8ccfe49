# The two commands: `make run` and `make test`. Both set up what they need first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test faults install lint bench clean

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
	$(MAKE) --no-print-directory lint
	$(BIN)/pytest

# The fault suite (tests/faults/): real `maka serve` replicas on a private PostgreSQL cluster,
# killed and starved under traffic. Minutes, not seconds; not part of `make test`.
faults: $(STAMP)
	$(BIN)/pytest -m faults tests/faults

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .maka .pytest_cache .mypy_cache .ruff_cache
