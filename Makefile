# loadcmp: `make test` and `make demo` each set up everything they need (idempotent).
VENV ?= .venv
PY := $(VENV)/bin/python
LOADCMP := $(VENV)/bin/loadcmp

.PHONY: setup images test unit demo bench seeds clean down

setup:
	bash scripts/setup.sh

images: setup
	$(LOADCMP) build

# The whole suite: unit tests, engine tests against in-process servers, Docker
# integration tests on every stack, the report in headless Chromium, and one
# `loadcmp smoke` on all five stacks.
test: images
	$(PY) -m pytest -ra --junitxml=test-artifacts/junit.xml

unit: setup
	$(PY) -m pytest -ra -m "not docker"

demo: images
	$(LOADCMP) run --server nginx --server apache-prefork -c 50,500 -t 10s --warmup 2s --name demo
	@echo "results are in results/ (newest: $$(ls -td results/*/ | head -1))"
	$(LOADCMP) report "$$(ls -td results/*/ | head -1)"

bench: images
	$(PY) bench/compare.py
	$(PY) bench/catalog_speed.py

# The five write-ups within BUDGET (levels and windows cut in proportion): a report of each,
# a summary in results/seeds-<time>/ and docs/seeds.md made from it.
BUDGET ?= 30m
seeds: images
	$(LOADCMP) seeds --budget $(BUDGET)

down:
	$(LOADCMP) down

clean: down
	rm -rf results test-artifacts reports
