"""The runtime hierarchy is one level deep (docs/design.md, "The runtime hierarchy"):
every runtime's class overrides each of the base's methods at most once between itself and
``Runtime``, the hooks are few, and the peers plug in without overriding SEER's."""

from __future__ import annotations

import inspect

import seer
from seer.runtime import Runtime
from seer.sched import RUNTIMES, SeerRuntime

#: The base's hooks: what a runtime may override (docs/design.md lists them).
HOOKS = {"_make_push", "_push_externals", "_clear_events", "_run", "_pending", "_outputs",
         "_resize_threads", "_restart_threads", "_stop_threads", "stats"}


def overrides(cls: type) -> dict[str, list[str]]:
    """Each of ``Runtime``'s attributes that a class between ``cls`` and ``Runtime``
    defines again -> those classes' names."""
    below = [c for c in cls.__mro__ if c is not Runtime and issubclass(c, Runtime)]
    found: dict[str, list[str]] = {}
    for name, _ in inspect.getmembers(Runtime):
        if name.startswith("__") or name in ("_abc_impl", "name", "parallel", "stpa"):
            continue
        owners = [c.__name__ for c in below if name in vars(c)]
        if owners:
            found[name] = owners
    return found


def test_every_runtime_overrides_each_hook_at_most_once():
    deep = {}
    for name in sorted(RUNTIMES):
        for method, owners in overrides(RUNTIMES[name]).items():
            if len(owners) > 1:
                deep[f"{name}.{method}"] = owners
    assert deep == {}


def test_runtimes_override_only_the_hooks():
    others = {f"{name}.{method}" for name in sorted(RUNTIMES)
              for method in overrides(RUNTIMES[name]) if method not in HOOKS}
    assert others == set()
    # and the base says so: the hooks are documented in its module docstring
    doc = inspect.getmodule(Runtime).__doc__
    assert all(f"``{hook}" in doc for hook in HOOKS)


def test_the_peers_built_on_seers_runtime_override_nothing():
    for name in ("static", "static-block", "seer-ms"):
        cls = RUNTIMES[name]
        assert cls.__mro__[1] is SeerRuntime
        assert not any(callable(v) or isinstance(v, property)
                       for k, v in vars(cls).items()
                       if not k.startswith(("__", "default_"))), name


def test_a_deeper_override_is_caught():
    class Deeper(SeerRuntime):
        name = "deeper"

        def _run(self, t_end):  # SeerRuntime overrides it already
            super()._run(t_end)

    assert overrides(Deeper)["_run"] == ["Deeper", "SeerRuntime"]


def test_moved_names_keep_working():
    import warnings

    assert seer.StaticRuntime is RUNTIMES["static"]
    assert seer.sched.OptimisticRuntime is RUNTIMES["optimistic"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert seer.DualQueueRuntime is SeerRuntime
        from seer.sched.dual_queue import DualQueueRuntime
        assert DualQueueRuntime is SeerRuntime
    assert [w.category for w in caught] == [DeprecationWarning, DeprecationWarning]


def test_the_merged_layers_say_where_their_work_went():
    import pytest

    with pytest.raises(AttributeError, match="parallel"):
        seer.sched.ThreadedRuntime  # noqa: B018
    with pytest.raises(AttributeError, match="EntityEvents"):
        seer.sched.WindowedRuntime  # noqa: B018


def test_the_registry_loads_its_providers_once_for_many_threads():
    import threading

    from seer.testing import RandomModel

    errors = []

    def build(kind):
        try:
            seer.make_runtime(RandomModel(5), kind, threads=2).close()
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=build, args=(k,))
               for k in ("static", "optimistic", "global", "executor")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_moved_modules_still_import_with_a_warning():
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('error')\n"
            "for old, new in __import__('seer.sched').sched.MOVED_MODULES.items():\n"
            "    try:\n"
            "        __import__(old)\n"
            "    except DeprecationWarning as w:\n"
            "        assert new in str(w), w\n"
            "    else:\n"
            "        raise SystemExit(f'{old}: no warning')\n"
            "warnings.simplefilter('ignore')\n"
            "import sys, seer.sched.executor, seer.peers.executor\n"
            "assert sys.modules['seer.sched.executor'] is seer.peers.executor\n"
            "from seer.sched.threaded import validate_threads, MAX_THREADS\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
