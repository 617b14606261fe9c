"""PyTorch-tutorial style: a model class, then the data and the training loop at module level, no main()."""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 128

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((4,), float(i % 3)), i % 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


trainloader = DataLoader(Slow(), batch_size=8, shuffle=True, num_workers=1)
net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(6):  # the first traced, five to time two counts in, on a busy machine too
    for inputs, labels in trainloader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(inputs), labels).backward()
        optimizer.step()
print("trained")
