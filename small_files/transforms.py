"""The per-image work of lesson 9's trainer on many small files, on the CPU: one home, so that the
trainer and the read-time measurements (measure.py, readtime.py) decode and augment exactly the
same way. The GPU's batched version of the same crop, flip and normalisation is gpu_batch.py."""
from __future__ import annotations

import io
from collections.abc import Callable

import torch
from PIL import Image
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


def read_bytes(path: str) -> bytes:
    """An image file's bytes, undecoded (the loader of a DatasetFolder whose batches are decoded later)."""
    with open(path, "rb") as f:
        return f.read()


def decode_image(data: bytes) -> Image.Image:
    """JPEG (or any PIL format) bytes to an RGB image, as ImageFolder's loader opens a file."""
    return Image.open(io.BytesIO(data)).convert("RGB")


def decode_images(jpegs: list[bytes], where: torch.Tensor | None = None) -> list[Image.Image]:
    """Each sample's image: its JPEG decoded, or, from tiled shards, cut from its decoded sheet
    (`where`: per sample, the sheet's number among `jpegs`, then x, y, width, height)."""
    if where is None:
        return [decode_image(j) for j in jpegs]
    sheets = [decode_image(j) for j in jpegs]
    return [sheets[n].crop((x, y, x + w, y + h)) for n, x, y, w, h in where.tolist()]


class DecodeBatch:
    """Decode and transform a batch of image bytes in a worker: (images, labels) tensors."""

    def __init__(self, transform: Callable) -> None:
        self.transform = transform

    def __call__(self, jpegs: list[bytes], labels: list[int],
                 where: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.stack([self.transform(im) for im in decode_images(jpegs, where)]),
                torch.tensor(labels, dtype=torch.int64))
