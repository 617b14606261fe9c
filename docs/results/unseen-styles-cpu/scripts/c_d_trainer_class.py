"""Training loop inside class Trainer: fit() -> self._run_epoch() iterating self.loaders['train']."""
import argparse, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader


class Regress(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        self.w = torch.randn(32, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        feats = torch.cat([x, x.sin(), x.cos(), x ** 2])
        for _ in range(5):
            feats = feats * 0.9 + torch.roll(feats, 1) * 0.1
        time.sleep(0.001)
        return feats, (x @ self.w).squeeze(0) + 0.1 * x[0]


class Trainer:
    def __init__(self, model, loaders, epochs, lr=1e-2):
        self.model = model
        self.loaders = loaders
        self.epochs = epochs
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.loss_fn = nn.MSELoss()
        self.history = []

    def _train_step(self, batch):
        x, y = batch
        pred = self.model(x).squeeze(-1)
        loss = self.loss_fn(pred, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def _run_epoch(self, epoch):
        self.model.train()
        running, n = 0.0, 0
        for batch in self.loaders["train"]:
            running += self._train_step(batch)
            n += 1
        return running / n, n

    @torch.no_grad()
    def _evaluate(self):
        self.model.eval()
        tot, n = 0.0, 0
        for x, y in self.loaders["val"]:
            tot += self.loss_fn(self.model(x).squeeze(-1), y).item()
            n += 1
        return tot / n

    def fit(self):
        for epoch in range(self.epochs):
            t = time.time()
            train_loss, n = self._run_epoch(epoch)
            val_loss = self._evaluate()
            self.history.append((train_loss, val_loss))
            print(f"epoch {epoch+1}/{self.epochs} batches {n} train {train_loss:.5f} val {val_loss:.5f} ({time.time()-t:.2f}s)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    torch.manual_seed(3)
    loaders = {
        "train": DataLoader(Regress(640, 0), batch_size=32, shuffle=True, num_workers=a.workers),
        "val": DataLoader(Regress(128, 1), batch_size=64, num_workers=a.workers),
    }
    model = nn.Sequential(nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 1))
    Trainer(model, loaders, a.epochs).fit()


if __name__ == "__main__":
    main()
