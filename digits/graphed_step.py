"""One training step (forward, loss, backward, optimizer step) replayed as a single CUDA graph.

At batch 1024 lesson 1's network needs well under a millisecond of GPU arithmetic a step, but
Python launches some forty kernels for it (convolutions, dropout, the loss, the backward pass,
the optimizer), and on a fast GPU those launches, not the maths, set the pace. A CUDA graph
records the kernels once and replays them with one launch. What the graph needs:

- fixed tensors: each batch is copied into the same input buffers (the last, smaller batch of
  an epoch runs eagerly instead);
- an optimizer whose state and learning rate live on the GPU (recipes.make_optimizer with
  graphable=True), so the schedule can change the rate between replays;
- a few eager warm-up steps first, on a side stream, so lazy state (optimizer moments, cuBLAS
  workspaces) exists before the capture. They are real training steps on real batches.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

WARMUP_STEPS = 3


class GraphedStep:
    """Call with (data, target) instead of the step's four lines; returns the loss tensor."""

    def __init__(self, model: nn.Module, optimizer, amp: bool) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA graphs need a CUDA device")
        self.model, self.optimizer, self.amp = model, optimizer, amp
        # A per-step schedule (recipes.PerStep) must run outside the graph: inside it, the
        # rate it sets would be frozen into the recording.
        self.inner = getattr(optimizer, "optimizer", optimizer)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.eager_steps, self.batch_size = 0, None
        self.side = torch.cuda.Stream()

    def _forward_backward_step(self, data: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # No autocast weight cache: cached bf16 copies made during capture would go stale.
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.amp, cache_enabled=False):
            loss = F.nll_loss(self.model(data), target)
        loss.backward()
        self.inner.step()
        return loss

    def _eager(self, data: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        self.inner.zero_grad(set_to_none=True)
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            loss = self._forward_backward_step(data, target)
        torch.cuda.current_stream().wait_stream(self.side)
        return loss.detach()  # holding the autograd graph would pin its nodes to the side stream

    def _capture(self, data: torch.Tensor, target: torch.Tensor) -> None:
        self.data, self.target = data.clone(), target.clone()
        self.inner.zero_grad(set_to_none=True)  # backward in the graph then writes, not adds, the grads
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.loss = self._forward_backward_step(self.data, self.target)

    def __call__(self, data: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if self.batch_size is None:
            self.batch_size = len(target)
        if len(target) != self.batch_size or (self.graph is None and self.eager_steps < WARMUP_STEPS):
            self.eager_steps += 1
            loss = self._eager(data, target)
        else:
            if self.graph is None:
                self._capture(data, target)  # records only; the replay below runs this batch
            self.data.copy_(data, non_blocking=True)
            self.target.copy_(target, non_blocking=True)
            self.graph.replay()
            loss = self.loss
        if self.inner is not self.optimizer:
            self.optimizer.scheduler.step()
        return loss
