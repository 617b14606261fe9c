"""A LightningModule in the style of Lightning's own MNIST examples, on generated 28x28 digits (no download):
a DataModule, light augmentation (RandomAffine on PIL images), a small conv net, accelerator="auto".
The loop runs in Lightning's trainer, not in this file: the kit times it through the DataLoader."""
import argparse

import lightning as L
import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T


class Digits(Dataset):
    def __init__(self, n, tf):
        self.pixels = np.random.default_rng(0).integers(0, 256, (n, 28, 28), np.uint8)
        self.labels = np.random.default_rng(1).integers(0, 10, n)
        self.tf = tf

    def __len__(self):
        return len(self.pixels)

    def __getitem__(self, i):
        return self.tf(Image.fromarray(self.pixels[i])), int(self.labels[i])


class DigitsData(L.LightningDataModule):
    def __init__(self, samples, batch_size, workers):
        super().__init__()
        self.samples, self.batch_size, self.workers = samples, batch_size, workers
        self.tf = T.Compose([T.RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1)), T.ToTensor(),
                             T.Normalize((0.1307,), (0.3081,))])

    def train_dataloader(self):
        return DataLoader(Digits(self.samples, self.tf), batch_size=self.batch_size, shuffle=True,
                          num_workers=self.workers, pin_memory=True)


class LitNet(L.LightningModule):
    def __init__(self, lr=1e-3):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))
        self.lr = lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Lightning MNIST-style training on generated digits")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    trainer = L.Trainer(max_epochs=a.epochs, accelerator="auto", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(LitNet(), DigitsData(a.samples, a.batch_size, a.workers))
    print("fit done")
