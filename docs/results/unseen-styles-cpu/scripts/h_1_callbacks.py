"""Trainer with callbacks (on_epoch_start / on_batch_end / on_epoch_end) and a @dataclass config whose fields
become argparse flags automatically (`--num_workers`, `--epochs`, ...), as in many research codebases."""
import argparse
import dataclasses
import time
from dataclasses import dataclass, field

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class TrainConfig:
    epochs: int = 4
    batch_size: int = 32
    lr: float = 3e-3
    num_workers: int = 1
    n_train: int = 1024
    seed: int = 0
    log_every: int = 0
    tags: list = field(default_factory=lambda: ["baseline"])


def config_from_cli(cls=TrainConfig, argv=None):
    """Every field of the dataclass becomes `--<name>`, typed by its default (lists are skipped)."""
    parser = argparse.ArgumentParser(description=cls.__doc__)
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING:
            continue
        parser.add_argument(f"--{f.name}", type=type(f.default), default=f.default)
    return cls(**vars(parser.parse_args(argv)))


class SyntheticSignals(Dataset):
    """1-D signals built per item from the index's own seed, filtered in __getitem__ (a few ms of CPU)."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 100003 + i)
        label = int(torch.randint(0, 4, (1,), generator=g))
        t = torch.linspace(0, 1, 256)
        x = torch.sin(2 * torch.pi * (label + 1) * 3 * t) + 0.8 * torch.randn(256, generator=g)
        for _ in range(90):  # smoothing passes: the loader's CPU work
            x = 0.5 * x + 0.25 * (torch.roll(x, 1) + torch.roll(x, -1))
        return x.unsqueeze(0), label


class Callback:
    def on_epoch_start(self, trainer, epoch):
        pass

    def on_batch_end(self, trainer, step, loss):
        pass

    def on_epoch_end(self, trainer, epoch, logs):
        pass


class LossHistory(Callback):
    def on_epoch_start(self, trainer, epoch):
        self.losses = []

    def on_batch_end(self, trainer, step, loss):
        self.losses.append(loss)

    def on_epoch_end(self, trainer, epoch, logs):
        logs["loss"] = sum(self.losses) / len(self.losses)
        logs["batches"] = len(self.losses)


class Timer(Callback):
    def on_epoch_start(self, trainer, epoch):
        self.t0 = time.perf_counter()

    def on_epoch_end(self, trainer, epoch, logs):
        logs["seconds"] = time.perf_counter() - self.t0


class PrintLogger(Callback):
    def on_epoch_end(self, trainer, epoch, logs):
        print(f"epoch {epoch + 1}/{trainer.cfg.epochs} batches {logs['batches']} loss {logs['loss']:.4f} "
              f"({logs['seconds']:.1f}s)", flush=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv1d(1, 16, 7, padding=3), nn.ReLU(), nn.MaxPool1d(4),
                                      nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8))
        self.head = nn.Linear(32 * 8, 4)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class Trainer:
    def __init__(self, model, cfg, callbacks=()):
        self.model, self.cfg = model, cfg
        self.callbacks = list(callbacks)
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        self.criterion = nn.CrossEntropyLoss()

    def _emit(self, event, *args):
        for cb in self.callbacks:
            getattr(cb, event)(self, *args)

    def compute_loss(self, batch):
        x, y = batch
        return self.criterion(self.model(x), y)

    def fit(self, loader):
        for epoch in range(self.cfg.epochs):
            self.model.train()
            self._emit("on_epoch_start", epoch)
            for step, batch in enumerate(loader):
                loss = self.compute_loss(batch)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                self._emit("on_batch_end", step, loss.item())
            logs = {}
            self._emit("on_epoch_end", epoch, logs)


def main():
    cfg = config_from_cli()
    torch.manual_seed(cfg.seed)
    loader = DataLoader(SyntheticSignals(cfg.n_train, cfg.seed), batch_size=cfg.batch_size, shuffle=True,
                        num_workers=cfg.num_workers, drop_last=True)
    trainer = Trainer(Net(), cfg, callbacks=[LossHistory(), Timer(), PrintLogger()])
    trainer.fit(loader)


if __name__ == "__main__":
    main()
