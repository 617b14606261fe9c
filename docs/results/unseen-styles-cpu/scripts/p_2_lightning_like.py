"""Lightning-style: a `LightningModule` with training_step() returning a dict ({"loss": ..., "log": {...}}),
validation_step(), configure_optimizers(), train_dataloader()/val_dataloader() built from `self.hparams`
(save_hyperparameters-like, from argparse `--num_workers`), and a hand-written minimal `Trainer.fit()` that, as
Lightning does, first runs a 2-batch "sanity check" over the validation loader, then trains with automatic
optimisation (optimizer.step(closure), the closure running training_step and backward), calling hooks
(on_train_epoch_start/end) and validating after each epoch.

Data cost: modest, ~0.3 ms of torch work per sample (10 ms a batch of 32) against ~30 ms of compute a step.
Default --num_workers 1. A correct advice: the loader mostly keeps up with 1 worker (compute-bound or nearly so):
keep 1 worker (or 0 if measured no slower), `--cpus-per-task = 2`; the edit `--num_workers N`. The training loop
is Trainer.fit's `for batch_idx, batch in enumerate(train_loader)`, NOT the sanity-check loop over the validation
loader, which runs first. The loss and backward run inside the closure passed to optimizer.step."""
import argparse
import time
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class LightningModule(nn.Module):
    """The few bits of pl.LightningModule the script uses."""

    def save_hyperparameters(self, **kwargs):
        self.hparams = SimpleNamespace(**kwargs)

    def log(self, name, value):
        self._logged[name] = float(value)

    def on_train_epoch_start(self):
        self._logged = {}

    def on_train_epoch_end(self):
        pass


class Shapes(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.base = torch.rand(n, 1, 28, 28, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        x = self.base[idx]
        shift = int(idx % 5) - 2
        x = torch.roll(x, shifts=(shift, -shift), dims=(1, 2))
        for _ in range(8):
            x = 0.9 * x + 0.1 * torch.tanh(x * 3.0)
        x = (x - x.mean()) / (x.std() + 1e-6)
        return x, self.labels[idx]


class LitClassifier(LightningModule):
    def __init__(self, **hparams):
        super().__init__()
        self.save_hyperparameters(**hparams)
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
        self.train_ds = Shapes(2560, seed=1)
        self.val_ds = Shapes(256, seed=2)
        self._logged = {}

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float().mean()
        self.log("train_acc", acc)
        return {"loss": loss, "log": {"train_loss": loss.detach()}}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return {"val_loss": F.cross_entropy(self(x), y)}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=self.hparams.batch_size, shuffle=True,
                          num_workers=self.hparams.num_workers)

    def val_dataloader(self):
        return DataLoader(self.val_ds, batch_size=self.hparams.batch_size, num_workers=self.hparams.num_workers)


class Trainer:
    def __init__(self, max_epochs=4, num_sanity_val_steps=2):
        self.max_epochs = max_epochs
        self.num_sanity_val_steps = num_sanity_val_steps

    @torch.no_grad()
    def _val_loop(self, module, loader, max_batches=None):
        module.eval()
        losses = []
        for batch_idx, batch in enumerate(loader):
            if max_batches is not None and batch_idx >= max_batches:
                break
            losses.append(module.validation_step(batch, batch_idx)["val_loss"])
        module.train()
        return torch.stack(losses).mean().item()

    def fit(self, module):
        optimizer = module.configure_optimizers()
        train_loader = module.train_dataloader()
        val_loader = module.val_dataloader()
        sanity = self._val_loop(module, val_loader, self.num_sanity_val_steps)
        print(f"sanity check val_loss {sanity:.4f}", flush=True)
        for epoch in range(self.max_epochs):
            module.on_train_epoch_start()
            start, total, batches = time.time(), 0.0, 0
            for batch_idx, batch in enumerate(train_loader):
                result = {}

                def closure():
                    optimizer.zero_grad()
                    out = module.training_step(batch, batch_idx)
                    out["loss"].backward()
                    result.update(out)
                    return out["loss"]

                optimizer.step(closure)
                total += result["log"]["train_loss"].item()
                batches += 1
            module.on_train_epoch_end()
            val_loss = self._val_loop(module, val_loader)
            print(f"epoch {epoch} batches {batches} train_loss {total / batches:.4f} val_loss {val_loss:.4f} "
                  f"acc {module._logged.get('train_acc', 0):.3f} time {time.time() - start:.2f}s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_epochs", type=int, default=6)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_workers", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = LitClassifier(**vars(args))
    Trainer(max_epochs=args.max_epochs).fit(model)


if __name__ == "__main__":
    main()
