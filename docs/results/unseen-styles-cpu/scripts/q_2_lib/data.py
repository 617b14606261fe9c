"""Datasets and the loader factory: the training script only says how many workers it wants."""
import torch
from torch.utils.data import DataLoader, Dataset, random_split


class Waveforms(Dataset):
    """1-D signals of 4 classes (sine, square, saw, noise bursts), with a per-item FFT low-pass as CPU work."""

    def __init__(self, n=6000, length=1024, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 4, (n,), generator=g)
        self.freq = torch.rand(n, generator=g) * 20 + 2
        self.phase = torch.rand(n, generator=g) * 6.28
        self.noise = torch.randn(n, length, generator=g) * 0.5
        self.t = torch.linspace(0, 1, length)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        y = int(self.labels[i])
        w = 6.28 * self.freq[i] * self.t + self.phase[i]
        clean = [torch.sin(w), torch.sign(torch.sin(w)), (w % 6.28) / 3.14 - 1, torch.sin(w) * (self.t > 0.5)][y]
        x = clean + self.noise[i]
        for _ in range(8):  # a low-pass, eight times over: the "decoding" of this data set
            spec = torch.fft.rfft(x)
            spec[200:] *= 0.5
            x = torch.fft.irfft(spec, n=x.numel())
        return x.unsqueeze(0), y


def build_loaders(batch_size=64, num_workers=0, val_fraction=0.1, seed=0):
    """Train and validation loaders over one data set split by `random_split` (two `Subset`s)."""
    full = Waveforms(seed=seed)
    n_val = int(len(full) * val_fraction)
    train_set, val_set = random_split(full, [len(full) - n_val, n_val],
                                      generator=torch.Generator().manual_seed(seed))
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                              drop_last=True, persistent_workers=num_workers > 0)
    val_loader = DataLoader(val_set, batch_size=256, shuffle=False, num_workers=num_workers)
    return train_loader, val_loader
