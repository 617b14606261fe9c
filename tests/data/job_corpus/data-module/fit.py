"""A trainer library's data-module style (written for this corpus): the loader's workers are given
to the module's constructor, and its DataLoader reads them from an attribute."""
import torch
from torch.utils.data import DataLoader, TensorDataset


class DigitsData:
    def __init__(self, batch_size=32, num_workers=0):
        self.batch_size = batch_size
        self.num_workers = num_workers

    def setup(self):
        self.train = TensorDataset(torch.randn(6000, 1, 28, 28), torch.randint(0, 10, (6000,)))

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True,
                          num_workers=self.num_workers, pin_memory=True)


def main():
    data = DigitsData(batch_size=128,
                      num_workers=12)
    data.setup()
    model = torch.nn.Linear(784, 10).cuda()
    for x, y in data.train_dataloader():
        torch.nn.functional.cross_entropy(model(x.cuda().flatten(1)), y.cuda()).backward()


if __name__ == "__main__":
    main()
