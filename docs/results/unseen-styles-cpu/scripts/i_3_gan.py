"""A small GAN in the style of the PyTorch DCGAN example and countless GAN tutorials: each batch does a
discriminator step (real + fake, detached) and then a generator step, with two optimisers and two backward calls
per batch; options via argparse with the example's names (--batchSize, --workers, --niter, --nz)."""
import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class RingSamples(Dataset):
    """Points on 8 noisy rings, rendered into a 1x16x16 heat map per item (the loader's CPU work)."""

    def __init__(self, n, seed=0):
        self.n, self.seed = n, seed
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 16), torch.linspace(-1, 1, 16), indexing="ij")
        self.grid = torch.stack([xs, ys], -1)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 65537 + i)
        img = torch.zeros(16, 16)
        for _ in range(12):
            k = int(torch.randint(0, 8, (1,), generator=g))
            angle = torch.tensor(k * torch.pi / 4)
            centre = 0.6 * torch.stack([angle.cos(), angle.sin()]) + 0.05 * torch.randn(2, generator=g)
            img += torch.exp(-((self.grid - centre) ** 2).sum(-1) / 0.02)
        for _ in range(25):
            img = 0.6 * img + 0.1 * (img.roll(1, 0) + img.roll(-1, 0) + img.roll(1, 1) + img.roll(-1, 1))
        img = img / (img.max() + 1e-6) * 2 - 1
        return img.unsqueeze(0)


class Generator(nn.Module):
    def __init__(self, nz):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, 128), nn.ReLU(True), nn.Linear(128, 256), nn.ReLU(True),
                                  nn.Linear(256, 256), nn.Tanh())

    def forward(self, z):
        return self.main(z).view(-1, 1, 16, 16)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Flatten(), nn.Linear(256, 256), nn.LeakyReLU(0.2, True),
                                  nn.Linear(256, 64), nn.LeakyReLU(0.2, True), nn.Linear(64, 1))

    def forward(self, x):
        return self.main(x).view(-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=1, help="number of data loading workers")
    parser.add_argument("--batchSize", type=int, default=64, help="input batch size")
    parser.add_argument("--nz", type=int, default=32, help="size of the latent z vector")
    parser.add_argument("--niter", type=int, default=3, help="number of epochs to train for")
    parser.add_argument("--lr", type=float, default=0.0002)
    parser.add_argument("--beta1", type=float, default=0.5)
    parser.add_argument("--n", type=int, default=3072)
    parser.add_argument("--manualSeed", type=int, default=999)
    opt = parser.parse_args()
    torch.manual_seed(opt.manualSeed)

    dataset = RingSamples(opt.n)
    dataloader = DataLoader(dataset, batch_size=opt.batchSize, shuffle=True, num_workers=opt.workers)

    netG, netD = Generator(opt.nz), Discriminator()
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=opt.lr, betas=(opt.beta1, 0.999))
    fixed_noise = torch.randn(64, opt.nz)

    for epoch in range(opt.niter):
        t0 = time.perf_counter()
        sum_d = sum_g = 0.0
        for i, real in enumerate(dataloader, 0):
            # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            b = real.size(0)
            errD_real = criterion(netD(real), torch.ones(b))
            errD_real.backward()
            noise = torch.randn(b, opt.nz)
            fake = netG(noise)
            errD_fake = criterion(netD(fake.detach()), torch.zeros(b))
            errD_fake.backward()
            optimizerD.step()
            # (2) Update G: maximize log(D(G(z)))
            netG.zero_grad()
            errG = criterion(netD(fake), torch.ones(b))
            errG.backward()
            optimizerG.step()
            sum_d += (errD_real + errD_fake).item()
            sum_g += errG.item()
        with torch.no_grad():
            spread = netG(fixed_noise).std().item()
        print(f"epoch {epoch} loss_D {sum_d / (i + 1):.4f} loss_G {sum_g / (i + 1):.4f} batches {i + 1} "
              f"spread {spread:.3f} ({time.perf_counter() - t0:.1f}s)", flush=True)


if __name__ == "__main__":
    main()
