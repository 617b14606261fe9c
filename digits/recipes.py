"""Training recipes for lesson 1's network: the optimizer and how its learning rate moves.

The pytorch/examples recipe (Adadelta, lr 1.0, StepLR x0.7 per epoch) is tuned for batches of 64.
A batch 16x larger takes 16x fewer steps an epoch, and with the same learning rate the model
learns less (on real digits 98.8 % becomes 96.3 % at batch 1024). The large-batch rule here gives
those steps back their reach: the peak learning rate grows with the batch (by the square root or
linearly), a short linear warm-up keeps the first large steps from diverging, and a cosine decay
to zero lands the model in the end. The schedule is per optimizer step, so it fits any batch size.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Iterable

import torch
import torch.optim as optim
from torch.optim.lr_scheduler import LambdaLR, LRScheduler, StepLR

REFERENCE_BATCH = 64  # the batch the examples recipe (and every --lr) is given for
OPTIMIZERS = ("adadelta", "adamw", "sgd")
SCHEDULES = ("step", "warmup-cosine")
SCALINGS = {"none": 0.0, "sqrt": 0.5, "linear": 1.0}


def peak_lr(lr: float, batch_size: int, scaling: str) -> float:
    """The learning rate for batch_size, given lr at the reference batch of 64."""
    return lr * (batch_size / REFERENCE_BATCH) ** SCALINGS[scaling]


def warmup_cosine(step: int, total_steps: int, warmup_steps: int) -> float:
    """Factor of the peak rate at optimizer step `step` (0-based): a linear ramp to 1 over
    warmup_steps, then half a cosine down to 0 at total_steps."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    decay = max(total_steps - warmup_steps, 1)
    return 0.5 * (1.0 + math.cos(math.pi * min(step - warmup_steps, decay) / decay))


def schedule(lr: float, batch_size: int, scaling: str, epochs: int, steps_per_epoch: int,
             warmup_epochs: float) -> list[float]:
    """The learning rate of every optimizer step of a warmup-cosine run (what the tests pin down)."""
    total = epochs * steps_per_epoch
    warmup = min(max(round(warmup_epochs * steps_per_epoch), 1), total)
    top = peak_lr(lr, batch_size, scaling)
    return [top * warmup_cosine(k, total, warmup) for k in range(total)]


class PerStep:
    """An optimizer whose step() also advances a per-step schedule (train() calls only step())."""

    def __init__(self, optimizer: optim.Optimizer, scheduler: LRScheduler) -> None:
        self.optimizer, self.scheduler = optimizer, scheduler
        self.param_groups = optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        self.optimizer.step()
        self.scheduler.step()


@dataclass
class Recipe:
    optimizer: optim.Optimizer | PerStep
    epoch_scheduler: LRScheduler | None  # StepLR for the examples recipe, None when per step

    def end_epoch(self) -> None:
        if self.epoch_scheduler is not None:
            self.epoch_scheduler.step()


def make_optimizer(name: str, params: Iterable[torch.nn.Parameter], lr: float, device: torch.device,
                   graphable: bool = False) -> optim.Optimizer:
    """Adadelta (the examples'), AdamW or SGD with Nesterov momentum; fused kernels on CUDA.

    graphable: the learning rate lives in a device tensor and the step can be captured in a
    CUDA graph (the schedule then changes the tensor, not a Python number baked into the graph).
    """
    cuda = device.type == "cuda"
    rate = torch.tensor(lr, device=device) if graphable else lr
    if name == "adadelta":
        return optim.Adadelta(params, lr=rate, capturable=graphable)
    if name == "adamw":
        return optim.AdamW(params, lr=rate, fused=cuda or None, capturable=graphable)
    if name == "sgd":
        return optim.SGD(params, lr=rate, momentum=0.9, nesterov=True, fused=cuda or None)
    raise ValueError(f"unknown optimizer {name!r}: use one of {', '.join(OPTIMIZERS)}")


def build(args: argparse.Namespace, params: Iterable[torch.nn.Parameter], steps_per_epoch: int, device: torch.device,
          graphable: bool = False) -> Recipe:
    """The recipe the flags ask for; with the defaults, exactly pytorch/examples' Adadelta + StepLR."""
    start = peak_lr(args.lr, args.batch_size, args.lr_scaling)
    optimizer = make_optimizer(args.optimizer, params, start, device, graphable)
    if args.schedule == "step":
        return Recipe(optimizer, StepLR(optimizer, step_size=1, gamma=args.gamma))
    total = args.epochs * steps_per_epoch
    warmup = min(max(round(args.warmup_epochs * steps_per_epoch), 1), total)
    ramp = LambdaLR(optimizer, lambda k: warmup_cosine(k, total, warmup))
    return Recipe(PerStep(optimizer, ramp), None)


def _epochs(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number of epochs >= 0, got {text!r}")
    return value


def add_args(parser: argparse.ArgumentParser) -> None:
    """The recipe flags, as one argparse group; the defaults are pytorch/examples' recipe."""
    g = parser.add_argument_group("large-batch recipe (lesson 4)")
    g.add_argument("--optimizer", choices=OPTIMIZERS, default="adadelta",
                   help="adadelta is pytorch/examples'; adamw and sgd (Nesterov momentum 0.9) use fused "
                        "kernels on CUDA")
    g.add_argument("--schedule", choices=SCHEDULES, default="step",
                   help="step: multiply the rate by --gamma after each epoch (pytorch/examples); "
                        "warmup-cosine: per step, a linear warm-up over --warmup-epochs, then a cosine "
                        "decay to zero at the last step (ignores --gamma)")
    g.add_argument("--warmup-epochs", type=_epochs, default=1.0, metavar="E",
                   help="length of the warm-up of --schedule warmup-cosine, in epochs (fractions allowed)")
    g.add_argument("--lr-scaling", choices=tuple(SCALINGS), default="none",
                   help=f"--lr is the rate for batches of {REFERENCE_BATCH}; scale it to --batch-size "
                        "by the square root of the ratio, linearly, or not at all")
