"""Every setting lives in a JSON file (--config, default j_2_config.json beside this script), as in many lab
repos where configs/ is versioned and the script only reads it. Task: tell apart five synthetic 'sounds' from
their log-spectrograms, computed per clip in __getitem__ (with a random gain / time-shift augmentation)."""
import argparse
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def load_config(path):
    with open(path) as f:
        cfg = json.load(f)
    print(f"loaded {path}: experiment={cfg['experiment']}", flush=True)
    return cfg


class SynthSounds(Dataset):
    """Each clip: a chirp / tone mixture whose shape depends on the class, plus noise."""

    def __init__(self, num_clips, clip_len, n_fft, hop, augment):
        self.num_clips, self.clip_len = num_clips, clip_len
        self.n_fft, self.hop, self.augment = n_fft, hop, augment
        self.window = torch.hann_window(n_fft)

    def __len__(self):
        return self.num_clips

    def _synthesise(self, label, g):
        t = torch.arange(self.clip_len) / 8000.0
        f0 = 200 + 150 * label + 40 * torch.rand(1, generator=g)
        wave = torch.zeros(self.clip_len)
        for h in range(1, 61):                    # additive synthesis, harmonic by harmonic
            sweep = f0 * h * (1 + 0.1 * label * t)
            wave += torch.sin(2 * torch.pi * sweep * t) / h ** (1 + 0.1 * label)
        return wave + 0.3 * torch.randn(self.clip_len, generator=g)

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        label = idx % 5
        wave = self._synthesise(label, g)
        if self.augment:
            wave = torch.roll(wave, int(torch.randint(0, 800, (1,), generator=g))) * (0.5 + torch.rand(1, generator=g))
        spec = torch.stft(wave, self.n_fft, self.hop, window=self.window, return_complex=True).abs()
        spec = torch.log1p(spec)
        spec = (spec - spec.mean()) / (spec.std() + 1e-6)
        return spec.unsqueeze(0), label


class SpecCNN(nn.Module):
    def __init__(self, channels, dropout, n_classes=5):
        super().__init__()
        layers, c_in = [], 1
        for c in channels:
            layers += [nn.Conv2d(c_in, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2)]
            c_in = c
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(c_in, n_classes))

    def forward(self, x):
        return self.head(self.features(x))


def run_epoch(model, loader, opt):
    model.train()
    total, correct, seen, steps = 0.0, 0, 0, 0
    for spec, label in loader:
        logits = model(spec)
        loss = F.cross_entropy(logits, label)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(label)
        correct += (logits.argmax(1) == label).sum().item()
        seen += len(label)
        steps += 1
    return total / seen, correct / seen, steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "j_2_config.json"))
    cfg = load_config(parser.parse_args().config)
    torch.manual_seed(cfg["seed"])

    dataset = SynthSounds(**cfg["data"])
    loader_cfg = cfg["loader"]
    loader = DataLoader(dataset, batch_size=loader_cfg["batch_size"], shuffle=loader_cfg["shuffle"],
                        num_workers=loader_cfg["num_workers"])
    model = SpecCNN(**cfg["model"])
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["optim"]["lr"], weight_decay=cfg["optim"]["weight_decay"])

    for epoch in range(cfg["optim"]["epochs"]):
        t0 = time.perf_counter()
        loss, acc, steps = run_epoch(model, loader, opt)
        print(f"[{cfg['experiment']}] epoch {epoch + 1}/{cfg['optim']['epochs']} loss {loss:.4f} acc {acc:.3f} "
              f"steps {steps} ({time.perf_counter() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
