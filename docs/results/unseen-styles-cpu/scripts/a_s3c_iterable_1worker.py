"""Stream-style IterableDataset, DataLoader(batch_size=..., num_workers=1)."""
import math, time
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

N_SAMPLES = 3200
EPOCHS = 3


class SyntheticStream(IterableDataset):
    """Generates samples on the fly; shards the stream across workers."""

    def __init__(self, n_samples, seq_len=128, seed=0):
        super().__init__()
        self.n_samples = n_samples
        self.seq_len = seq_len
        self.seed = seed

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            start, end, wid = 0, self.n_samples, 0
        else:
            per = int(math.ceil(self.n_samples / info.num_workers))
            wid = info.id
            start, end = wid * per, min((wid + 1) * per, self.n_samples)
        rng = np.random.default_rng(self.seed + wid)
        for i in range(start, end):
            sig = rng.standard_normal(self.seq_len * 4).astype(np.float32)
            # "decode" step: some per-sample work
            for _ in range(40):
                sig = np.convolve(sig, np.ones(5, dtype=np.float32) / 5, mode="same")
            feat = sig.reshape(4, self.seq_len)
            label = int(feat.mean() > 0)
            yield torch.from_numpy(feat.copy()), label


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(4, 32, 5, padding=2), nn.ReLU(),
            nn.Conv1d(32, 32, 5, padding=2), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 2))

    def forward(self, x):
        return self.net(x)


def main():
        torch.manual_seed(0)
        dataset = SyntheticStream(N_SAMPLES)
        loader = DataLoader(dataset, batch_size=32, num_workers=1)
        model = Conv1dNet()
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
        criterion = nn.CrossEntropyLoss()

        for epoch in range(EPOCHS):
            tic = time.time()
            nb = 0
            running = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                running += loss.item()
                nb += 1
            print(f"[epoch {epoch}] batches: {nb}  avg loss: {running / nb:.4f}  time: {time.time() - tic:.2f}s")


if __name__ == "__main__":
    main()
