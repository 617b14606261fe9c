"""DistributedSampler used in a single process (world size 1), set_epoch each epoch."""
import argparse, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler


class NoisyImages(Dataset):
    def __init__(self, n=768):
        g = torch.Generator().manual_seed(2)
        self.imgs = torch.rand(n, 3, 24, 24, generator=g)
        self.lbl = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        img = self.imgs[i]
        img = torch.nn.functional.avg_pool2d(img.unsqueeze(0), 3, 1, 1).squeeze(0)
        img = (img - img.mean()) / (img.std() + 1e-6)
        img = torch.flip(img, dims=[2]) if i % 2 else img
        time.sleep(0.001)
        return img, self.lbl[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", default=4, type=int)
    ap.add_argument("--num-workers", default=2, type=int)
    args = ap.parse_args()
    torch.manual_seed(0)
    ds = NoisyImages()
    sampler = DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True, seed=0)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=args.num_workers, drop_last=True)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        losses = []
        t = time.time()
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        print(f"[epoch {epoch}] batches={len(losses)} loss={sum(losses)/len(losses):.5f} time={time.time()-t:.2f}s")


if __name__ == "__main__":
    main()
