"""pytorch/examples imagenet/main.py style on torchvision.datasets.FakeData: `-j/--workers` (default 4, "number of
data loading workers"), transforms.Compose([RandomResizedCrop, RandomHorizontalFlip, ColorJitter, ToTensor,
Normalize]) applied per PIL image, `shuffle=(train_sampler is None)`, a torchvision resnet18(weights=None,
num_classes=10), and `train(train_loader, model, criterion, optimizer, epoch, args)` with AverageMeter/ProgressMeter.

A correct report: the loop is train()'s `for i, (images, target) in enumerate(train_loader):`; 2 epochs of 12 batches
(384 FakeData images, batch 32); the count comes from `-j/--workers` (default 4): the edit is `--workers N` (or `-j N`)
on the command line; the DataLoader line reads `num_workers=args.workers`.
"""
import argparse
import time

import torch
import torch.nn as nn
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms

parser = argparse.ArgumentParser(description="PyTorch ImageNet-style Training (FakeData)")
parser.add_argument("-j", "--workers", default=4, type=int, metavar="N", help="number of data loading workers (default: 4)")
parser.add_argument("--epochs", default=2, type=int, metavar="N")
parser.add_argument("-b", "--batch-size", default=32, type=int, metavar="N")
parser.add_argument("--lr", "--learning-rate", default=0.05, type=float, dest="lr")
parser.add_argument("-p", "--print-freq", default=4, type=int)


class AverageMeter:
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.reset()

    def reset(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        return ("{name} {val" + self.fmt + "} ({avg" + self.fmt + "})").format(**self.__dict__)


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        self.num_batches, self.meters, self.prefix = num_batches, meters, prefix

    def display(self, batch):
        print("\t".join([self.prefix + f"[{batch}/{self.num_batches}]"] + [str(m) for m in self.meters]))


def train(train_loader, model, criterion, optimizer, epoch, args):
    batch_time = AverageMeter("Time", ":6.3f")
    data_time = AverageMeter("Data", ":6.3f")
    losses = AverageMeter("Loss", ":.4e")
    progress = ProgressMeter(len(train_loader), [batch_time, data_time, losses], prefix=f"Epoch: [{epoch}]")
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        data_time.update(time.time() - end)
        output = model(images)
        loss = criterion(output, target)
        losses.update(loss.item(), images.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        end = time.time()
        if i % args.print_freq == 0:
            progress.display(i)
    return losses.avg


def main():
    args = parser.parse_args()
    torch.manual_seed(0)
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.FakeData(
        size=384, image_size=(3, 96, 96), num_classes=10,
        transform=transforms.Compose([
            transforms.RandomResizedCrop(32),
            transforms.RandomHorizontalFlip(),
            transforms.ColorJitter(0.4, 0.4, 0.4, 0.1),
            transforms.ToTensor(),
            normalize,
        ]))
    train_sampler = None
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=False, sampler=train_sampler)
    model = models.resnet18(weights=None, num_classes=10)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    print(f"=> workers={args.workers} batches/epoch={len(train_loader)}")
    for epoch in range(args.epochs):
        avg = train(train_loader, model, criterion, optimizer, epoch, args)
        print(f"epoch {epoch} loss {avg:.4f}")


if __name__ == "__main__":
    main()
