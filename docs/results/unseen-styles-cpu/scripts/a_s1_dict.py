"""Dict-batch style: Dataset returns {"image", "label"}, custom collate_fn."""
import argparse, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import Dataset, DataLoader


class SyntheticImages(Dataset):
    def __init__(self, n=3000, size=40, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 255, size=(n, size, size, 3), dtype=np.uint8)
        self.labels = rng.integers(0, 10, size=n)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        img = Image.fromarray(self.images[idx]).resize((32, 32), Image.BILINEAR)
        img = img.rotate(float(np.random.uniform(-15, 15)))
        arr = np.asarray(img, dtype=np.float32) / 255.0
        arr = (arr - 0.5) / 0.25
        for _ in range(3):  # a bit of extra per-item work
            arr = np.clip(arr + np.random.normal(0, 0.01, arr.shape).astype(np.float32), -3, 3)
        return {"image": torch.from_numpy(arr.transpose(2, 0, 1).copy()),
                "label": int(self.labels[idx])}


def collate_fn(samples):
    images = torch.stack([s["image"] for s in samples])
    labels = torch.tensor([s["label"] for s in samples], dtype=torch.long)
    return {"image": images, "label": labels}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    train_ds = SyntheticImages()
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, collate_fn=collate_fn)
    model = Net().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        n_batches, total_loss = 0, 0.0
        for batch in train_loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            optimizer.zero_grad()
            logits = model(batch["image"])
            loss = criterion(logits, batch["label"])
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            n_batches += 1
        dt = time.perf_counter() - t0
        print(f"epoch {epoch}: batches={n_batches} loss={total_loss / n_batches:.4f} time={dt:.2f}s")


if __name__ == "__main__":
    main()
