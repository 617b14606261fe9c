"""Validation pass every N steps in the middle of the epoch (second DataLoader iterated inside train loop)."""
import argparse, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader


class Seq(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 16, 8, generator=g)
        self.y = (self.x.sum((1, 2)) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        x = torch.fft.rfft(x, dim=0).abs()[:8]
        x = torch.nn.functional.layer_norm(x, x.shape[-1:])
        time.sleep(0.001)
        return x.flatten(), self.y[i]


@torch.no_grad()
def validate(model, loader):
    model.eval()
    correct = n = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
        n += len(y)
    model.train()
    return correct / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--num-workers", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(7)
    train_loader = DataLoader(Seq(800, 0), batch_size=32, shuffle=True, num_workers=a.num_workers)
    val_loader = DataLoader(Seq(160, 1), batch_size=80, num_workers=a.num_workers)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    global_step = 0
    for epoch in range(a.epochs):
        t = time.time()
        tot = 0.0
        for i, (x, y) in enumerate(train_loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            global_step += 1
            if global_step % a.eval_every == 0:
                acc = validate(model, val_loader)
                print(f"  step {global_step}: val_acc {acc:.3f}")
        print(f"epoch {epoch}: batches {i + 1} loss {tot / (i + 1):.5f} {time.time()-t:.2f}s")


if __name__ == "__main__":
    main()
