"""Two small lock-free structures with textbook bugs to find (``docs/checking.md``).

* :class:`FreeList`: a Treiber stack of node indices, the classic free list. With
  ``tagged=False`` its head is the bare index, and ``pop`` has the ABA bug: it reads
  ``head = A`` and ``next[A] = B``, is preempted while another thread pops ``A`` and
  ``B`` and pushes ``A`` back, and then its compare-exchange ``A -> B`` succeeds, handing
  out ``B``, which the other thread holds. ``tagged=True`` is the fix: the head also
  holds a counter that every successful compare-exchange bumps, so the stale ``A`` no
  longer matches.
* :class:`SpscRing`: a single-producer single-consumer ring of int64 values whose slots
  and indices are atomic words. With ``publish=RELEASE`` (the fix) the producer's store of
  the tail publishes the slot it wrote; with ``publish=RELAXED`` (the bug) nothing orders
  the slot's store before the tail's, and a consumer may read the slot's old value. On
  x86 and under a sequentially consistent model that never shows; the weak-memory mode
  finds it.

* :class:`ChaseLev`: the Chase-Lev work-stealing deque as Lê, Pop, Cohen and Zappa
  Nardelli write it for C11 ("Correct and efficient work-stealing for weak memory
  models", PPoPP 2013, figure 1), fences and all, with its three classic mistakes
  (``bug=``): ``"sb"`` (take stores ``bottom`` with release and loads ``top`` with
  seq_cst instead of the fence: store buffering), ``"steal-fence"`` (steal without its
  fence) and ``"last-no-cas"`` (take's last item without the compare-exchange). Each
  lets the owner and a thief take the same item.

Every example keeps every shared word in :class:`~seer.queues.atomic.AtomicWords` and go through an
accessor made on the calling thread, like the project's own structures, so the same code
runs on the fast path, under stress, and under :func:`seer.check.explore`.
"""

from __future__ import annotations

from seer.check.execution import name_words, yield_now
from seer.queues.atomic import ACQUIRE, RELAXED, RELEASE, SEQ_CST, AtomicWords

__all__ = ["CHASE_LEV_BUGS", "ChaseLev", "FreeList", "SpscRing", "chase_lev_check",
           "free_list_check", "spsc_check"]

NIL = -1
_INDEX = (1 << 32) - 1


class FreeList:
    """``capacity`` nodes, all free at the start; ``pop()`` takes one (or None), ``push(i)``
    gives node ``i`` back. Words: ``head`` (word 0) and ``next[i]`` (word ``1 + i``),
    accessed through the calling thread's accessor (:meth:`handle`)."""

    def __init__(self, capacity: int, *, tagged: bool = True) -> None:
        self.capacity = capacity
        self.tagged = tagged
        self.words = AtomicWords(1 + capacity, name="freelist")
        # node i links to i + 1; the head is node 0 (tag 0)
        self.words.array[1:] = [*range(1, capacity), NIL]
        self.words.array[0] = self._pack(0, 0)

    def _pack(self, tag: int, index: int) -> int:
        return (tag << 32) | (index + 1) if self.tagged else index

    def _unpack(self, head: int) -> int:
        return (head & _INDEX) - 1 if self.tagged else head

    def handle(self) -> FreeListHandle:
        return FreeListHandle(self)


class FreeListHandle:
    """One thread's access to a :class:`FreeList`."""

    def __init__(self, fl: FreeList) -> None:
        self.fl = fl
        self.acc = fl.words.accessor()

    def pop(self) -> int | None:
        acc, fl = self.acc, self.fl
        head = acc.load(0)  # acquire: the node's next link, written before its push
        while True:
            index = fl._unpack(head)
            if index == NIL:
                return None
            following = acc.load(1 + index, RELAXED)
            new = fl._pack((head >> 32) + 1, following) if fl.tagged else following
            observed = acc.compare_exchange(0, head, new)
            if observed == head:
                return index
            head = observed

    def push(self, index: int) -> None:
        acc, fl = self.acc, self.fl
        head = acc.load(0, RELAXED)
        while True:
            acc.store(1 + index, fl._unpack(head), RELAXED)
            new = fl._pack((head >> 32) + 1, index) if fl.tagged else index
            observed = acc.compare_exchange(0, head, new)  # release: publishes the link
            if observed == head:
                return
            head = observed


class SpscRing:
    """A ring of ``capacity`` int64 slots for one producer and one consumer. Words:
    ``head`` (0, next slot to read: the consumer's), ``tail`` (1, next slot to write: the
    producer's) and the slots (``2 + k``). ``publish`` is the order of the producer's
    tail store."""

    def __init__(self, capacity: int, *, publish: int = RELEASE) -> None:
        self.capacity = capacity
        self.publish = publish
        self.words = AtomicWords(2 + capacity, name="spsc")

    def producer(self) -> SpscHandle:
        return SpscHandle(self)

    consumer = producer


