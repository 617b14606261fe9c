"""A DistributedSampler that can start in the middle of an epoch.

Resuming must not re-draw data: the epoch's order comes from ``seed + epoch`` alone (as in
DistributedSampler), and a resumed run simply drops the indices this rank has already used.
So the batches after a resume are exactly the ones the uninterrupted run would have seen.
"""
from __future__ import annotations

from typing import Iterator

from torch.utils.data import DistributedSampler


class ResumableDistributedSampler(DistributedSampler):
    """DistributedSampler plus ``skip(n)``: leave out this rank's first ``n`` indices once."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.start = 0

    def set_epoch(self, epoch: int) -> None:
        """A new epoch starts from its first index unless ``skip`` is called afterwards."""
        super().set_epoch(epoch)
        self.start = 0

    def skip(self, num_indices: int) -> None:
        self.start = min(max(0, num_indices), self.num_samples)

    def __iter__(self) -> Iterator[int]:
        indices = list(super().__iter__())
        return iter(indices[self.start :])

    def __len__(self) -> int:
        return self.num_samples - self.start
