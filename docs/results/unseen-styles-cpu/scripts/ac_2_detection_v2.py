"""Object detection in the layout of torchvision's detection tutorial/references: a Dataset that returns a PIL image
and a target dict, transforms from torchvision.transforms.v2 that move the boxes with the image (tv_tensors),
`collate_fn` returning tuple(zip(*batch)), a BatchSampler over a RandomSampler passed as batch_sampler=, a model that
returns a dict of losses in train mode, `losses = sum(loss for loss in loss_dict.values())`, and a LinearLR warm-up
made inside train_one_epoch for epoch 0."""
import argparse
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageDraw
from torchvision import tv_tensors
from torchvision.transforms import v2 as T

IMG = 96
GRID = 12
CLASSES = ("background", "box", "disc", "wedge")


class Shapes(torch.utils.data.Dataset):
    def __init__(self, n, transforms=None, seed=0):
        rng = np.random.default_rng(seed)
        self.specs = []
        for _ in range(n):
            objs = []
            for _ in range(rng.integers(1, 4)):
                w, h = rng.integers(18, 40, 2)
                x0, y0 = rng.integers(0, IMG - w), rng.integers(0, IMG - h)
                objs.append((int(rng.integers(1, 4)), int(x0), int(y0), int(x0 + w), int(y0 + h),
                             tuple(int(c) for c in rng.integers(60, 255, 3))))
            self.specs.append((tuple(int(c) for c in rng.integers(0, 60, 3)), objs))
        self.transforms = transforms

    def __len__(self):
        return len(self.specs)

    def __getitem__(self, idx):
        bg, objs = self.specs[idx]
        img = Image.new("RGB", (IMG, IMG), bg)
        draw = ImageDraw.Draw(img)
        for label, x0, y0, x1, y1, colour in objs:
            if label == 1:
                draw.rectangle((x0, y0, x1, y1), fill=colour)
            elif label == 2:
                draw.ellipse((x0, y0, x1, y1), fill=colour)
            else:
                draw.polygon([(x0, y1), (x1, y1), ((x0 + x1) // 2, y0)], fill=colour)
        target = {
            "boxes": tv_tensors.BoundingBoxes([o[1:5] for o in objs], format="XYXY", canvas_size=(IMG, IMG),
                                            dtype=torch.float32),
            "labels": torch.tensor([o[0] for o in objs]),
            "image_id": idx,
        }
        if self.transforms is not None:
            img, target = self.transforms(img, target)
        return img, target


def get_transform(train):
    ops = [T.ToImage()]
    if train:
        ops += [T.RandomPhotometricDistort(p=0.5), T.RandomHorizontalFlip(0.5),
                T.RandomAffine(degrees=0, translate=(0.08, 0.08), scale=(0.9, 1.1))]
    ops += [T.ToDtype(torch.float32, scale=True), T.SanitizeBoundingBoxes()]
    return T.Compose(ops)


def collate_fn(batch):
    return tuple(zip(*batch))


class GridDetector(nn.Module):
    """YOLOv1-like: each grid cell predicts objectness, a class and a box; the losses are computed in forward()."""

    def __init__(self, num_classes=len(CLASSES)):
        super().__init__()
        c = [3, 32, 64, 96]
        layers = []
        for a, b in zip(c, c[1:]):
            layers += [nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(), nn.MaxPool2d(2)]
        self.backbone = nn.Sequential(*layers)  # 96 -> 12
        self.head = nn.Conv2d(c[-1], 1 + num_classes + 4, 1)

    def encode(self, targets):
        n = len(targets)
        obj = torch.zeros(n, GRID, GRID)
        cls = torch.zeros(n, GRID, GRID, dtype=torch.long)
        box = torch.zeros(n, 4, GRID, GRID)
        cell = IMG / GRID
        for i, t in enumerate(targets):
            for (x0, y0, x1, y1), lab in zip(t["boxes"].tolist(), t["labels"].tolist()):
                cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                gx, gy = min(int(cx // cell), GRID - 1), min(int(cy // cell), GRID - 1)
                obj[i, gy, gx] = 1.0
                cls[i, gy, gx] = lab
                box[i, :, gy, gx] = torch.tensor([cx / cell - gx, cy / cell - gy, (x1 - x0) / IMG, (y1 - y0) / IMG])
        return obj, cls, box

    def forward(self, images, targets=None):
        x = torch.stack(list(images))
        out = self.head(self.backbone(x))
        if targets is None:
            return out
        obj, cls, box = self.encode(targets)
        mask = obj.bool()
        return {
            "loss_objectness": F.binary_cross_entropy_with_logits(out[:, 0], obj),
            "loss_classifier": F.cross_entropy(out[:, 1:1 + len(CLASSES)].permute(0, 2, 3, 1)[mask], cls[mask]),
            "loss_box_reg": F.smooth_l1_loss(out[:, -4:].sigmoid().permute(0, 2, 3, 1)[mask],
                                             box.permute(0, 2, 3, 1)[mask]),
        }


def train_one_epoch(model, optimizer, data_loader, epoch, print_freq):
    model.train()
    lr_scheduler = None
    if epoch == 0:
        warmup_iters = min(50, len(data_loader) - 1)
        lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.001, total_iters=warmup_iters)
    running, seen = 0.0, 0
    for i, (images, targets) in enumerate(data_loader):
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        loss_value = losses.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training\n{loss_dict}")
            sys.exit(1)
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        if lr_scheduler is not None:
            lr_scheduler.step()
        running += loss_value
        seen += 1
        if i % print_freq == 0:
            parts = "  ".join(f"{k}: {v.item():.4f}" for k, v in loss_dict.items())
            print(f"Epoch: [{epoch}] [{i:3d}/{len(data_loader)}] loss: {loss_value:.4f}  {parts}")
    return running / seen, seen


def main():
    parser = argparse.ArgumentParser(description="PyTorch Detection Training")
    parser.add_argument("-b", "--batch-size", default=16, type=int)
    parser.add_argument("--epochs", default=3, type=int)
    parser.add_argument("-j", "--workers", default=2, type=int, help="number of data loading workers (default: 2)")
    parser.add_argument("--lr", default=0.02, type=float)
    parser.add_argument("--print-freq", default=20, type=int)
    args = parser.parse_args()

    torch.manual_seed(0)
    dataset = Shapes(960, get_transform(train=True), seed=0)
    train_sampler = torch.utils.data.RandomSampler(dataset)
    train_batch_sampler = torch.utils.data.BatchSampler(train_sampler, args.batch_size, drop_last=True)
    data_loader = torch.utils.data.DataLoader(dataset, batch_sampler=train_batch_sampler,
                                              num_workers=args.workers, collate_fn=collate_fn)

    model = GridDetector()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=0.9, weight_decay=1e-4)
    lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.1)
    for epoch in range(args.epochs):
        mean_loss, n = train_one_epoch(model, optimizer, data_loader, epoch, args.print_freq)
        lr_scheduler.step()
        print(f"epoch {epoch}: {n} batches, mean loss {mean_loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
