import os

import torch
from torch.utils.data import DataLoader, TensorDataset

# Use every CPU Slurm gave us for loading.
num_workers = int(os.environ["SLURM_CPUS_PER_TASK"])


def main():
    data = TensorDataset(torch.randn(4096, 3, 32, 32), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=128, shuffle=True, num_workers=num_workers, pin_memory=True)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
