"""Session-wide checks: with SEER_REQUIRE_NOGIL=1 (CI sets it) the suite refuses to run
unless every project module and every extra imports with the GIL still disabled, and fails
at its end if a test turned the GIL on; both name the extension module that did it
(seer.platform.gil_reenabled_by)."""

from __future__ import annotations

import os
import sys

import pytest

from seer import platform as seer_platform

#: The repository's importable packages: the GIL guard imports every module of them.
#: seer itself names none but its own (docs/architecture.md), so the list lives here.
PROJECT_PACKAGES = ("seer", "workloads")


def pytest_report_header(config: pytest.Config) -> list[str]:
    build = "free-threaded" if seer_platform.free_threaded_build() else "GIL build"
    return [f"seer: Python {sys.version.split()[0]} ({build}), GIL {seer_platform.gil_status()}, "
            f"{seer_platform.cpu_count()} cores"]


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("SEER_REQUIRE_NOGIL") != "1":
        return
    modules = (seer_platform.project_modules(PROJECT_PACKAGES)
               + list(seer_platform.EXTRA_MODULES))
    missing, reenabled = seer_platform.import_and_check_gil(modules)
    problems = []
    if not seer_platform.free_threaded_build():
        problems.append(f"{sys.executable} is not a free-threaded build (need python3.14t)")
    if reenabled:
        # the extension module that did it, which may lie deep below the module imported
        by = seer_platform.gil_reenabled_by()
        problems.append(f"importing {reenabled[0]!r} re-enabled the GIL"
                        + (f" (extension module {by!r})" if by and by != reenabled[0] else ""))
    elif not seer_platform.gil_disabled():  # sys._is_gil_enabled is 3.13+
        problems.append(f"the GIL is {seer_platform.gil_status()}")
    if missing:
        problems.append("could not import: " + "; ".join(missing))
    if problems:
        pytest.exit("SEER_REQUIRE_NOGIL=1: " + " | ".join(problems), returncode=3)
    print(f"\nseer: {len(modules)} modules imported, GIL still disabled: "
          f"sys._is_gil_enabled() = {sys._is_gil_enabled()}")


#: The first test after which the GIL was on (SEER_REQUIRE_NOGIL=1 only).
_gil_turned_on_by: list[str] = []


