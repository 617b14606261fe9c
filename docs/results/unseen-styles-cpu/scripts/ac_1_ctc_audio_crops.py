"""Speech-style CTC training on synthetic 'recordings': a few long waveforms are kept in memory and every item is a
random crop of 0.6-1.0 s from one of them (as wav2vec/keyword-spotting pipelines do), turned into log-mel frames in
__getitem__ with random gain, noise and a time mask. The sampler is RandomSampler(replacement=True, num_samples=...),
so an 'epoch' is a fixed number of crops. The collate pads the frames and concatenates the targets, and returns the
lengths nn.CTCLoss needs."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler

SR = 8000
N_FFT, HOP, N_MELS = 256, 80, 40
BLANK = 0
N_SYMBOLS = 5  # tones 1..5, 0 is the CTC blank


def synth_recordings(n, seconds, seed):
    """Each recording: noise with short tone bursts; burst k has a pitch that encodes its symbol."""
    rng = np.random.default_rng(seed)
    waves, events = [], []
    length = int(seconds * SR)
    for _ in range(n):
        x = 0.05 * rng.standard_normal(length).astype(np.float32)
        ev, t = [], int(rng.uniform(0.02, 0.1) * SR)
        while t < length - int(0.12 * SR):
            sym = int(rng.integers(1, N_SYMBOLS + 1))
            dur = int(rng.uniform(0.06, 0.1) * SR)
            tt = np.arange(dur) / SR
            x[t:t + dur] += (0.5 * np.sin(2 * np.pi * 350 * sym * tt) * np.hanning(dur)).astype(np.float32)
            ev.append((t, t + dur, sym))
            t += dur + int(rng.uniform(0.04, 0.12) * SR)
        waves.append(x)
        events.append(np.array(ev, dtype=np.int64))
    return waves, events


def mel_filterbank(n_fft, n_mels, sr):
    mel = lambda f: 2595 * np.log10(1 + f / 700)
    inv = lambda m: 700 * (10 ** (m / 2595) - 1)
    pts = inv(np.linspace(mel(0), mel(sr / 2), n_mels + 2))
    bins = np.floor((n_fft + 1) * pts / sr).astype(int)
    fb = np.zeros((n_mels, n_fft // 2 + 1), np.float32)
    for m in range(1, n_mels + 1):
        lo, c, hi = bins[m - 1], bins[m], bins[m + 1]
        fb[m - 1, lo:c] = (np.arange(lo, c) - lo) / max(c - lo, 1)
        fb[m - 1, c:hi] = (hi - np.arange(c, hi)) / max(hi - c, 1)
    return torch.from_numpy(fb)


class RandomCrops(Dataset):
    def __init__(self, waves, events, min_s=0.6, max_s=1.0):
        self.waves, self.events = waves, events
        self.min_len, self.max_len = int(min_s * SR), int(max_s * SR)
        self.fb = mel_filterbank(N_FFT, N_MELS, SR)
        self.window = torch.hann_window(N_FFT)

    def __len__(self):
        return len(self.waves)

    def __getitem__(self, idx):
        wave, ev = self.waves[idx], self.events[idx]
        n = np.random.randint(self.min_len, self.max_len + 1)
        start = np.random.randint(0, len(wave) - n)
        clip = torch.from_numpy(wave[start:start + n].copy())
        clip = clip * float(np.random.uniform(0.6, 1.4)) + 0.01 * torch.randn(n)
        spec = torch.stft(clip, N_FFT, HOP, window=self.window, return_complex=True).abs().pow(2)
        feats = torch.log(self.fb @ spec + 1e-6).T  # (frames, mels)
        t0 = np.random.randint(0, max(1, feats.shape[0] - 8))
        feats[t0:t0 + 8] = feats.mean()  # SpecAugment-like time mask
        inside = (ev[:, 0] >= start) & (ev[:, 1] <= start + n)
        return feats, torch.from_numpy(ev[inside, 2])


def ctc_collate(batch):
    feats, targets = zip(*batch)
    input_lengths = torch.tensor([f.shape[0] for f in feats])
    target_lengths = torch.tensor([t.numel() for t in targets])
    padded = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    return padded, torch.cat(targets), input_lengths, target_lengths


class TinyASR(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(N_MELS, hidden, 5, stride=2, padding=2), nn.GELU(),
                                  nn.Conv1d(hidden, hidden, 3, padding=1), nn.GELU())
        self.rnn = nn.GRU(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, N_SYMBOLS + 1)

    def forward(self, x, lengths):
        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        h, _ = self.rnn(h)
        return self.out(h).log_softmax(-1), (lengths + 1) // 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--crops-per-epoch", type=int, default=1280)
    p.add_argument("--num-workers", type=int, default=1)
    p.add_argument("--lr", type=float, default=2e-3)
    args = p.parse_args()

    torch.manual_seed(0)
    np.random.seed(0)
    waves, events = synth_recordings(24, 30.0, seed=1)
    train_set = RandomCrops(waves, events)
    sampler = RandomSampler(train_set, replacement=True, num_samples=args.crops_per_epoch)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, collate_fn=ctc_collate,
                        num_workers=args.num_workers, drop_last=True)

    model = TinyASR()
    ctc = nn.CTCLoss(blank=BLANK, zero_infinity=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, n = 0.0, 0
        for feats, targets, in_lens, tgt_lens in loader:
            log_probs, out_lens = model(feats, in_lens)
            loss = ctc(log_probs.transpose(0, 1), targets, out_lens, tgt_lens)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            total += loss.item()
            n += 1
        print(f"epoch {epoch}: {n} batches, ctc loss {total / n:.4f}", flush=True)


if __name__ == "__main__":
    main()
