"""DataLoader re-created inside the epoch loop every epoch (common in tutorials)."""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageOps
from torch.utils.data import DataLoader, Dataset

EPOCHS = 4
BATCH_SIZE = 64


class RandomImageDataset(Dataset):
    def __init__(self, n=2000):
        rng = np.random.default_rng(42)
        self.imgs = rng.integers(0, 256, size=(n, 44, 44, 3), dtype=np.uint8)
        self.labels = rng.integers(0, 10, size=n)

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, idx):
        img = Image.fromarray(self.imgs[idx])
        if np.random.rand() < 0.5:
            img = ImageOps.mirror(img)
        img = img.rotate(np.random.uniform(-10, 10)).resize((32, 32))
        x = np.asarray(img, dtype=np.float32) / 255.0
        for _ in range(3):
            x = np.clip(x + np.random.normal(0, 0.02, x.shape).astype(np.float32), 0, 1)
        return torch.from_numpy(x).permute(2, 0, 1).contiguous(), self.labels[idx]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3)
        self.conv2 = nn.Conv2d(16, 32, 3)
        self.fc1 = nn.Linear(32 * 6 * 6, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


ds = RandomImageDataset()
net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for epoch in range(EPOCHS):
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
    start = time.time()
    running_loss = 0.0
    n = 0
    for i, (inputs, labels) in enumerate(loader):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        n += 1
    print(f"EPOCH {epoch} batches={n} time={time.time() - start:.2f}s loss={running_loss / n:.3f}")

print("Finished Training")
