# Blind Spots. `make book` builds the book, `make test` runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-12)
JB := $(BIN)/jupyter-book
CLAIMS := $(CURDIR)/_build/claims

# Test stages run TEST_WORKERS pytest workers (pytest-xdist; a notebook's cells stay on one worker), so
# one notebook's serial parts overlap another's training. Workers share the cores: each kernel keeps one
# torch and one BLAS thread (SHARE_CORES), since threads spinning on busy cores slow training 10-20x.
# TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
ONE_THREAD := BLINDSPOTS_KERNEL_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
SHARE_CORES := $(if $(XDIST),$(ONE_THREAD))

# $(call timed,NAME,COMMAND): run COMMAND, record its wall time in _build/timings/NAME.txt (status page).
timed = mkdir -p _build/timings; start=$$(date +%s); $(2); rc=$$?; \
	echo $$(( $$(date +%s) - start )) > _build/timings/$(1).txt; exit $$rc

.PHONY: help setup browser book test test-unit test-smoke test-nbval test-mutants test-docs test-browser test-gpu full thread-check lab bench clean

help:
	@echo "make book      set up .venv, run every notebook at book scale, build _build/html"
	@echo "make test      set up .venv and run the whole test suite (unit, smoke, nbval, mutants, strict build, browser)"
	@echo "make test-mutants  planted errors: every verification claim must fail under one"
	@echo "make thread-check  after make book: rerun the training chapters with 2 torch threads per seed, compare claims (RECORD=1 commits the result)"
	@echo "make full      every chapter at scale=full into results/full/ (resumes; CHAPTERS=part/NN_name for some, FORCE=1 reruns,"
	@echo "               REPEAT=sse|threads2 repeats a run on another floating-point path into <chapter>_<repeat>.ipynb)"
	@echo "make test-gpu  full-scale notebook runs and book-scale nbval on CUDA"
	@echo "make lab       JupyterLab on notebooks/"
	@echo "make bench     print the benchmarks' measured ratios"

setup: $(STAMP) browser

# Headless Chromium for the browser test, from Debian's packages when missing and installable (root
# and apt-get); otherwise the browser test skips and says why. Nothing downloads a browser at run time.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium and chromium-driver (Debian) for the browser test"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) \
	    >/dev/null 2>&1 || echo "chromium could not be installed: the browser test will skip"; \
	else echo "no chromium, and no root apt-get to install it: the browser test will skip"; fi

# The venv is rebuilt when pyproject.toml changes (its hash names the stamp).
$(STAMP): pyproject.toml
	@$(call timed,setup,test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) && \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[cluster]')
	rm -f $(VENV)/.installed-*
	touch $@

# What the planted errors depend on: the code, the mutants, the notebooks and the claims the build recorded
# (run records excluded: they hold timings). make book reruns them only when this hash changes.
MUTANT_INPUTS = find src tests/mutants notebooks $(CLAIMS) -type f \( -name '*.py' -o -name '*.ipynb' -o -name '*.json' \) \
	! -name _run.json -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16

# Notebooks execute through jupyter-cache; blindspots.sphinxext clears the cache when src/ changes.
# The mutation tests then plant errors against the claims just recorded, and a second (cached,
# seconds) build puts their score into the verification report.
book: $(STAMP)
	BLINDSPOTS_CLAIMS_DIR=$(CLAIMS) $(JB) build . --builder html
	@inputs=$$($(MUTANT_INPUTS)); \
	if [ -f _build/mutants/summary.json ] && [ "$$(cat _build/mutants/.inputs 2>/dev/null)" = "$$inputs" ]; then \
	  echo "planted errors: code, notebooks and recorded claims unchanged since their last run; its score stands"; \
	else $(MAKE) test-mutants && echo "$$inputs" > _build/mutants/.inputs; fi
	BLINDSPOTS_CLAIMS_DIR=$(CLAIMS) $(JB) build . --builder html
	@echo "Open _build/html/index.html"

test: $(STAMP) browser
	$(MAKE) test-unit test-smoke test-nbval test-mutants test-docs test-browser

test-unit: $(STAMP)
	@$(call timed,test-unit,$(SHARE_CORES) $(BIN)/pytest tests --ignore=tests/notebooks --ignore=tests/mutants --ignore=tests/browser -q $(XDIST))

# Each notebook once at smoke scale (papermill), with the toc and environment checks.
test-smoke: $(STAMP)
	@$(call timed,test-smoke,$(SHARE_CORES) $(BIN)/pytest tests/notebooks -q -m "not gpu" $(XDIST) --durations=10)

# Each committed notebook once at book scale; claims land in _build/claims for the report.
test-nbval: $(STAMP)
	@$(call timed,test-nbval,$(SHARE_CORES) BLINDSPOTS_CLAIMS_DIR=$(CLAIMS) $(BIN)/pytest -q -p no:cacheprovider --nbval-lax \
	  --nbval-sanitize-with tests/notebooks/sanitize.cfg --ignore-glob="*/.ipynb_checkpoints/*" $(XDIST) \
	  --durations=30 notebooks)

# Planted errors (tests/mutants): each verification claim recorded by the book-scale run must be
# killed by one, at smoke, mutant or book scale; the score lands in the verification report.
# They run one per core, so each keeps one thread (ONE_THREAD) and runs its seeds in its own process, one
# after another (BLINDSPOTS_SEED_JOBS=1: the same numbers, no second process per core).
test-mutants: $(STAMP)
	@$(call timed,test-mutants,$(ONE_THREAD) BLINDSPOTS_SEED_JOBS=1 BLINDSPOTS_CLAIMS_DIR=$(CLAIMS) $(BIN)/pytest tests/mutants -q -p no:cacheprovider)

# Strict build (-W -n): broken references or citations fail. Notebooks were just run by
# nbval, so this build renders their committed outputs instead of running them again.
test-docs: $(STAMP)
	BLINDSPOTS_EXECUTE=off BLINDSPOTS_CLAIMS_DIR=$(CLAIMS) $(JB) build . --builder html -W -n --keep-going

# Paper scale, on CUDA when present: results/full/<part>/<chapter>.ipynb, saved cell by cell; a rerun
# resumes at the first chapter not complete. Commit the results: the book's appendix renders them.
full: $(STAMP)
	$(BIN)/python -m blindspots.fullscale $(if $(FORCE),--force) $(if $(REPEAT),--repeat $(REPEAT)) $(CHAPTERS)

# Training chapters again with two torch threads per seed (one seed at a time), claims compared with
# the one-thread records of `make book`; the status page shows the result after the next build.
# RECORD=1 also writes results/thread-check.json, the committed record that builds elsewhere show.
thread-check: $(STAMP)
	$(BIN)/python tests/thread_check.py $(if $(RECORD),--record)

# Every page of the book just built (by test-docs or make book) in headless Chromium, as a reader sees
# it; screenshots of each chapter's first screen land in _build/screenshots/.
test-browser: $(STAMP)
	@$(call timed,test-browser,$(BIN)/pytest tests/browser -q -p no:cacheprovider -rs)

test-gpu: $(STAMP)
	$(BIN)/pytest tests/notebooks -q -m gpu
	BLINDSPOTS_DEVICE=cpu BLINDSPOTS_CLAIMS_DIR=$(CURDIR)/_build/claims-gpu $(BIN)/pytest -q -p no:cacheprovider --nbval-lax \
	  --nbval-sanitize-with tests/notebooks/sanitize.cfg --ignore-glob="*/.ipynb_checkpoints/*" notebooks

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf _build
