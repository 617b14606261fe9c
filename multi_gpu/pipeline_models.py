"""The models a pipeline trains, as flat lists of blocks, and the rule that cuts them into stages.

A pipeline stage is a run of consecutive blocks. The rule: count each block's forward FLOPs
(``torch.utils.flop_counter`` on the meta device, so nothing is computed and every process gets
the same answer), then choose the cut points that make the most expensive stage as cheap as
possible. The slowest stage sets the pace of the whole pipeline, so balance is what matters.

Two models:

* ``resnet50`` / ``resnet18``: torchvision's ResNet as stem, bottleneck blocks and head, on
  generated ImageNet-shaped images (the model of ``multi_gpu/resnet_bench.py``, cut into blocks);
* ``mlp``: a deep residual MLP (``--width``, ``--depth``). At ``--width 8192 --depth 20`` it has
  10.7 billion parameters: with AdamW its training state (16 bytes a parameter) is 172 GB, more
  than one 141 GB H200 holds at any batch, while each half fits one GPU.

Every block is initialised from its own seed, so a stage built alone on its GPU holds exactly
the weights the same blocks have in a one-process model.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

MODELS = ("resnet50", "resnet18", "mlp")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    classes: int = 1000
    image_size: int = 224
    width: int = 1024
    depth: int = 8

    def sample_shape(self) -> tuple[int, ...]:
        """The shape of one input sample (no batch dimension)."""
        return (self.width,) if self.name == "mlp" else (3, self.image_size, self.image_size)


class ResidualMLP(nn.Module):
    """x + W2 gelu(W1 norm(x)): a transformer's feed-forward half, stackable to any depth."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


def _resnet_blocks(spec: ModelSpec, seed: int) -> list[nn.Module]:
    import torchvision  # weights=None: nothing is downloaded

    torch.manual_seed(seed)
    m = getattr(torchvision.models, spec.name)(weights=None, num_classes=spec.classes)
    stem = nn.Sequential(m.conv1, m.bn1, m.relu, m.maxpool)
    head = nn.Sequential(m.avgpool, nn.Flatten(), m.fc)
    return [stem, *m.layer1, *m.layer2, *m.layer3, *m.layer4, head]


def _mlp_block(spec: ModelSpec, index: int, seed: int) -> nn.Module:
    torch.manual_seed(seed * 1000 + index)
    if index < spec.depth:
        return ResidualMLP(spec.width)
    return nn.Sequential(nn.LayerNorm(spec.width), nn.Linear(spec.width, spec.classes))


def block_count(spec: ModelSpec) -> int:
    if spec.name == "mlp":
        return spec.depth + 1
    return len(_on_meta(spec))


def build_blocks(spec: ModelSpec, device: torch.device, keep: range, seed: int = 0) -> list[nn.Module]:
    """The blocks numbered ``keep``, built on ``device``; the others are never allocated."""
    if spec.name == "mlp":  # built straight on the device: a 10B model never touches host memory
        with torch.device(device):
            return [_mlp_block(spec, i, seed) for i in keep]
    blocks = _resnet_blocks(spec, seed)  # small: built whole on the CPU, then the kept part moved
    return [blocks[i].to(device) for i in keep]


def _on_meta(spec: ModelSpec) -> list[nn.Module]:
    with torch.device("meta"):
        if spec.name == "mlp":
            return [_mlp_block(spec, i, 0) for i in range(spec.depth + 1)]
        return _resnet_blocks(spec, 0)


def block_costs(spec: ModelSpec) -> tuple[list[int], list[tuple[int, ...]]]:
    """Forward FLOPs of each block for one sample, and each block's input shape (batch of 1)."""
    blocks = _on_meta(spec)
    x = torch.empty((2, *spec.sample_shape()), device="meta")  # 2: batch norm refuses 1 sample
    costs, shapes = [], []
    for block in blocks:
        shapes.append((1, *x.shape[1:]))
        with FlopCounterMode(display=False) as counter:
            x = block(x)
        costs.append(int(counter.get_total_flops()) // 2)
    return costs, shapes


def split(costs: list[int], stages: int) -> list[range]:
    """Cut ``costs`` into ``stages`` runs of consecutive blocks, minimising the costliest run."""
    n = len(costs)
    if not 1 <= stages <= n:
        raise ValueError(f"{stages} stage(s) for a model of {n} blocks")
    prefix = [0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[k][i]: the smallest possible costliest stage when the first i blocks form k stages.
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0
    for k in range(1, stages + 1):
        for i in range(k, n + 1):
            for j in range(k - 1, i):
                worst = max(best[k - 1][j], prefix[i] - prefix[j])
                if worst < best[k][i]:
                    best[k][i], cut[k][i] = worst, j
    bounds, i = [], n
    for k in range(stages, 0, -1):
        bounds.append(range(cut[k][i], i))
        i = cut[k][i]
    return bounds[::-1]


class _ContiguousGrad(torch.autograd.Function):
    """Identity forward; makes the gradient sent back to the previous stage contiguous."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return grad.contiguous()


class Stage(nn.Module):
    """A run of blocks under optional bf16 autocast; hands a contiguous tensor to the next stage."""

    def __init__(self, blocks: list[nn.Module], first_block: int, amp: bool) -> None:
        super().__init__()
        self.blocks = nn.ModuleDict({str(first_block + i): b for i, b in enumerate(blocks)})
        self.amp = amp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.requires_grad:  # received from a stage before: its gradient goes back by send
            x = _ContiguousGrad.apply(x)
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16, enabled=self.amp):
            for block in self.blocks.values():
                x = block(x)
        if self.amp:  # activations cross to the next stage in bf16: half the bytes to send
            x = x.to(torch.bfloat16)
        # Point-to-point sends need contiguous memory (channels_last activations are not).
        return x.contiguous()
