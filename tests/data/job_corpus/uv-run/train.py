import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

BATCH = 256


def build_loader(root):
    tfm = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])
    ds = datasets.CIFAR10(root, train=True, transform=tfm)
    return DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=4, pin_memory=True,
                      persistent_workers=True)


if __name__ == "__main__":
    model = torch.hub.load("pytorch/vision", "resnet18", num_classes=10).cuda()
    for x, y in build_loader("./data"):
        model(x.cuda())
