"""A small convolutional VAE in a research-notebook style: settings as module constants (no argparse), the data a
torch.utils.data.StackDataset(image=..., label=...) whose items are dicts, the posterior a torch.distributions.Normal
with rsample() and kl_divergence against the prior, the KL weight annealed linearly by a global step, and
clip_grad_norm_'s returned norm logged every 25 steps."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal, kl_divergence
from torch.utils.data import DataLoader, Dataset, StackDataset

EPOCHS = 3
BATCH_SIZE = 64
LATENT = 8
LR = 2e-3
KL_WARMUP_STEPS = 150
NUM_WORKERS = 1
LOG_EVERY = 25
SEED = 7


class Blobs(Dataset):
    """28x28 images of 1-3 soft ellipses, rendered on access."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.params = rng.uniform(0, 1, (n, 3, 5)).astype(np.float32)
        self.count = rng.integers(1, 4, n)
        yy, xx = np.mgrid[0:28, 0:28].astype(np.float32) / 27.0
        self.yy, self.xx = yy, xx

    def __len__(self):
        return len(self.count)

    def __getitem__(self, i):
        img = np.zeros((28, 28), np.float32)
        for cy, cx, ry, rx, theta in self.params[i, :self.count[i]]:
            t = theta * np.pi
            dy, dx = self.yy - cy, self.xx - cx
            u = (dx * np.cos(t) + dy * np.sin(t)) / (0.05 + 0.2 * rx)
            v = (-dx * np.sin(t) + dy * np.cos(t)) / (0.05 + 0.2 * ry)
            img = np.maximum(img, 1.0 / (1.0 + np.exp(np.minimum(12.0 * (u * u + v * v - 1.0), 50.0))))
        for _ in range(3):  # soften edges
            img = 0.5 * img + 0.125 * (np.roll(img, 1, 0) + np.roll(img, -1, 0) + np.roll(img, 1, 1) + np.roll(img, -1, 1))
        return torch.from_numpy(img)[None]


class Counts(Dataset):
    def __init__(self, blobs):
        self.count = blobs.count

    def __len__(self):
        return len(self.count)

    def __getitem__(self, i):
        return int(self.count[i])


class VAE(nn.Module):
    def __init__(self, latent=LATENT):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
                                 nn.Flatten(), nn.Linear(64 * 7 * 7, 2 * latent))
        self.dec_in = nn.Linear(latent, 64 * 7 * 7)
        self.dec = nn.Sequential(nn.ReLU(), nn.ConvTranspose2d(64, 32, 4, 2, 1), nn.ReLU(),
                                 nn.ConvTranspose2d(32, 1, 4, 2, 1))

    def forward(self, x):
        mu, log_var = self.enc(x).chunk(2, dim=1)
        q = Normal(mu, torch.exp(0.5 * log_var))
        z = q.rsample()
        logits = self.dec(self.dec_in(z).view(-1, 64, 7, 7))
        return logits, q


torch.manual_seed(SEED)
blobs = Blobs(4000, seed=SEED)
dataset = StackDataset(image=blobs, label=Counts(blobs))
loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, num_workers=NUM_WORKERS, drop_last=True)
model = VAE()
optim = torch.optim.Adam(model.parameters(), lr=LR)
prior = Normal(torch.zeros(LATENT), torch.ones(LATENT))


def train():
    global_step = 0
    for epoch in range(EPOCHS):
        stats = {"recon": 0.0, "kl": 0.0, "n": 0}
        for batch in loader:
            x = batch["image"]
            logits, q = model(x)
            recon = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.shape[0]
            kl = kl_divergence(q, prior).sum(1).mean()
            beta = min(1.0, global_step / KL_WARMUP_STEPS)
            loss = recon + beta * kl
            optim.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            optim.step()
            global_step += 1
            stats["recon"] += recon.item()
            stats["kl"] += kl.item()
            stats["n"] += 1
            if global_step % LOG_EVERY == 0:
                print(f"  step {global_step:4d} beta {beta:.2f} loss {loss.item():8.2f} |g| {grad_norm:.2f}")
        print(f"epoch {epoch + 1}/{EPOCHS}: {stats['n']} batches, recon {stats['recon'] / stats['n']:.2f}, "
              f"kl {stats['kl'] / stats['n']:.2f}", flush=True)


if __name__ == "__main__":
    train()
