import argparse

import torch
import torchvision
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser(description="ResNet training")
parser.add_argument("data", metavar="DIR")
parser.add_argument("-a", "--arch", default="resnet18")
parser.add_argument("-j", "--workers", default=4, type=int, metavar="N",
                    help="number of data loading workers (default: 4)")
parser.add_argument("-b", "--batch-size", default=256, type=int)


def main():
    args = parser.parse_args()
    dataset = torchvision.datasets.ImageFolder(args.data, torchvision.transforms.ToTensor())
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, pin_memory=True)
    model = torchvision.models.__dict__[args.arch]().cuda()
    for images, target in loader:
        model(images.cuda(non_blocking=True))


if __name__ == "__main__":
    main()