class SpscHandle:
    def __init__(self, ring: SpscRing) -> None:
        self.ring = ring
        self.acc = ring.words.accessor()

    def try_push(self, value: int) -> bool:
        acc, ring = self.acc, self.ring
        tail = acc.load(1, RELAXED)  # only the producer writes it
        if tail - acc.load(0) == ring.capacity:  # acquire: the consumer is done with it
            return False
        acc.store(2 + tail % ring.capacity, value, RELAXED)
        acc.store(1, tail + 1, ring.publish)  # must be release: publishes the slot
        return True

    def try_pop(self) -> int | None:
        acc, ring = self.acc, self.ring
        head = acc.load(0, RELAXED)  # only the consumer writes it
        if acc.load(1, ACQUIRE) == head:  # acquire: pairs with the tail's release
            return None
        value = acc.load(2 + head % ring.capacity, RELAXED)
        acc.store(0, head + 1)  # release: the slot may be overwritten after this
        return value


# -- the checks the tutorial runs ----------------------------------------------------------
def free_list_check(*, tagged: bool, capacity: int = 3) -> tuple:
    """``(setup, worker_a, worker_b, invariant)`` for :func:`seer.check.explore`: worker A
    pops a node and frees it; worker B pops two, frees the first, and keeps the second.
    No node may be held by two threads, and none may be lost."""

    class State:
        def __init__(self) -> None:
            self.fl = FreeList(capacity, tagged=tagged)
            self.held: list[set[int]] = [set(), set()]

    def take(state: State, me: int, handle: FreeListHandle) -> int | None:
        node = handle.pop()
        if node is not None:
            other = state.held[1 - me]
            assert node not in other, f"node {node} handed out twice (thread {1 - me} " \
                                      "holds it)"
            state.held[me].add(node)
        return node

    def worker_a(state: State) -> None:
        h = state.fl.handle()
        node = take(state, 0, h)
        if node is not None:
            state.held[0].discard(node)
            h.push(node)

    def worker_b(state: State) -> None:
        h = state.fl.handle()
        first, _second = take(state, 1, h), take(state, 1, h)
        if first is not None:
            state.held[1].discard(first)
            h.push(first)

    def invariant(state: State) -> None:
        fl = state.fl
        words = fl.words.array
        seen, index = [], fl._unpack(int(words[0]))
        while index != NIL and len(seen) <= capacity:
            seen.append(index)
            index = int(words[1 + index])
        held = state.held[0] | state.held[1]
        assert len(seen) == len(set(seen)), f"the free list has a cycle: {seen}"
        assert sorted(seen + sorted(held)) == list(range(capacity)), \
            f"free {seen} + held {sorted(held)} is not every node once"

    return State, worker_a, worker_b, invariant


def spsc_check(*, publish: int, messages: int = 2, capacity: int = 2) -> tuple:
    """``(setup, producer, consumer, invariant)``: the producer sends ``1..messages``, the
    consumer receives them all, in order (it polls a bounded number of times)."""

    class State:
        def __init__(self) -> None:
            self.ring = SpscRing(capacity, publish=publish)
            self.got: list[int] = []

    def producer(state: State) -> None:
        h = state.ring.producer()
        for v in range(1, messages + 1):
            while not h.try_push(v):
                yield_now()

    def consumer(state: State) -> None:
        h = state.ring.consumer()
        while len(state.got) < messages:
            v = h.try_pop()
            if v is None:
                yield_now()
            else:
                assert v == len(state.got) + 1, \
                    f"received {v} as message {len(state.got) + 1} (a stale slot)"
                state.got.append(v)

    return State, producer, consumer, None


# -- Chase-Lev ------------------------------------------------------------------------------
#: the planted mistakes of :class:`ChaseLev` (``bug=``), each a double take in weak mode
CHASE_LEV_BUGS = ("sb", "steal-fence", "last-no-cas")
EMPTY = None
ABORT = "abort"


class ChaseLev:
    """A fixed-capacity Chase-Lev deque of int64 items, as Lê et al. (PPoPP 2013,
    figure 1) write it: the owner pushes and takes at the bottom, thieves steal at the
    top. Words: ``top`` (0), ``bottom`` (1) and the buffer (``2 + k``), all through the
    calling thread's accessor (:meth:`handle`). ``bug``: one of :data:`CHASE_LEV_BUGS`,
    or None for the algorithm as published. (No resize: push on a full deque raises.)"""

    def __init__(self, capacity: int = 4, *, bug: str | None = None) -> None:
        if bug not in (None, *CHASE_LEV_BUGS):
            raise ValueError(f"ChaseLev has no planted bug {bug!r} (use one of "
                             f"{', '.join(CHASE_LEV_BUGS)})")
        self.capacity, self.bug = capacity, bug
        self.words = name_words(AtomicWords(2 + capacity, name="deque"), "top", "bottom",
                                *(f"buffer[{k}]" for k in range(capacity)))

    def handle(self) -> ChaseLevHandle:
        return ChaseLevHandle(self)


