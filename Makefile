# Every target creates/reuses the local virtual environment and installs what it needs,
# so `make demo` and `make test` work on a fresh clone of a machine with only Python.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# Extras each stamp installs; a stamp is remade when pyproject.toml changes.
STAMP_BASE := $(VENV)/.stamp-base
STAMP_TEST := $(VENV)/.stamp-test
STAMP_DEV := $(VENV)/.stamp-dev
STAMP_BENCH := $(VENV)/.stamp-bench
PIP := $(PY) -m pip --disable-pip-version-check -q
# PyTorch's CPU build, installed before the [torch] extra so that extra installs nothing
# more (a bare "torch" resolves to a CUDA build of several GB). torch 2.13.0 is a CPU
# wheel on this machine's disk (pip's find-links); elsewhere pass e.g.
#   make test TORCH_CPU="torch --index-url https://download.pytorch.org/whl/cpu"
TORCH_CPU ?= torch==2.13.0

.PHONY: demo test test-fast bench bench-remote lint typecheck format clean venv

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(STAMP_BASE): pyproject.toml | $(PY)
	$(PIP) install -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(PY)
	$(PIP) install $(TORCH_CPU)
	$(PIP) install -e '.[test]'
	touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	$(PIP) install $(TORCH_CPU)
	$(PIP) install -e '.[test,dev]'
	touch $@

$(STAMP_BENCH): pyproject.toml | $(PY)
	$(PIP) install $(TORCH_CPU)
	$(PIP) install -e '.[bench]'
	touch $@

venv: $(STAMP_DEV)

demo: $(STAMP_BASE)
	$(PY) -m tfrecord_engine.demo --out demo-out

# The whole suite, TensorFlow differential, PyTorch, Grain and JAX tests included (they must not be skipped).
test: $(STAMP_TEST)
	TFE_REQUIRE_TF=1 TFE_REQUIRE_FRAMEWORKS=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} $(PY) -m pytest \
		--cov=tfrecord_engine --cov-branch --cov-report=term-missing:skip-covered

test-fast: $(STAMP_TEST)
	HYPOTHESIS_PROFILE=dev $(PY) -m pytest -x -q

bench: $(STAMP_BENCH)
	$(PY) -m benchmarks.run

# Remote epochs against a real S3 server (SeaweedFS on loopback, from the test extra).
bench-remote: $(STAMP_TEST)
	$(PY) -m benchmarks.bench_remote

lint: $(STAMP_DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP_DEV)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) demo-out bench-data .pytest_cache .mypy_cache .ruff_cache .hypothesis
