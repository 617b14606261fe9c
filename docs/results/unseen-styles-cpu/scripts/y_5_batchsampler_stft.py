"""Audio-like: a spectrogram computed in __getitem__ with torch.stft (+ mel-ish pooling, SpecAugment-style masks),
an explicit BatchSampler(RandomSampler, drop_last=True) passed as batch_sampler=, dataset length not a multiple
of the batch, prefetch_factor set explicitly. Loader kwargs are held in a module-level dict LOADER_KW."""
import sys
import torch
import torch.nn as nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

N_ITEMS = 1003
BATCH = 40
LOADER_KW = dict(num_workers=2, prefetch_factor=4, persistent_workers=False)


class ToneClips(Dataset):
    def __init__(self, n=N_ITEMS, sr=8000, seconds=1.0):
        self.n, self.sr, self.len = n, sr, int(sr * seconds)
        self.window = torch.hann_window(256)

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        label = idx % 5
        t = torch.arange(self.len) / self.sr
        f0 = 200.0 * (label + 1) + 20 * torch.rand(1, generator=g)
        wav = torch.sin(2 * torch.pi * f0 * t) + 0.5 * torch.randn(self.len, generator=g)
        spec = torch.stft(wav, n_fft=256, hop_length=32, window=self.window, return_complex=True).abs()
        spec = torch.log1p(spec)
        mel = spec[:128].reshape(32, 4, -1).mean(1)
        f = int(torch.randint(0, 28, (1,), generator=g))
        mel[f:f + 4] = 0
        tt = int(torch.randint(0, mel.shape[1] - 20, (1,), generator=g))
        mel[:, tt:tt + 20] = 0
        return mel.unsqueeze(0), label


def build_model():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 5))


def main(epochs):
    torch.manual_seed(0)
    ds = ToneClips()
    bsampler = BatchSampler(RandomSampler(ds), batch_size=BATCH, drop_last=True)
    loader = DataLoader(ds, batch_sampler=bsampler, **LOADER_KW)
    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        model.train()
        total, count = 0.0, 0
        for spec, y in loader:
            loss = nn.functional.cross_entropy(model(spec), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            count += 1
        print(f"epoch {epoch}: {count} batches, loss {total / count:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
