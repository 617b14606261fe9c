"""Ensemble: two different models trained on the same DataLoader in one loop, both step on every batch.
num_workers derived from len(os.sched_getaffinity(0)) // 2."""
import os
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

EPOCHS = 3
BATCH = 64


class NoisySignals(Dataset):
    def __init__(self, n=2400, length=512):
        self.n, self.length = n, length

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng(idx)
        label = idx % 5
        t = np.linspace(0, 1, self.length, dtype=np.float32)
        x = np.sin(2 * np.pi * (label + 1) * 3 * t) + rng.normal(0, 0.8, self.length).astype(np.float32)
        # band-limited smoothing via repeated convolution: real CPU work
        k = np.hanning(9).astype(np.float32)
        k /= k.sum()
        for _ in range(12):
            x = np.convolve(x, k, mode="same")
        spec = np.abs(np.fft.rfft(x))[:128].astype(np.float32)
        return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(spec), label


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 16, 7, padding=3)
        self.c2 = nn.Conv1d(16, 32, 7, padding=3)
        self.fc = nn.Linear(32, 5)

    def forward(self, x, spec):
        h = F.max_pool1d(F.relu(self.c1(x.unsqueeze(1))), 4)
        h = F.relu(self.c2(h)).mean(-1)
        return self.fc(h)


class SpecMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 5))

    def forward(self, x, spec):
        return self.net(torch.log1p(spec))


def main():
    workers = len(os.sched_getaffinity(0)) // 2
    print(f"using {workers} workers")
    loader = DataLoader(NoisySignals(), batch_size=BATCH, shuffle=True, num_workers=workers, drop_last=True)
    members = [ConvNet(), SpecMLP()]
    opts = [torch.optim.Adam(m.parameters(), lr=1e-3) for m in members]
    for epoch in range(EPOCHS):
        sums = [0.0, 0.0]
        ens_correct, seen, steps = 0, 0, 0
        for x, spec, y in loader:
            probs = 0
            for j, (m, o) in enumerate(zip(members, opts)):
                o.zero_grad()
                out = m(x, spec)
                loss = F.cross_entropy(out, y)
                loss.backward()
                o.step()
                sums[j] += loss.item()
                probs = probs + out.detach().softmax(-1)
            ens_correct += (probs.argmax(-1) == y).sum().item()
            seen += y.numel()
            steps += 1
        print(f"epoch {epoch} steps {steps} loss_conv {sums[0] / steps:.4f} loss_mlp {sums[1] / steps:.4f} "
              f"ens_acc {ens_correct / seen:.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
