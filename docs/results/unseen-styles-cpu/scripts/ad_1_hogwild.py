"""pytorch/examples' mnist_hogwild layout (main.py + train.py): the model is put in shared memory with
`model.share_memory()`, `--num-processes` torch.multiprocessing Processes (start method 'spawn', forced, as the
example does) each train it Hogwild-style with their own DataLoader and SGD optimizer from `train()` in the module
beside this script (ad_1_hogwild_train.py); once all have joined, the main process tests the model. MNIST is
replaced by synthetic 28x28 "digits" (a class-dependent stroke pattern plus noise) built in memory, as the
network is off. The loader kwargs are the example's: batch_size and shuffle, `num_workers`/`pin_memory` only
`if use_cuda`."""
import argparse

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from ad_1_hogwild_train import test, train

# Training settings
parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                    help='input batch size for training (default: 64)')
parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                    help='input batch size for testing (default: 1000)')
parser.add_argument('--epochs', type=int, default=3, metavar='N',
                    help='number of epochs to train (default: 3)')
parser.add_argument('--lr', type=float, default=0.01, metavar='LR',
                    help='learning rate (default: 0.01)')
parser.add_argument('--momentum', type=float, default=0.5, metavar='M',
                    help='SGD momentum (default: 0.5)')
parser.add_argument('--seed', type=int, default=1, metavar='S',
                    help='random seed (default: 1)')
parser.add_argument('--log-interval', type=int, default=50, metavar='N',
                    help='how many batches to wait before logging training status')
parser.add_argument('--num-processes', type=int, default=2, metavar='N',
                    help='how many training processes to use (default: 2)')
parser.add_argument('--cuda', action='store_true', default=False,
                    help='enables CUDA training')
parser.add_argument('--dry-run', action='store_true', default=False,
                    help='quickly check a single pass')
parser.add_argument('--train-size', type=int, default=40000)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def synthetic_digits(n, seed):
    """Stand-in for datasets.MNIST(..., transform=Normalize((0.1307,), (0.3081,))): each class draws a bar at its own
    angle and offset, plus noise."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(28.0), torch.arange(28.0), indexing='ij')
    angle = labels.float()[:, None, None] * (3.14159 / 10)
    dist = (xx - 14) * torch.cos(angle) + (yy - 14) * torch.sin(angle) - (labels.float()[:, None, None] - 4.5)
    images = torch.exp(-dist ** 2 / 4.0) + 1.5 * torch.rand(n, 28, 28, generator=g)
    images = (images - 0.1307) / 0.3081
    return TensorDataset(images.unsqueeze(1), labels)


if __name__ == '__main__':
    args = parser.parse_args()

    use_cuda = args.cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    dataset1 = synthetic_digits(args.train_size, seed=0)
    dataset2 = synthetic_digits(2000, seed=1)
    kwargs = {'batch_size': args.batch_size,
              'shuffle': True}
    if use_cuda:
        kwargs.update({'num_workers': 1,
                       'pin_memory': True,
                       })

    torch.manual_seed(args.seed)
    mp.set_start_method('spawn', force=True)

    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here

    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device,
                                           dataset1, kwargs))
        # We first train the model across `num_processes` processes
        p.start()
        processes.append(p)
    for p in processes:
        p.join()

    # Once training is complete, we can test the model
    test(args, model, device, dataset2, kwargs)
