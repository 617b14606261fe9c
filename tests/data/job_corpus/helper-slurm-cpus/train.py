import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

from helpers import cpus_for_loader, seed_everything


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    return p.parse_args()


def main():
    args = parse()
    seed_everything(0)
    images = TensorDataset(torch.randn(512, 1, 96, 96), torch.randint(0, 2, (512, 1, 96, 96)).float())
    loader = DataLoader(images, batch_size=16, shuffle=True,
                        num_workers=cpus_for_loader(), pin_memory=True)
    net = torch.nn.Conv2d(1, 1, 3, padding=1).cuda()
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    for _ in range(args.epochs):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.binary_cross_entropy_with_logits(net(x.cuda()), y.cuda()).backward()
            opt.step()


if __name__ == "__main__":
    main()
