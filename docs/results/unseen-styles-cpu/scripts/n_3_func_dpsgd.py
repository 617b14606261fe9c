"""DP-SGD / functorch habit: per-sample gradients from `torch.func.vmap(torch.func.grad(loss_fn))` over `functional_call`, clipped and noised by hand, and the parameters updated in place under no_grad; no `loss.backward()` and no torch.optim optimizer anywhere."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.utils.data import DataLoader, Dataset


class BlobDigits(Dataset):
    """20x20 images: Gaussian blobs on a class-specific 3-point layout, with speckle, median-ish smoothing in numpy."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed
        self.layouts = np.random.default_rng(99).uniform(3, 17, size=(10, 3, 2))
        self.yy, self.xx = np.mgrid[:20, :20].astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(self.seed * 100_003 + i)
        y = int(rng.integers(10))
        img = np.zeros((20, 20), np.float32)
        for cy, cx in self.layouts[y] + rng.normal(0, 1.0, size=(3, 2)):
            img += np.exp(-((self.yy - cy) ** 2 + (self.xx - cx) ** 2) / 6.0)
        img += (rng.random((20, 20)) < 0.08).astype(np.float32)
        for _ in range(12):
            p = np.pad(img, 1, mode="reflect")
            stack = np.stack([p[a:a + 20, b:b + 20] for a in range(3) for b in range(3)])
            img = np.sort(stack, axis=0)[4]
        return torch.from_numpy(img).unsqueeze(0), y


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 5 * 5, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.tanh(self.c1(x)), 2)
        x = F.max_pool2d(torch.tanh(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def make_private_step(model, max_grad_norm, noise_multiplier, lr):
    def loss_fn(params, buffers, x, y):
        out = functional_call(model, (params, buffers), (x.unsqueeze(0),))
        return F.cross_entropy(out, y.unsqueeze(0))

    per_sample_grad_fn = vmap(grad(loss_fn), in_dims=(None, None, 0, 0))

    def step(params, buffers, x, y, gen):
        grads = per_sample_grad_fn(params, buffers, x, y)
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads.values()], dim=1).norm(dim=1)
        scale = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
        with torch.no_grad():
            for name, p in params.items():
                g = (grads[name] * scale.view(-1, *[1] * (grads[name].dim() - 1))).sum(0)
                g += noise_multiplier * max_grad_norm * torch.randn(g.shape, generator=gen)
                p -= lr * g / x.shape[0]
        return norms.mean().item()

    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    ap.add_argument("--sigma", type=float, default=0.5)
    args = ap.parse_args()

    torch.manual_seed(3)
    loader = DataLoader(BlobDigits(4800, seed=11), batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers)
    model = TinyCNN()
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    private_step = make_private_step(model, args.max_grad_norm, args.sigma, args.lr)
    noise_gen = torch.Generator().manual_seed(1234)

    for epoch in range(args.epochs):
        t0, tot, n, norm_sum = time.time(), 0.0, 0, 0.0
        for x, y in loader:
            norm_sum += private_step(params, buffers, x, y, noise_gen)
            with torch.no_grad():
                tot += F.cross_entropy(functional_call(model, (params, buffers), (x,)), y).item()
            n += 1
        print(f"epoch {epoch} batches {n} loss {tot / n:.4f} mean per-sample grad norm {norm_sum / n:.3f} "
              f"({time.time() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
