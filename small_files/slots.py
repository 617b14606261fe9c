"""Batch slots: shared buffers made once, that the loader's workers fill and the main process reads.

Why: with `--decode gpu --gpu-decode-share 0` each worker hands over a decoded batch (256 images of
160 px: 20 MB). A DataLoader hands a tensor over in a new shared-memory file every batch: the worker
maps it and faults its pages in, the main process maps it and faults them in again, then copies it
into pinned memory. On a 16-core H100 node at 95 batches a second, that kept one main-process thread
82 % busy, and the loop waited on it, not on the workers. Here the buffers are made before the
workers start and page-locked once in the main process (cudaHostRegister), so a worker writes into
warm pages, hands over only the slot's number, and the GPU copies straight out of the slot.

The protocol: each worker owns `per_worker` slots and fills them in turn. A slot is FULL from the
moment a worker writes it until the main process has copied it to the GPU (the copy's CUDA event has
completed); then it is FREE again. A worker that finds its next slot still FULL waits for it. Any
batch that does not fit (another image shape, more images) goes over the ordinary way.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import torch
from torch.utils.data import get_worker_info

FREE, FULL = 0, 1
WAIT_LIMIT_S = 120.0  # a worker waiting longer for a slot means the main process stopped reading


class InSlot(NamedTuple):
    """A batch handed over in a slot: its number and how many images it holds."""
    slot: int
    count: int


class BatchSlots:
    """`per_worker` slots of (batch, *image_shape) uint8 for each of `workers` workers."""

    def __init__(self, workers: int, per_worker: int, batch: int, image_shape: tuple[int, ...]) -> None:
        self.per_worker, self.image_shape = per_worker, tuple(image_shape)
        self.data = torch.empty((workers * per_worker, batch, *image_shape), dtype=torch.uint8).share_memory_()
        self.state = torch.zeros(workers * per_worker, dtype=torch.int32).share_memory_()
        self._filled = 0  # counts this process's batches: each worker has its own count after the fork
        self._registered = False

    def fill(self, images: list[torch.Tensor]) -> InSlot | None:
        """In a worker: stack the images into its next slot; None where they do not fit (or not a worker)."""
        info = get_worker_info()
        workers = len(self.state) // self.per_worker
        if (info is None or info.id >= workers or not images or len(images) > self.data.shape[1]
                or any(tuple(im.shape) != self.image_shape for im in images)):
            return None
        slot = info.id * self.per_worker + self._filled % self.per_worker
        self._filled += 1
        deadline = time.monotonic() + WAIT_LIMIT_S
        while int(self.state[slot]) != FREE:
            if time.monotonic() > deadline:
                raise RuntimeError(f"batch slot {slot} was not read back in {WAIT_LIMIT_S:.0f} s")
            time.sleep(0.0005)
        torch.stack(images, out=self.data[slot, :len(images)])
        self.state[slot] = FULL
        return InSlot(slot, len(images))

    def reset(self) -> None:
        """All slots FREE: called before a new pass over the loader, when no slot is in use."""
        self.state.zero_()

    def page_lock(self) -> None:
        """Register the slots with CUDA once, so that copies out of them are asynchronous DMA."""
        if self._registered:
            return
        err = torch.cuda.cudart().cudaHostRegister(self.data.data_ptr(), self.data.numel(), 0)
        if int(err) != 0:
            raise RuntimeError(f"cudaHostRegister of the batch slots failed ({err})")
        self._registered = True

    def view(self, ref: InSlot) -> torch.Tensor:
        return self.data[ref.slot, :ref.count]

    def release(self, ref: InSlot) -> None:
        self.state[ref.slot] = FREE
