"""A buffered Go channel with one receiver: the item queue in front of a go-batcher worker.

Models go-batcher's ``chan`` of capacity ``64 x size`` (``batcher.go``, all versions): ``Put``
first tries a non-blocking send and falls back to a blocking one, so a producer blocks while
the buffer is full. As in the Go runtime, blocked senders wait in FIFO order, and a receive
from a full buffer moves the first blocked sender's value into the buffer and wakes that
sender.

Simplification: items are plain integers (record ids). A send that fits costs no SimPy event;
only a blocked send and a receiver that waits on an empty channel create one. That is what
keeps a million-item block fast.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import simpy


class Channel:
    """FIFO buffer of ``capacity`` items, blocked senders, and at most one waiting receiver.

    Parameters
    ----------
    env : simpy.Environment
    capacity : int
        Buffered slots (go-batcher: 64 x size).
    on_enqueue : callable(item, time) or None
        Called when an item enters the buffer (immediately or after its sender was blocked),
        so the caller can record the enqueue time.

    Examples
    --------
    >>> env = simpy.Environment()
    >>> ch = Channel(env, capacity=1)
    >>> ch.put(7) is None, ch.put(8) is None
    (True, False)
    >>> ch.take(), ch.take()
    (7, 8)
    """

    def __init__(self, env: simpy.Environment, capacity: int,
                 on_enqueue: Callable[[int, float], None] | None = None) -> None:
        self.env = env
        self.capacity = capacity
        self.items: deque[int] = deque()
        self._senders: deque[tuple[int, simpy.Event]] = deque()
        self._receiver: simpy.Event | None = None
        self._on_enqueue = on_enqueue

    def __len__(self) -> int:
        return len(self.items)

    def put(self, item: int) -> simpy.Event | None:
        """Send ``item``. Returns ``None`` when it was buffered at once, else an event that
        succeeds when the blocked send completes (the sender should wait for it)."""
        if len(self.items) < self.capacity and not self._senders:
            self.items.append(item)
            if self._on_enqueue is not None:
                self._on_enqueue(item, self.env.now)
            self.wake_receiver()
            return None
        event = self.env.event()
        self._senders.append((item, event))
        return event

    def fits(self, k: int) -> bool:
        """``k`` sends in a row would all be buffered at once, none blocking."""
        return len(self.items) + k <= self.capacity and not self._senders

    def put_many(self, items: range) -> None:
        """What a :meth:`put` of each of ``items`` in turn does when they :meth:`fits`, in
        one step."""
        if not items:
            return
        self.items.extend(items)
        on_enqueue = self._on_enqueue
        if on_enqueue is not None:
            now = self.env.now
            for item in items:
                on_enqueue(item, now)
        self.wake_receiver()

    def take(self) -> int:
        """Non-blocking receive; the caller checks ``len(channel)`` first."""
        item = self.items.popleft()
        if self._senders:
            waiting, event = self._senders.popleft()
            self.items.append(waiting)
            if self._on_enqueue is not None:
                self._on_enqueue(waiting, self.env.now)
            event.succeed()
        return item

    def wait(self) -> simpy.Event:
        """An event that succeeds at the next send, or when :meth:`wake_receiver` is called
        for another reason (a timer, a tick, close)."""
        self._receiver = self.env.event()
        return self._receiver

    def wake_receiver(self) -> None:
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            receiver.succeed()

    @property
    def blocked_senders(self) -> int:
        return len(self._senders)
