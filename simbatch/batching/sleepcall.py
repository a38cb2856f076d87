"""A flush that is a ``time.Sleep`` on a host whose sleeps are measured.

Table R1's benchmark replaced the batch read by ``time.Sleep(500us)``; on a host described by
measured distributions (``[host] model = ...``, :mod:`.hosttiming`) such a sleep lasts what
the host's ``sleep_us`` table says (about 1.1 ms for 500 us on a Linux VM), drawn per call.
Used in place of :class:`~.service.BatchService` when the service is a sleep
(``[service] is_sleep``) with neither a permit pool nor a client stage, and the client's CPU
is not modelled; with ``[go]`` the flush goroutine sleeps on the scheduler's timers instead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy

from .hosttiming import HostTiming
from .records import Recorder


class SleepCall:
    """``close_batch`` / ``submit`` like :class:`~.service.BatchService`, for a sleep."""

    def __init__(self, env: simpy.Environment, config, rng: np.random.Generator,
                 recorder: Recorder, timing: HostTiming,
                 on_done: Callable[[list[int]], None] | None = None) -> None:
        self.env = env
        self.config = config
        self.rng = rng
        self.recorder = recorder
        self.timing = timing
        self.on_done = on_done
        self._noise: list[float] = []

    def close_batch(self, items: list[int], trigger: str, opened_at: float) -> int:
        return self.recorder.new_batch(items, trigger, opened_at, self.env.now)

    def submit(self, batch_id: int, items: list[int]) -> simpy.Event:
        n = len(items)
        if self.config.cost_basis == "unique_keys":
            n = self.recorder.count_unique_keys(items)
        d = self.config.median_s(n)
        if self.config.noise != "constant":
            if not self._noise:
                self._noise = self.config.noise_samples(self.rng, 4096).tolist()
            d *= self._noise.pop()
        self.recorder.batch_started(batch_id, self.env.now, n)
        done = self.env.timeout(self.timing.sleep_s(d))
        done.callbacks.append(lambda _ev: self._done(batch_id, items))
        return done

    def _done(self, batch_id: int, items: list[int]) -> None:
        now = self.env.now
        self.recorder.batch_server_returned(batch_id, now)
        self.recorder.batch_done(batch_id, now)
        if self.on_done is not None:
            self.on_done(items)
