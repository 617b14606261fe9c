"""A hyper-parameter search written the way Optuna examples are: an `objective(trial)` that suggests lr, width,
dropout and batch size, builds its loaders for that batch size, trains, and reports the validation accuracy after
every epoch; a median pruner raises TrialPruned from inside the epoch loop. Optuna itself is not installed here, so
a small stand-in (Study/Trial/TrialPruned) is written in the script, with the same calls."""
import argparse
import math
import random
import statistics

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

N_WORKERS = 1
EPOCHS = 3


class TrialPruned(Exception):
    pass


class Trial:
    def __init__(self, study, number, rng):
        self.study, self.number, self.rng = study, number, rng
        self.params, self.intermediate = {}, {}

    def suggest_float(self, name, low, high, log=False):
        v = math.exp(self.rng.uniform(math.log(low), math.log(high))) if log else self.rng.uniform(low, high)
        self.params[name] = v
        return v

    def suggest_categorical(self, name, choices):
        self.params[name] = self.rng.choice(choices)
        return self.params[name]

    def report(self, value, step):
        self.intermediate[step] = value

    def should_prune(self):
        step = max(self.intermediate)
        others = [t.intermediate[step] for t in self.study.trials if t.state == "COMPLETE" and step in t.intermediate]
        return len(others) >= 2 and self.intermediate[step] < statistics.median(others)


class Study:
    def __init__(self, seed=0):
        self.rng, self.trials = random.Random(seed), []

    def optimize(self, objective, n_trials):
        for number in range(n_trials):
            trial = Trial(self, number, self.rng)
            trial.state = "RUNNING"
            self.trials.append(trial)
            try:
                trial.value, trial.state = objective(trial), "COMPLETE"
            except TrialPruned:
                trial.value, trial.state = None, "PRUNED"
            print(f"[trial {number}] {trial.state} value={trial.value} params={trial.params}", flush=True)

    @property
    def best_trial(self):
        return max((t for t in self.trials if t.state == "COMPLETE"), key=lambda t: t.value)


class Spirals(Dataset):
    """Three interleaved spirals lifted to 48 features; each item's features go through a small per-item transform."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.y = rng.integers(0, 3, n)
        r = rng.uniform(0.2, 1.0, n)
        theta = 4.0 * r + self.y * 2 * np.pi / 3 + rng.normal(0, 0.15, n)
        self.xy = np.stack([r * np.cos(theta), r * np.sin(theta)], 1).astype(np.float32)
        self.proj = np.random.default_rng(99).normal(0, 2, (2, 48)).astype(np.float32)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        f = np.sin(self.xy[i] @ self.proj)
        for k in range(60):
            f = f + 0.01 * np.cos(3.0 * f + k)
        return torch.from_numpy(f.astype(np.float32)), int(self.y[i])


TRAIN, VALID = Spirals(3000, seed=1), Spirals(600, seed=2)


def get_loaders(batch_size):
    train = DataLoader(TRAIN, batch_size=batch_size, shuffle=True, num_workers=N_WORKERS)
    valid = DataLoader(VALID, batch_size=256, num_workers=0)
    return train, valid


def define_model(trial):
    width = trial.suggest_categorical("width", [64, 128, 256])
    p = trial.suggest_float("dropout", 0.0, 0.4)
    return nn.Sequential(nn.Linear(48, width), nn.ReLU(), nn.Dropout(p), nn.Linear(width, width), nn.ReLU(),
                         nn.Dropout(p), nn.Linear(width, 3))


def objective(trial):
    model = define_model(trial)
    lr = trial.suggest_float("lr", 1e-4, 3e-2, log=True)
    batch_size = trial.suggest_categorical("batch_size", [32, 64])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    train_loader, valid_loader = get_loaders(batch_size)

    for epoch in range(EPOCHS):
        model.train()
        seen, total = 0, 0.0
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data)
            loss = F.cross_entropy(output, target)
            loss.backward()
            optimizer.step()
            seen, total = seen + 1, total + loss.item()

        model.eval()
        correct = 0
        with torch.no_grad():
            for data, target in valid_loader:
                correct += (model(data).argmax(1) == target).sum().item()
        accuracy = correct / len(valid_loader.dataset)
        print(f"  trial {trial.number} epoch {epoch}: {seen} batches, loss {total / seen:.4f}, acc {accuracy:.3f}")
        trial.report(accuracy, epoch)
        if trial.should_prune():
            raise TrialPruned()
    return accuracy


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-trials", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    study = Study(seed=0)
    study.optimize(objective, n_trials=args.n_trials)
    best = study.best_trial
    print(f"Best trial {best.number}: value {best.value:.4f} params {best.params}")
