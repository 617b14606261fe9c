"""Write `.lprof` files shaped like each line_profiler version's, without that version installed.

A real `.lprof` is a pickle of `<module>.LineStats` whose state is `{'timings': ..., 'unit': ...}`:
3.x and 4.x pickle the class from `line_profiler._line_profiler`, 5.x from
`line_profiler.line_profiler`; 3.x counts microseconds (unit 1e-6), 4.x/5.x nanoseconds (1e-9);
5.x keys methods by qualname (`C.meth`). These helpers write exactly that structure, naming the
class by module and name, so the tests need neither old versions nor a fake module in sys.modules.
"""
from __future__ import annotations

import pickle
from pathlib import Path

MODULE_3X_4X = "line_profiler._line_profiler"
MODULE_5X = "line_profiler.line_profiler"

Timings = dict[tuple[str, int, str], list[tuple[int, int, int]]]


class _FakeLineStats:
    def __init__(self, timings: Timings, unit: float) -> None:
        self.timings = timings
        self.unit = unit


class _NamedClassPickler(pickle._Pickler):
    """Pickles `_FakeLineStats` as if it were `<module>.LineStats` (the pure-Python pickler lets us)."""

    def __init__(self, file, protocol: int, module: str) -> None:
        super().__init__(file, protocol)
        self._module = module

    def save_global(self, obj, name=None):  # noqa: D401 - pickle's hook
        if obj is _FakeLineStats:
            self.write(pickle.GLOBAL + f"{self._module}\nLineStats\n".encode())
            self.memoize(obj)
            return
        super().save_global(obj, name)


def lprof_bytes(timings: Timings, unit: float, module: str = MODULE_5X, protocol: int = 5) -> bytes:
    import io

    buffer = io.BytesIO()
    _NamedClassPickler(buffer, protocol, module).dump(_FakeLineStats(timings, unit))
    return buffer.getvalue()


def write_lprof(path: Path, timings: Timings, unit: float, module: str = MODULE_5X, protocol: int = 5) -> Path:
    path.write_bytes(lprof_bytes(timings, unit, module, protocol))
    return path


# A pytorch/examples-style training function; line numbers below refer to this text.
TRAIN_SOURCE = '''\
import torch.nn.functional as F


@profile
def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{}]\\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset), loss.item()))
'''
TRAIN_FIRST_LINE = 4  # the decorator line: co_firstlineno on Python 3.11
EXPECTED_PHASES = {6: "other", 7: "data_wait", 8: "host_to_device", 9: "optimizer", 10: "forward",
                   11: "loss", 12: "backward", 13: "optimizer", 14: "other", 15: "logging_sync",
                   16: "logging_sync"}


def train_timings(batches: int, ms: dict[str, float], ticks_per_ms: float, epochs: int = 1,
                  file: str = "train.py", name: str = "train") -> Timings:
    """Timings of TRAIN_SOURCE for `batches` steps with the given per-batch milliseconds by phase.

    `ms` keys: wait, copy, zero, forward, loss, backward, step. Header hits are batches + epochs,
    as line_profiler 4.2+/5.x record them.
    """
    def ticks(key: str, hits: int = batches) -> int:
        return int(round(ms.get(key, 0.0) * hits * ticks_per_ms))

    logged = -(-batches // 10)
    rows = [(6, epochs, int(0.1 * ticks_per_ms)), (7, batches + epochs, ticks("wait")),
            (8, batches, ticks("copy")), (9, batches, ticks("zero")), (10, batches, ticks("forward")),
            (11, batches, ticks("loss")), (12, batches, ticks("backward")), (13, batches, ticks("step")),
            (14, batches, int(0.001 * batches * ticks_per_ms)), (15, logged, int(0.05 * logged * ticks_per_ms))]
    return {(file, TRAIN_FIRST_LINE, name): rows}