def _guarding() -> bool:
    return os.environ.get("SEER_REQUIRE_NOGIL") == "1" and seer_platform.free_threaded_build()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # One sys._is_gil_enabled() a test: an import inside a test (torch.optim, say) that
    # turns the GIL on fails the session at its end, naming the test and the module.
    if _guarding() and not _gil_turned_on_by and not seer_platform.gil_disabled():
        _gil_turned_on_by.append(item.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _gil_turned_on_by:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    line = (f"SEER_REQUIRE_NOGIL=1: the GIL was turned on during {_gil_turned_on_by[0]}: "
            f"{seer_platform.gil_status()}")
    if reporter is not None:
        reporter.write_line(line, red=True)
    else:
        print(line, file=sys.stderr)
    session.exitstatus = 3


# -- test tiers (docs/testing.md) -----------------------------------------------------------
# `make test` runs every test; `make test-fast` runs `pytest -m "not slow"
# --hypothesis-profile=fast`. The slow tests are named here, by node id (a directory, a
# file, a test function with all its cases, or one case), each with why and what it cost on
# 2 cores; a parametrised test that is slow for some of its own parameters marks those
# cases where it declares them.
SLOW = {
    "tests/bench": "benchmark tooling, not the runtime",
    "tests/check/test_package.py": "builds the wheel and installs it into a new venv (10 s)",
    "tests/test_newcomer.py": "README's model and commands from the built wheel, outside the "
                              "repository (about 25 s)",
    "tests/check/test_explore.py::test_dpor_reaches_every_outcome_dfs_reaches":
        "DPOR against unbounded DFS on 8 random programs (8 s)",
    "tests/check/test_examples.py::test_chase_lev_as_published_passes_in_weak_mode":
        "every RC11 execution of Lê et al.'s Chase-Lev deque, owner and thief (502 DPOR "
        "schedules, 2 s)",
    "tests/check/test_litmus.py::test_litmus_under_dpor[CoRR2]":
        "four threads on one word under DPOR (1 s)",
    "tests/check/test_litmus.py::test_litmus[CoRR2]":
        "four threads on one word, every outcome of RC11's coherence (4 s)",
    "tests/check/test_queues.py::test_the_structure_passes_in_weak_memory_mode[leq]":
        "8826 schedules in weak-memory mode (12 s)",
    "tests/check/test_queues.py::test_the_structure_passes_in_weak_memory_mode[ring]":
        "21142 schedules in weak-memory mode (35 s)",
    "tests/test_distributed.py": "Dask clusters of worker processes, plain and TLS, killed and "
                                 "restarted (about 60 s)",
    "tests/stpa/test_encoder.py": "trains the STPA encoder with torch (17 s)",
    "tests/examples/test_mappo.py::test_adam_is_torch_optim_adam_bit_for_bit":
        "a child process that imports torch._dynamo and triton for torch.optim.Adam (10 s)",
    "tests/stpa/test_calibrate.py::test_a_calibrated_predictor_is_what_threads_auto_uses":
        "collects a calibration set and retrains the predictor (40 s)",
    "tests/stpa/test_holdout.py": "fresh thread scans at tiny sizes (about 10 s)",
    "tests/stpa/test_cli.py::test_collect_writes_what_it_measured_before_the_budget_ran_out":
        "measures one STPA configuration in a child process (about 4 s)",
    "tests/workloads/test_mpe.py::test_bit_for_bit_with_mpe2_300_steps_100_agents":
        "300 steps x 100 agents beside mpe2 (mpe2 about 100 s, then about 3 s per runtime)",
    "tests/stpa/test_predictor.py::test_evaluation_reports_every_method_on_a_small_dataset":
        "trains and cross-validates every STPA method (29 s)",
    "tests/sched/test_stress.py::test_ten_thousand_steps_on_four_threads": "10 000 steps (61 s)",
    "tests/sched/test_interrupts.py": "Ctrl-C sweeps and storms in child processes sent SIGINT "
                                      "(about 10 min)",
    "tests/sched/test_stress.py::test_keyboard_interrupt_leaves_no_worker_running":
        "Ctrl-C in every runtime (4 s)",
    "tests/sched/test_stress.py::test_handler_error_then_reset_and_a_correct_run":
        "failure and recovery, every runtime (3 s)",
    "tests/sched/test_stress.py::test_a_full_arena_falls_back_without_changing_results":
        "a one-record arena (2 s)",
    "tests/sched/test_faults.py::test_a_second_ctrl_c_returns_from_a_handler_that_never_returns":
        "a child process per runtime, sent SIGINT twice (6 s)",
    "tests/sched/test_faults.py::test_the_executor_peer_gives_up_on_a_stuck_chunk_at_the_second_ctrl_c":
        "a child process sent SIGINT twice (1 s)",
    "tests/sched/test_faults.py::test_the_reported_failure_is_the_one_serial_meets_first":
        "12 failing runs per runtime (4 s)",
    "tests/sched/test_faults.py::test_dropped_runtimes_release_their_threads_without_the_collector":
        "30 runtimes per runtime kind (3 s)",
    "tests/sched/test_faults.py::test_runtimes_dropped_after_a_failed_step_release_their_threads":
        "waits for threads to end (2 s)",
    "tests/sched/test_optimistic.py::test_many_steps_on_four_threads_with_rebinding":
        "400 steps (4 s)",
    "tests/sched/test_optimistic.py::test_periodic_checkpoints_coast_forward_to_the_same_bits":
        "a sweep of checkpoint intervals (2 s)",
    "tests/sched/test_optimistic.py::test_a_slow_thread_forces_cascading_rollbacks_and_results_stay_identical":
        "150 µs busy work per event (1.5 s)",
    "tests/sched/test_optimistic.py::test_the_reported_failure_is_the_one_serial_meets_first":
        "8 failing runs (1 s)",
    "tests/sched/test_equivalence.py::test_corner_models_match_serial_on_each_calendar_layout":
        "every corner and runtime on both layouts (11 s)",
    "tests/workloads/test_pursuit.py::test_bit_for_bit_with_pettingzoo":
        "whole episodes beside PettingZoo (35 s)",
    "tests/workloads/test_pursuit.py::test_every_runtime_and_the_adapter":
        "a whole episode beside PettingZoo per runtime (28 s)",
    "tests/workloads/test_pursuit.py::test_catches_terminations_and_truncations_are_covered":
        "three whole episodes beside PettingZoo (7 s)",
    "tests/interprocess/test_ring.py::test_ring_mpmc_loses_nothing_and_keeps_each_producers_order"
    "[fast-2-2]": "60 000 values through spinning threads: 0.6 s idle, 10 s on a busy machine "
                  "(the public path's case stays, with 4 000)",
    "tests/test_benchmark.py::test_seer_bench_on_a_model_defined_outside_the_repository":
        "seer bench in a subprocess (3 s)",
    "tests/test_benchmark.py::test_seer_bench_times_a_runtime_registered_by_an_imported_module":
        "seer bench in a subprocess (3 s)",
    "tests/examples/test_locality_steal.py::test_the_script_runs_quick":
        "the tutorial script, with its traces and plot (3 s)",
    "tests/examples/test_locality_steal.py::test_bench_runtimes_imports_the_strategy":
        "two benchmark subprocesses (2.5 s)",
}


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own hook loads --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    from hypothesis import settings

    from tests.helpers import FAST_EXAMPLES, FAST_PROFILE

    # print_blob: a failure prints the @reproduce_failure line that replays it
    settings.register_profile(FAST_PROFILE, max_examples=FAST_EXAMPLES, print_blob=True)


def _in(nodeid: str, key: str) -> bool:
    return nodeid == key or nodeid.startswith((key + "/", key + "::", key + "["))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if any(_in(item.nodeid, key) for key in SLOW):
            item.add_marker(slow)
    # A renamed or removed test must not leave the tier silently bigger: every entry
    # names a path that exists, and a test function its collected module defines (a
    # case's parameters are not checked).
    root = config.rootpath
    modules = {item.nodeid.split("::")[0]: getattr(item, "module", None) for item in items}
    for key in SLOW:
        path, _, name = key.partition("::")
        module = modules.get(path)
        if not (root / path).exists() or (
                name and module is not None
                and not hasattr(module, name.split("::")[0].split("[")[0])):
            raise pytest.UsageError(f"tests/conftest.py SLOW names {key!r}, which does "
                                    f"not exist")
