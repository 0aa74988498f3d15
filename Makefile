# `make demo` and `make test` are the whole set-up on a fresh machine: both create .venv when it
# is missing and install what they need into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/om demo

test: $(STAMP)
	$(PY) -m pytest -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check obsmem tests bench
	$(VENV)/bin/ruff format --check obsmem tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/search_cold.py --observations 10000
	$(PY) bench/context_hot.py --observations 10000
	$(PY) bench/capture_speed.py --mb 100 --files 1000
	$(PY) bench/locomo_recall.py --data ../shared/eval/locomo/locomo_dev.json

clean:
	rm -rf $(VENV) build *.egg-info
