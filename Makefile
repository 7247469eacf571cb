# The two commands of README.md. Each bootstraps what is missing (interpreter, .venv).
PY := .venv/bin/python
GIL_PY := .venv-gil/bin/python

# The quick equivalence subset that `make test` also runs on an ordinary GIL python3
# (scripts/gil-venv.sh), so that a model developed there behaves the same on 3.14t:
# events, model and serial runtime, every runtime against serial at small sizes, the
# misuse and fault scenarios, and the stored cross-interpreter hash (about 1 min).
GIL_TESTS := tests/test_events.py tests/test_model.py tests/test_serial.py \
	tests/test_platform.py tests/test_interpreters.py tests/sched/test_equivalence.py \
	tests/sched/test_faults.py

.PHONY: demo test test-fast test-gil lint bootstrap gil-venv clean

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
	@$(PY) -m pytest -q tests/queues tests/interprocess --parallel-threads=2
	@if [ "$${SEER_GIL_STAGE:-1}" = 0 ]; then echo "[test] GIL-build stage skipped (SEER_GIL_STAGE=0)"; \
	else $(MAKE) --no-print-directory test-gil; fi

# The edit-loop tier (docs/testing.md): every test not marked slow, the property tests at
# the `fast` hypothesis profile (30 examples each); 46 s on 2 idle cores. Everything
# it leaves out still runs in `make test`.
test-fast: bootstrap
	@$(PY) -m pytest -q -m "not slow" --hypothesis-profile=fast $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "[test-fast] pytest collected no tests (exit 5): that is a failure"; fi; \
	[ $$rc -eq 0 ] || exit $$rc

gil-venv:
	@scripts/gil-venv.sh >/dev/null

# The GIL guard (SEER_REQUIRE_NOGIL) is for the free-threaded run above; here the GIL is
# on by design, so it is unset. The one GILWarning is expected and only reported.
test-gil: gil-venv
	@echo "[test] quick equivalence subset on the ordinary GIL build ($(GIL_PY))"
	@env -u SEER_REQUIRE_NOGIL $(GIL_PY) -m pytest -q -p no:cacheprovider $(GIL_TESTS)

lint: bootstrap
	@$(PY) -m ruff check .

clean:
	rm -rf .venv .venv-gil .pytest_cache .ruff_cache .hypothesis
