"""A step's actions: checked, numbered, and kept as columns until they become events.

``Runtime.step(actions)`` hands ``actions`` to the model's ``action_events`` and checks
what comes back here, before anything changes (a bad action leaves the runtime as it
was). Action ``i`` of entity ``e`` gets the sequence number ``(e << ORIGIN_SHIFT) |
count``, its entity's count of action events so far this episode (:mod:`seer.events`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from seer.errors import ModelError
from seer.events import COUNTER_LIMIT, ORIGIN_SHIFT, Event
from seer.model import Model, ModelSpec

__all__ = ["ActionBatch", "action_batch"]

_NO_KIND = object()  # no action kind checked yet
_tuple_new = tuple.__new__  # Event without its keyword-handling constructor (a C call)


class ActionBatch:
    """A step's checked action events as columns: event ``i`` is ``(t0, seqs[i],
    entities[i], kinds[i], payloads[i])``, in the order the model gave them.
    ``distinct``: no entity has two of them."""

    __slots__ = ("distinct", "entities", "entity_array", "kinds", "payloads", "seq_array",
                 "seqs", "t0")

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.entities: list[int] = []
        self.entity_array = np.empty(0, np.int64)  # the entities, as an array
        self.seqs: list[int] = []
        self.seq_array = np.empty(0, np.int64)  # the seqs, as an array
        self.kinds: list[int] = []
        self.payloads: list[Any] = []
        self.distinct = True

    def __len__(self) -> int:
        return len(self.entities)

    def event(self, i: int) -> Event:
        """Event ``i``, as an :class:`Event` tuple."""
        return _tuple_new(Event, (self.t0, self.seqs[i], self.entities[i], self.kinds[i],
                                  self.payloads[i]))

    def events(self) -> list[Event]:
        """All the events, as :class:`Event` tuples (:meth:`event` for each, in one pass)."""
        t0 = self.t0
        return [_tuple_new(Event, (t0, seq, e, k, payload)) for seq, e, k, payload
                in zip(self.seqs, self.entities, self.kinds, self.payloads, strict=True)]


def action_batch(model: Model, spec: ModelSpec, actions: Any, t0: float,
                 counters: np.ndarray, marks: np.ndarray) -> ActionBatch:
    """The events of ``actions`` at ``t0``, checked and numbered. ``counters``: action
    events per entity so far this episode (read, not changed: a rejected call leaves the
    runtime as it was; the runtime adds the batch when its step starts); ``marks``: one
    int64 of scratch per entity. They come as columns, not yet as :class:`Event` tuples:
    making a tuple of a tuple subclass costs about 0.25 µs, and a parallel runtime may
    leave that to its threads (``Runtime._push_externals``)."""
    n = spec.n_entities
    try:
        items = list(model.action_events(actions))
    except ModelError:
        raise
    except (TypeError, ValueError) as exc:
        raise ModelError(f"actions for model {spec.name!r} were rejected by its "
                         f"action_events(): {type(exc).__name__}: {exc}") from exc
    if not items and isinstance(actions, Mapping) and actions:
        stray = next((key for key in actions if key.__class__ is not int
                      and not isinstance(key, np.integer)), None)
        if stray is not None:  # an override that skips unknown keys would drop them all
            raise ModelError(f"action for entity {stray!r} of model {spec.name!r}: "
                             f"entity ids are integers in range({n}) (no action became "
                             "an event; map agent names to entity ids first)")
    batch = ActionBatch(t0)
    entities, kinds, payloads = batch.entities, batch.kinds, batch.payloads
    add_entity, add_kind, add_payload = entities.append, kinds.append, payloads.append
    kind_ids = spec.kind_ids
    last_kind: Any = _NO_KIND  # the kind of the previous item, already checked
    k = -1
    for item in items:
        try:
            entity, kind, payload = item
        except (TypeError, ValueError):
            raise ModelError(f"action_events() of model {spec.name!r} must yield "
                             f"(entity, kind, payload) triples, got {item!r}") from None
        if entity.__class__ is not int:
            if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)):
                raise ModelError(f"action for entity {entity!r} of model {spec.name!r}: "
                                 f"entity ids are integers in range({n})")
            entity = int(entity)
        if not 0 <= entity < n:
            raise ModelError(f"action for entity {entity!r} of model {spec.name!r}: "
                             f"entity ids are integers in range({n})")
        if kind is not last_kind:
            k = (kind_ids.get(kind) if kind.__class__ is str or kind.__class__ is int
                 else None)  # not 2.0 or True for kind 2 or 1
            if k is None:
                raise ModelError(f"action event kind {kind!r} is not a kind of model "
                                 f"{spec.name!r} {spec.kinds!r}")
            last_kind = kind
        add_entity(entity)
        add_kind(k)
        add_payload(payload)
    if entities:
        _number_actions(batch, counters, marks)
    return batch

def _number_actions(batch: ActionBatch, counters: np.ndarray, marks: np.ndarray) -> None:
    """Give each action its sequence number: its entity's count of action events so
    far this episode, plus its rank among the entity's actions in this batch (in
    numpy: one big int per action made in Python costs more than the whole pass)."""
    n_actions = len(batch)
    entity = np.array(batch.entities, np.int64)
    positions = np.arange(n_actions, dtype=np.int64)
    marks[entity] = positions  # with repeats the last one wins: a mismatch shows them
    batch.distinct = bool((marks[entity] == positions).all())
    count = counters[entity]
    if not batch.distinct:
        seen: dict[int, int] = {}
        rank = np.zeros(n_actions, np.int64)
        for i, e in enumerate(batch.entities):
            rank[i] = seen.get(e, 0)
            seen[e] = rank[i] + 1
        count += rank
    over = np.flatnonzero(count >= COUNTER_LIMIT)
    if len(over):
        raise ModelError(f"more than {COUNTER_LIMIT} external events for entity "
                         f"{batch.entities[int(over[0])]} in one episode")
    batch.entity_array = entity
    batch.seq_array = (entity << ORIGIN_SHIFT) | count
    batch.seqs = batch.seq_array.tolist()

