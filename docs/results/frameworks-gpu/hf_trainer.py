"""Hugging Face's Trainer on generated 28x28 digits (no download), in the style of its image-classification examples:
a Dataset of dicts, light augmentation (RandomAffine on PIL images), a small conv net whose forward returns the
loss, and TrainingArguments. The Trainer builds its own DataLoader (`dataloader_num_workers`) and loops in its code."""
import argparse
import tempfile

import numpy as np
from PIL import Image
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Dataset
from torchvision import transforms as T
from transformers import Trainer, TrainingArguments


class Digits(Dataset):
    def __init__(self, n):
        self.pixels = np.random.default_rng(0).integers(0, 256, (n, 28, 28), np.uint8)
        self.labels = np.random.default_rng(1).integers(0, 10, n)
        self.tf = T.Compose([T.RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1)), T.ToTensor(),
                             T.Normalize((0.1307,), (0.3081,))])

    def __len__(self):
        return len(self.pixels)

    def __getitem__(self, i):
        return {"pixel_values": self.tf(Image.fromarray(self.pixels[i])), "labels": int(self.labels[i])}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, pixel_values, labels=None):
        logits = self.net(pixel_values)
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Hugging Face Trainer on generated digits")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), num_train_epochs=a.epochs,
                             per_device_train_batch_size=a.batch_size, dataloader_num_workers=a.workers,
                             learning_rate=1e-3, save_strategy="no", logging_strategy="no", report_to=[],
                             disable_tqdm=True)
    trainer = Trainer(model=Net(), args=args, train_dataset=Digits(a.samples))
    trainer.train()
    print("train done")