class ChaseLevHandle:
    """One thread's access to a :class:`ChaseLev` (the owner's or a thief's)."""

    def __init__(self, deque: ChaseLev) -> None:
        self.dq = deque
        self.acc = deque.words.accessor()

    def push(self, x: int) -> None:
        """The owner's push: write the slot, then publish it with a release fence and a
        relaxed store of ``bottom``."""
        acc, dq = self.acc, self.dq
        b = acc.load(1, RELAXED)
        t = acc.load(0, ACQUIRE)
        if b - t > dq.capacity - 1:
            raise OverflowError("the deque is full (this example does not resize)")
        acc.store(2 + b % dq.capacity, x, RELAXED)
        acc.fence(RELEASE)
        acc.store(1, b + 1, RELAXED)

    def take(self) -> int | None:
        """The owner's take: reserve the bottom item, then read ``top``; the store and the
        load must not be reordered (the seq_cst fence), and the last item is contended
        with thieves through a compare-exchange of ``top``."""
        acc, dq = self.acc, self.dq
        b = acc.load(1, RELAXED) - 1
        if dq.bug == "sb":
            acc.store(1, b, RELEASE)  # BUG: a release store and a seq_cst load, no fence:
            t = acc.load(0, SEQ_CST)  # the load may pass the store (store buffering)
        else:
            acc.store(1, b, RELAXED)
            acc.fence(SEQ_CST)
            t = acc.load(0, RELAXED)
        if t <= b:  # not empty
            x = acc.load(2 + b % dq.capacity, RELAXED)
            if t == b and dq.bug != "last-no-cas":  # BUG (last-no-cas): no contest
                # the last item: a thief may be taking it too
                if acc.compare_exchange(0, t, t + 1, SEQ_CST, RELAXED) != t:
                    x = EMPTY  # a thief won it
                acc.store(1, b + 1, RELAXED)
            return x
        acc.store(1, b + 1, RELAXED)  # empty: put bottom back
        return EMPTY

    def steal(self) -> int | str | None:
        """A thief's steal: read ``top``, then (after a seq_cst fence) ``bottom``; if
        not empty read the item and claim it by a compare-exchange of ``top``. Returns
        the item, :data:`EMPTY` (None) or :data:`ABORT` (lost a race: try again)."""
        acc, dq = self.acc, self.dq
        if dq.bug == "sb":
            t = acc.load(0, SEQ_CST)  # the "fix" a student tries first: seq_cst loads
            b = acc.load(1, SEQ_CST)
        else:
            t = acc.load(0, ACQUIRE)
            if dq.bug != "steal-fence":
                acc.fence(SEQ_CST)
            b = acc.load(1, ACQUIRE)
        if t < b:  # not empty
            x = acc.load(2 + t % dq.capacity, RELAXED)
            if acc.compare_exchange(0, t, t + 1, SEQ_CST, RELAXED) != t:
                return ABORT
            return x
        return EMPTY


def chase_lev_check(*, bug: str | None = None) -> tuple:
    """``(setup, owner, thief, invariant)``: the owner pushes 10 and 11 and takes once,
    the thief steals twice; no item may be taken twice, none lost (taken, or still in
    the deque between ``top`` and ``bottom``). Run it with ``weak=True``."""

    class State:
        def __init__(self) -> None:
            self.dq = ChaseLev(4, bug=bug)
            self.taken: list[list[int]] = [[], []]

    def owner(state: State) -> None:
        h = state.dq.handle()
        h.push(10)
        h.push(11)
        x = h.take()
        if x is not None:
            state.taken[0].append(x)

    def thief(state: State) -> None:
        h = state.dq.handle()
        for _ in range(2):
            x = h.steal()
            if x not in (EMPTY, ABORT):
                state.taken[1].append(x)

    def invariant(state: State) -> None:
        words = state.dq.words.array
        top, bottom = int(words[0]), int(words[1])
        left = [int(words[2 + k % state.dq.capacity]) for k in range(top, bottom)]
        owner, thief = state.taken
        taken = owner + thief
        assert len(taken) == len(set(taken)), \
            f"an item was taken twice: the owner took {owner}, the thief stole {thief}"
        assert sorted(taken + left) == [10, 11], \
            f"taken {sorted(taken)} + left in the deque {left} is not [10, 11]"

    return State, owner, thief, invariant
