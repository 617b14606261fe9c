"""One epoch of the training loader, served in turns by the tried worker counts' DataLoaders, in the sampler's order.

Why apart from profiling/trials.py: the trials decide which count's turn it is and keep the timings; this module is
the iterator the script's loop holds, with the sampler all counts' DataLoaders share.
"""
from __future__ import annotations

import atexit
import time
from typing import Any

from profiling import interrupts
from profiling.turns import MIN_TURN, NO_TIME, whole_rounds


class Feed:
    """The batch sampler all tried counts' DataLoaders share: the epoch's batches in order, while a turn is open. After
    a turn its prefetched batches are delivered; the next count starts at the first not handed out."""

    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.handed, self.open = 0, False

    def __iter__(self) -> Any:
        while self.open and self.handed < len(self.batches):
            self.handed += 1
            yield self.batches[self.handed - 1]

    def __len__(self) -> int:
        return len(self.batches)


class Segmented:
    """One epoch of the training loader, served in turns by the tried counts' DataLoaders (Trials.loader_for)."""

    def __init__(self, trials: Any, loader: Any, make: Any) -> None:  # profiling.trials.Trials (it imports this)
        import torch

        self.trials, self.loader, self.make, self.feed = trials, loader, make, trials.feed
        if trials.epoch is not None:  # an epoch the loop left early (`zip(range(n), loader)`: unseen r_2)
            trials.epoch.cut()
        # the seed a new iterator of its own draws; a persistent one is reset and draws none (drawing it anyway
        # moved every later epoch's order, and the losses, away from a plain run's)
        if not (loader.persistent_workers and loader.num_workers > 0 and loader._iterator is not None):
            torch.empty((), dtype=torch.int64).random_(generator=loader.generator)
            trials.drop(list(trials.loaders))  # its workers fork the dataset as this epoch has it (set_epoch: l_2)
        self.feed.batches, self.feed.handed = list(loader._index_sampler), 0  # the epoch, once, from its sampler
        self.delivered, self.inner, self.workers, self.timing = 0, None, None, False
        self.after: Any = lambda asked: None
        trials.epoch = self  # once whole: record() ends its turn, even after a SIGTERM inside this __init__

    def __iter__(self) -> Segmented:
        return self

    def __len__(self) -> int:
        return len(self.feed.batches)

    def open(self) -> None:
        """Start the next turn at the first batch not yet handed out, on its count's own DataLoader."""
        self.workers = self.trials.next_setting()
        workers = self.loader.num_workers if self.workers is None else self.workers
        self.trials.hold(self.workers)
        self.feed.open = True
        try:
            loader = self.trials.loader_for(workers, self.loader)
            forks = workers > 0 and loader._iterator is None  # a new turn starts its workers (one going on keeps them)
            self.opened = time.perf_counter() if forks else None  # to its first batch: the workers' start
            self.inner = interrupts.guarded(self.make, loader)  # torch's own __iter__ (not recorded as the script's)
        except Exception as error:  # a count torch refuses this loader at is not tried; the script's own still runs
            if self.workers is None or self.workers == self.trials.own:
                raise
            self.trials.refuse(self.workers, error)
            return self.open()  # the next count's turn, or the script's own count once none is left
        if forks:  # stop the workers at exit before torch's handler (last in, first out) waits 5 s for each
            atexit.unregister(self.trials.release)
            atexit.register(self.trials.release)
        self.skip = 1 + workers * (self.loader.prefetch_factor or 2)
        self.count, self.last, self.started, self.here, self.timing = 0, None, 0.0, [0, 0.0], True

    def end_turn(self, cut: bool = False) -> None:
        """Hand out no more batches; those prefetched are still delivered, untimed."""
        if self.timing and self.workers is not None:
            self.trials.add_segment(self.workers, self.here[0], self.here[1], cut)
        self.feed.open, self.timing = False, False

    def cut(self) -> None:
        """End the epoch's turn, by its end or where the loop left it: a turn still timing goes on next epoch."""
        cut = self.timing and self.workers is not None
        if cut:
            self.trials.queue.insert(0, self.workers)
        self.end_turn(cut)

    def __next__(self) -> Any:
        while True:
            if self.delivered >= len(self.feed.batches):
                self.cut()
                if self.workers is None:  # the trials are over: the script's own loader from now on
                    self.trials.release()
                raise StopIteration
            if self.inner is None:
                self.open()
            asked = time.perf_counter()
            try:
                item = next(self.inner)
                break
            except StopIteration:  # the closed turn's last prefetched batch was delivered
                self.inner = None
            except Exception as error:  # a tried count's workers failed: the next count serves its batches again
                if self.workers is None or self.workers == self.trials.own:
                    raise  # the script's own count: its error is the script's, raised as without the profiler
                self.trials.refuse(self.workers, error)
                self.feed.handed, self.inner, self.timing = self.delivered, None, False
        now = time.perf_counter()
        self.delivered, self.count = self.delivered + 1, self.count + 1
        if self.count == 1:  # the turn's first batch: its workers' start, and so its length, are known
            if self.opened is not None:
                self.trials.starts.append(now - self.opened)
            self.turn_length = self.trials.turn_s()  # once a turn, not at every step
        waited = self.after(asked)  # the capture hook counts the batch and says the wait (a zipped loader's too)
        if self.timing and self.workers is not None and self.last is not None and self.count > self.skip:
            timed = self.trials.timed.setdefault(self.workers, dict(NO_TIME))
            self.trials.add(timed, now - self.last, now - asked if waited is None else waited)
            self.here = [self.here[0] + 1, self.here[1] + now - self.last]
            if self.count == self.skip + 1:
                self.started = self.last
            share = len(self.feed.batches) // max(len(self.trials.settings), 1)  # a round fits in an epoch
            before = self.trials.segments[-1][1:] if self.trials.resumes == self.workers else (0, 0.0)  # the cut part
            timed_s = now - self.started + before[1]  # (an epoch shorter than a turn ended none: a_s4, 0.45 s of 0.5)
            length = self.turn_length
            long_enough = timed_s >= length or (self.count >= share and timed_s >= MIN_TURN * length)
            if long_enough and whole_rounds(self.count - self.skip, self.workers, before[0]):
                self.end_turn()  # the next batch after the prefetched ones opens the next count's turn
        self.last = now
        return item
