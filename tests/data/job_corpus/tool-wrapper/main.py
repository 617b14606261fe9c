import torch
from torch.utils.data import DataLoader, TensorDataset

LOADER_WORKERS = 6


def run(epochs=5):
    data = TensorDataset(torch.randn(4096, 64), torch.randn(4096, 1))
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=LOADER_WORKERS)
    model = torch.nn.Linear(64, 1).cuda()
    for _ in range(epochs):
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x.cuda()), y.cuda()).backward()


if __name__ == "__main__":
    run()
