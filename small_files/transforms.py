"""The per-image work of lesson 9's trainer on many small files: one home, so that the trainer and
the read-time measurements (measure.py, readtime.py) decode and augment exactly the same way."""
from __future__ import annotations

from torchvision import transforms

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def train_transform(size: int) -> transforms.Compose:
    """Decode-side work per image, as in an ImageNet recipe: crop, flip, tensor, normalise."""
    return transforms.Compose([transforms.RandomResizedCrop(size, antialias=True), transforms.RandomHorizontalFlip(),
                               transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def test_transform(size: int) -> transforms.Compose:
    """The evaluation view: resize, centre crop, tensor, normalise."""
    return transforms.Compose([transforms.Resize(size, antialias=True), transforms.CenterCrop(size),
                               transforms.ToTensor(), transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
