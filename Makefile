# ember — the two README commands live here: `make serve` and `make test`.
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
DATA_DIR := $(if $(XDG_DATA_HOME),$(XDG_DATA_HOME),$(HOME)/.local/share)/ember
DEMO_MODEL ?= $(DATA_DIR)/demo-llama3-q8_0.gguf
# Seconds per fuzz target (fourteen targets: about five minutes in `make test`); `make fuzz FUZZ_SECONDS=600`
# is the ten-minute soak of each, `make fuzz FUZZ_TARGETS=template_fuzz` runs one.
FUZZ_SECONDS ?= 20
FUZZ_TARGETS ?= gguf_fuzz openai_request_fuzz anthropic_request_fuzz responses_request_fuzz llama_request_fuzz template_fuzz entry_file_fuzz tokenizer_fuzz gbnf_fuzz model_store_fuzz request_framing_fuzz \
  json_schema_fuzz tool_grammar_fuzz tool_call_parser_fuzz
# Seconds the TSan run gives each test binary (`make tsan`).
TSAN_SECONDS ?= 600
# Tests run with their own cache and data homes: a server started by a test must not fill (or read)
# the user's SSD prompt cache or eval DB.
TEST_HOME := $(abspath $(BUILD))/test-home
TEST_ENV := XDG_CACHE_HOME=$(TEST_HOME)/cache XDG_DATA_HOME=$(TEST_HOME)/data

.PHONY: all setup build configure-tests ember test unit e2e fuzz fuzz-build tsan thread-safety serve demo-model clean

all: build

setup:
	@scripts/setup

# A fresh build dir is configured without the test targets (EMBER_TESTS=OFF: no GoogleTest needed), as
# `make serve` does; `make build` / `make test` turn them on in the same dir. The option only adds
# targets, so the libraries and `ember` already built are not rebuilt.
$(BUILD)/CMakeCache.txt:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=OFF $(CMAKE_FLAGS) > /dev/null

configure-tests:
	@grep -qs '^EMBER_TESTS:BOOL=ON$$' $(BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DEMBER_TESTS=ON $(CMAKE_FLAGS) > /dev/null

# Everything: `ember`, every test binary and test tool.
build: configure-tests
	@cmake --build $(BUILD) -j $(JOBS)

ember: $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS) --target ember

demo-model: ember
	@EMBER_BIN=$(abspath $(BUILD))/ember scripts/make-demo-model "$(DEMO_MODEL)"

# Unit tests first (ctest: every module's GoogleTest binary, fast ones first, parity tests with the
# llama.cpp peer among them), then clang's lock check, then the end-to-end tests with real HTTP clients,
# then a bounded fuzz run.
test: setup build
	@rm -rf $(TEST_HOME) && mkdir -p $(TEST_HOME)
	@cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure --no-tests=error -j $(JOBS) --timeout 1200
	@$(MAKE) --no-print-directory thread-safety
	@$(MAKE) --no-print-directory e2e
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

e2e: build
	@mkdir -p $(TEST_HOME)
	@cd tests/e2e && $(TEST_ENV) EMBER_BIN=$(abspath $(BUILD))/ember node --test --test-concurrency=1 --test-timeout=600000 .

# The fuzz build (clang, libFuzzer + ASan + UBSan) in build-fuzz/. tokenizer_fuzz's vocabularies come
# from the plain build's `ember gen-model`, so that binary is built first.
fuzz-build: ember
	@cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMBER_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DEMBER_FUZZ_GEN_MODEL=$(abspath $(BUILD))/ember > /dev/null
	@cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)

# Every target for FUZZ_SECONDS; all run even if one fails, and any crash fails the whole.
fuzz: fuzz-build
	@fail=0; for t in $(FUZZ_TARGETS); do scripts/fuzz $$t $(FUZZ_SECONDS) || fail=1; done; exit $$fail

# The server, cache, cold-tier and thread-pool tests under ThreadSanitizer (build-tsan/).
tsan:
	@BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/tsan $(TSAN_SECONDS)

# clang -Wthread-safety -Werror=thread-safety over every src/ file, syntax only (docs/conventions.md
# "Locks"); about 5 CPU-minutes, so ~2.5 minutes on two cores.
thread-safety:
	@JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/thread-safety

# A first run: installs only what serving needs, builds only `ember`, makes the demo model, serves it;
# one line per phase (scripts/serve).
serve:
	@BUILD=$(BUILD) JOBS=$(JOBS) CMAKE_FLAGS="$(CMAKE_FLAGS)" scripts/serve "$(DEMO_MODEL)"

clean:
	rm -rf $(BUILD) build-fuzz build-tsan build-tsa
