"""Loose inputs refused by name on every runtime: event kinds, state dtypes, ``trace=``,
errors whose ``str`` fails, action mappings an override would drop, and what ``step``
means where the model sees it."""

import numpy as np
import pytest

import seer
from seer.sched import RUNTIMES

KINDS = sorted(RUNTIMES)


def make(model, kind, **kwargs):
    return seer.make_runtime(model, kind, **({} if kind == "serial" else {"threads": 2}),
                             **kwargs)


class Emitter(seer.Model):
    """Entity 0 emits ``kind_to_emit`` to itself on its first event."""

    kinds = ("go", "next")
    fields = {"x": ((), np.float64)}  # noqa: RUF012
    action_kind = "go"

    def __init__(self, kind_to_emit):
        super().__init__(3)
        self.kind_to_emit = kind_to_emit

    def on_go(self, ctx, event):
        ctx.emit(ctx.id, 0.1, self.kind_to_emit)

    def on_next(self, ctx, event):
        ctx.row.x += 1.0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [1.0, True, np.int64(1), None])
def test_emit_takes_only_kind_names_and_int_indices(kind, bad):
    with make(Emitter(bad), kind) as rt:
        rt.reset(0)
        with pytest.raises(seer.UnknownKindError, match=r"emitted unknown event kind"):
            rt.step({0: 1})
    with make(Emitter(1), kind) as rt:  # the int index itself is fine
        rt.reset(0)
        rt.step({0: 1})
        assert rt.state.x[0] == 1.0


def test_action_kind_true_is_not_kind_1():
    class TrueKind(Emitter):
        def action_events(self, actions):
            return [(0, True, a) for a in actions.values()]

    with seer.SerialRuntime(TrueKind("next")) as rt:
        rt.reset(0)
        with pytest.raises(seer.ModelError, match=r"action event kind True is not a kind"):
            rt.step({0: 1})
        rt.step({})  # refused before anything changed
        assert rt.step_index == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["M8[s]", "m8[ms]", "V8", [("a", "i4"), ("b", "f4")]])
def test_state_dtypes_that_cannot_be_shared_are_refused_by_name(kind, dtype):
    model = Emitter("next")
    model.fields = {"x": ((), np.float64), "when": ((), dtype)}
    with pytest.raises(seer.ModelError, match=r"state field 'when' of model 'Emitter' has "
                       r"dtype .*fields hold bools, numbers or fixed-size strings"):
        make(model, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["c16", "S4", "U3", "f2", "?"])
def test_other_state_dtypes_work_on_every_runtime(kind, dtype):
    model = Emitter("next")
    model.fields = {"x": ((), np.float64), "extra": ((2,), dtype)}
    with make(model, kind) as rt:
        rt.reset(0)
        rt.step({0: 1})
        assert rt.state.extra.dtype == np.dtype(dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("trace", ["yes", 1, object()])
def test_trace_takes_only_what_it_documents(kind, trace):
    with pytest.raises(seer.ModelError, match=r"^trace must be True, False, None or a "
                       r"seer.trace.Trace, got"):
        make(Emitter("next"), kind, trace=trace)


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_whose_str_raises_is_still_reported(kind):
    class Raises(Emitter):
        def on_next(self, ctx, event):
            raise Unprintable

    with make(Raises("next"), kind) as rt:
        rt.reset(0)
        with pytest.raises(seer.HandlerError) as info:
            rt.step({0: 1})
    message = str(info.value).splitlines()[0]
    assert "handler for 'next' raised Unprintable: <str() of the exception raised " \
           "RuntimeError>" in message
    assert isinstance(info.value.__cause__, Unprintable)


def test_string_agent_keys_are_refused_when_an_override_drops_them():
    class Skipping(Emitter):
        def action_events(self, actions):  # skips keys it does not know: a common habit
            return [(e, "go", a) for e, a in actions.items() if e in (0, 1, 2)]

    with seer.SerialRuntime(Skipping("next")) as rt:
        rt.reset(0)
        with pytest.raises(seer.ModelError, match=r"action for entity 'agent_0' of model "
                           r"'Skipping': entity ids are integers in range\(3\) \(no action "
                           r"became an event"):
            rt.step({"agent_0": 1})
        rt.step({0: 1})  # the runtime is unchanged and usable
        assert rt.state.x[0] == 1.0


class StepSeer(Emitter):
    """Records the ``step`` that each hook receives."""

    def __init__(self):
        super().__init__("next")
        self.seen = []

    def prepare_step(self, snapshot, step):
        self.seen.append(("prepare_step", step))

    def step_outputs(self, state, start, step):
        self.seen.append(("step_outputs", step))


@pytest.mark.parametrize("kind", ["serial", "seer", "optimistic"])
def test_step_means_what_each_hook_documents(kind):
    """prepare_step gets the index of the step about to run (0 first); step_outputs,
    StepInfo.step and StepResult.step count the steps taken (1 after the first)."""
    model = StepSeer()
    with make(model, kind) as rt:
        first = rt.reset(0)
        assert first.step == 0
        result = rt.step({0: 1})
        assert result.step == 1 and rt.step_index == 1
        rt.step({0: 1})
    assert model.seen == [("step_outputs", 0), ("prepare_step", 0), ("step_outputs", 1),
                          ("prepare_step", 1), ("step_outputs", 2)]
