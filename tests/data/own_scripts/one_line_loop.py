"""The loop and its step on one line, as compact fastai-style code writes it: `for b in dl: self.one_batch(b)`.
Each item sleeps, so the wait is real; the step is a small model's. Unseen ad_4: its line read as 100 % data wait."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 64), torch.randn(n, 1)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.0005)
        return self.x[i], self.y[i]


class Learner:
    def __init__(self, dl):
        self.dl, self.model = dl, nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def one_batch(self, batch):
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
        self.loss = loss.item()

    def one_epoch(self):
        for b in self.dl: self.one_batch(b)  # noqa: E701


def main():
    torch.manual_seed(0)
    learn = Learner(DataLoader(Slow(1024), batch_size=16, shuffle=True, num_workers=1))
    for epoch in range(4):
        learn.one_epoch()
        print(f"epoch {epoch}: loss {learn.loss:.6f}", flush=True)


if __name__ == "__main__":
    main()
