"""MAML on sine-wave regression, written as in many meta-learning repos: a DataLoader of *tasks* (each item a
support set and a query set drawn from one sine wave), a meta-batch of tasks per step, an inner loop of plain SGD
on fast weights computed with torch.autograd.grad(create_graph=True) and applied through
torch.func.functional_call, and an outer Adam step on the summed query losses."""
import argparse
import math

import torch
import torch.nn as nn
from torch.func import functional_call
from torch.utils.data import DataLoader, Dataset


class SineTasks(Dataset):
    def __init__(self, num_tasks, k_shot=10, k_query=15, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.amp = torch.empty(num_tasks).uniform_(0.1, 5.0, generator=g)
        self.phase = torch.empty(num_tasks).uniform_(0, math.pi, generator=g)
        self.k_shot, self.k_query, self.seed = k_shot, k_query, seed

    def __len__(self):
        return len(self.amp)

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 7919 + i)
        x = torch.empty(self.k_shot + self.k_query, 1).uniform_(-5.0, 5.0, generator=g)
        y = self.amp[i] * torch.sin(x - self.phase[i])
        # a little per-task jitter, recomputed each time the task is drawn
        for _ in range(40):
            y = y + 0.001 * torch.randn(y.shape, generator=g)
        return x[:self.k_shot], y[:self.k_shot], x[self.k_shot:], y[self.k_shot:]


class Regressor(nn.Module):
    def __init__(self, hidden=40):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def adapt(model, params, x_s, y_s, inner_lr, inner_steps, loss_fn):
    fast = dict(params)
    for _ in range(inner_steps):
        loss = loss_fn(functional_call(model, fast, (x_s,)), y_s)
        grads = torch.autograd.grad(loss, list(fast.values()), create_graph=True)
        fast = {name: w - inner_lr * g for (name, w), g in zip(fast.items(), grads)}
    return fast


def meta_train(opts):
    torch.manual_seed(opts.seed)
    tasks = DataLoader(SineTasks(opts.tasks), batch_size=opts.meta_batch, shuffle=True,
                       num_workers=opts.workers, drop_last=True)
    model = Regressor()
    meta_opt = torch.optim.Adam(model.parameters(), lr=opts.meta_lr)
    loss_fn = nn.MSELoss()

    for epoch in range(opts.epochs):
        epoch_loss, n_steps = 0.0, 0
        for x_s, y_s, x_q, y_q in tasks:
            params = dict(model.named_parameters())
            meta_loss = 0.0
            for t in range(x_s.shape[0]):
                fast = adapt(model, params, x_s[t], y_s[t], opts.inner_lr, opts.inner_steps, loss_fn)
                meta_loss = meta_loss + loss_fn(functional_call(model, fast, (x_q[t],)), y_q[t])
            meta_loss = meta_loss / x_s.shape[0]
            meta_opt.zero_grad()
            meta_loss.backward()
            meta_opt.step()
            epoch_loss += meta_loss.item()
            n_steps += 1
        print(f"[epoch {epoch}] meta-steps={n_steps} query-mse={epoch_loss / n_steps:.4f}", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="MAML sine regression")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=1600)
    ap.add_argument("--meta-batch", type=int, default=16)
    ap.add_argument("--inner-steps", type=int, default=2)
    ap.add_argument("--inner-lr", type=float, default=0.01)
    ap.add_argument("--meta-lr", type=float, default=1e-3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    meta_train(ap.parse_args())
