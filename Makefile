# The two commands of README.md. Each bootstraps what is missing (interpreter, .venv).
PY := .venv/bin/python

.PHONY: demo test lint bootstrap clean

bootstrap:
	@scripts/bootstrap.sh >/dev/null

demo: bootstrap
	@.venv/bin/seer demo

test: bootstrap
	@echo "[test] ruff check"
	@$(PY) -m ruff check .
	@echo "[test] pytest"
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "[test] pytest collected no tests (exit 5): that is a failure"; fi; \
	[ $$rc -eq 0 ] || exit $$rc
	@echo "[test] queue tests again, each run on 2 threads at once (pytest-run-parallel)"
	@$(PY) -m pytest -q tests/queues --parallel-threads=2

lint: bootstrap
	@$(PY) -m ruff check .

clean:
	rm -rf .venv .pytest_cache .ruff_cache .hypothesis
