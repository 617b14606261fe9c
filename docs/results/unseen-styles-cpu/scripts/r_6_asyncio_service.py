"""A trainer written as an asyncio service: `asyncio.run(main())`; the batches reach the step through an async
generator (`async def stream(loader)` yields each batch, then `await asyncio.sleep(0)` so other tasks run), the loop
is `async for step, (x, y) in aenumerate(stream(loader))` inside `async def train_epoch(...)`; a heartbeat task prints
progress from a shared dict every half second, and each epoch's checkpoint is written off the event loop with
`await asyncio.to_thread(torch.save, ...)`. Items are 1-D waveforms turned into log-mel-like spectrograms with
`torch.stft` in `__getitem__` (about 1 ms an item). `--dataloader-workers 2`, `persistent_workers=True`,
`prefetch_factor=4`.

A correct report: the loop is train_epoch()'s `async for`; each of the 6 epochs keeps 50 batches; the edit is
`--dataloader-workers N`.
"""
import argparse
import asyncio
import os
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Waveforms(Dataset):
    def __init__(self, n=1600, length=48000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 6, (n,), generator=g)
        self.length = length
        self.window = torch.hann_window(400)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(int(i))
        label = int(self.labels[i])
        t = torch.arange(self.length) / 16000.0
        wave = torch.sin(2 * torch.pi * (200.0 + 150.0 * label) * t) + 0.7 * torch.randn(self.length, generator=g)
        spec = torch.stft(wave, n_fft=400, hop_length=160, window=self.window, return_complex=True).abs()
        spec = F.avg_pool1d(torch.log1p(spec[:64]).unsqueeze(0), 6)  # 1 x 64 x 50
        return (spec - spec.mean()) / (spec.std() + 1e-5), label


class AudioNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 8, 3, padding=1), nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16, 6)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.mean(dim=(2, 3)))


async def stream(loader):
    for batch in loader:
        yield batch
        await asyncio.sleep(0)  # let the heartbeat and the checkpoint writer run


async def aenumerate(aiterable, start=0):
    i = start
    async for item in aiterable:
        yield i, item
        i += 1


async def heartbeat(state, every=0.5):
    while True:
        await asyncio.sleep(every)
        if state["step"]:
            print(f"  [heartbeat] epoch {state['epoch']} step {state['step']} loss {state['loss']:.4f}", flush=True)


async def train_epoch(model, loader, optimizer, state):
    model.train()
    total, n = 0.0, 0
    async for step, (x, y) in aenumerate(stream(loader)):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total, n = total + loss.item(), n + 1
        state.update(step=step + 1, loss=total / n)
    return total / n, n


async def main(args):
    torch.manual_seed(0)
    loader = DataLoader(Waveforms(), batch_size=args.batch_size, shuffle=True, num_workers=args.dataloader_workers,
                        persistent_workers=args.dataloader_workers > 0,
                        prefetch_factor=4 if args.dataloader_workers > 0 else None)
    model = AudioNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    state = {"epoch": 0, "step": 0, "loss": 0.0}
    beat = asyncio.create_task(heartbeat(state))
    with tempfile.TemporaryDirectory() as ckpt_dir:
        for epoch in range(args.epochs):
            state.update(epoch=epoch, step=0)
            t0 = time.time()
            loss, batches = await train_epoch(model, loader, optimizer, state)
            await asyncio.to_thread(torch.save, model.state_dict(), os.path.join(ckpt_dir, f"epoch{epoch}.pt"))
            print(f"epoch {epoch} batches {batches} loss {loss:.4f} time {time.time() - t0:.1f}s", flush=True)
    beat.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataloader-workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=2e-3)
    asyncio.run(main(parser.parse_args()))
