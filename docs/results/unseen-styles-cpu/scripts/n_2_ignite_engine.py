"""pytorch-ignite habit: a hand-rolled Engine runs a `process_function(engine, batch)` closure, handlers are attached with `@trainer.on(Events.ITERATION_COMPLETED(every=...))`, and a handler stops the whole run mid-epoch by raising an exception once a running-average loss target is reached (caught around `trainer.run`)."""
import argparse
import time
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Events:
    STARTED = "started"
    EPOCH_STARTED = "epoch_started"
    ITERATION_COMPLETED = "iteration_completed"
    EPOCH_COMPLETED = "epoch_completed"
    COMPLETED = "completed"


class State:
    def __init__(self):
        self.epoch = 0
        self.iteration = 0
        self.epoch_iteration = 0
        self.output = None
        self.metrics = {}


class Engine:
    def __init__(self, process_function):
        self._process_function = process_function
        self._event_handlers = defaultdict(list)
        self.state = State()

    def on(self, event_name, every=1):
        def decorator(f):
            self._event_handlers[event_name].append((f, every))
            return f
        return decorator

    def _fire_event(self, event_name):
        for func, every in self._event_handlers[event_name]:
            counter = self.state.iteration if event_name == Events.ITERATION_COMPLETED else self.state.epoch
            if counter % every == 0:
                func(self)

    def run(self, data, max_epochs=1):
        self.state.max_epochs = max_epochs
        self._fire_event(Events.STARTED)
        while self.state.epoch < max_epochs:
            self.state.epoch += 1
            self._fire_event(Events.EPOCH_STARTED)
            self._run_once_on_dataset(data)
            self._fire_event(Events.EPOCH_COMPLETED)
        self._fire_event(Events.COMPLETED)
        return self.state

    def _run_once_on_dataset(self, data):
        self.state.epoch_iteration = 0
        for batch in data:
            self.state.iteration += 1
            self.state.epoch_iteration += 1
            self.state.output = self._process_function(self, batch)
            self._fire_event(Events.ITERATION_COMPLETED)


class TargetReached(Exception):
    pass


class Ripples(Dataset):
    """28x28 interference patterns of two point sources, class = the pair of source cells; rendered and smoothed in numpy."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed
        self.centres = np.random.default_rng(123).uniform(4, 24, size=(8, 2, 2))
        self.yy, self.xx = np.mgrid[:28, :28].astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        rng = np.random.default_rng((self.seed, idx))
        label = int(rng.integers(8))
        img = np.zeros((28, 28), np.float32)
        for c in self.centres[label] + rng.normal(0, 1.5, size=(2, 2)):
            r = np.hypot(self.yy - c[0], self.xx - c[1])
            img += np.cos(r * rng.uniform(0.8, 1.2)) / (1 + 0.2 * r)
        img += rng.normal(0, 0.8, size=img.shape).astype(np.float32)
        for _ in range(30):
            img = 0.5 * img + 0.125 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        return torch.from_numpy(img[None]), label


def create_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 8))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--target_loss", type=float, default=0.85)
    parser.add_argument("--log_interval", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(17)
    train_loader = DataLoader(Ripples(2400, seed=5), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers, drop_last=True)
    model = create_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    def train_step(engine, batch):
        model.train()
        x, y = batch
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    trainer = Engine(train_step)
    history = {"running": None, "epoch_sum": 0.0, "t0": 0.0}

    @trainer.on(Events.EPOCH_STARTED)
    def reset(engine):
        history["epoch_sum"], history["t0"] = 0.0, time.time()

    @trainer.on(Events.ITERATION_COMPLETED)
    def running_average(engine):
        out = engine.state.output
        history["epoch_sum"] += out
        r = history["running"]
        history["running"] = out if r is None else 0.95 * r + 0.05 * out

    @trainer.on(Events.ITERATION_COMPLETED, every=args.log_interval)
    def log_training_loss(engine):
        print(f"  iter {engine.state.iteration:5d}  running loss {history['running']:.4f}", flush=True)

    @trainer.on(Events.ITERATION_COMPLETED)
    def stop_at_target(engine):
        if engine.state.epoch >= 2 and history["running"] < args.target_loss:
            raise TargetReached(f"running loss {history['running']:.4f} < {args.target_loss} at epoch "
                                f"{engine.state.epoch}, batch {engine.state.epoch_iteration}")

    @trainer.on(Events.EPOCH_COMPLETED)
    def log_epoch(engine):
        n = engine.state.epoch_iteration
        print(f"Epoch[{engine.state.epoch}] batches {n} loss {history['epoch_sum'] / n:.4f} "
              f"({time.time() - history['t0']:.1f}s)", flush=True)

    try:
        trainer.run(train_loader, max_epochs=args.epochs)
        print("finished all epochs")
    except TargetReached as e:
        n = trainer.state.epoch_iteration
        print(f"Epoch[{trainer.state.epoch}] batches {n} loss {history['epoch_sum'] / n:.4f} (stopped early)")
        print(f"early stop: {e}")


if __name__ == "__main__":
    main()
