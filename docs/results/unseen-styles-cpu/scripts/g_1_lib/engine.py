"""The reference-recipe layout: the epoch loop lives in a module of its own, and a metric logger wraps the loader."""
import time
from collections import defaultdict

import torch


class MetricLogger:
    def __init__(self):
        self.meters = defaultdict(list)

    def update(self, **kwargs):
        for k, v in kwargs.items():
            self.meters[k].append(float(v))

    def log_every(self, iterable, print_freq, header=""):
        start, end = time.time(), time.time()
        for i, obj in enumerate(iterable):
            data_time = time.time() - end
            yield obj
            if i % print_freq == 0:
                print(f"{header} [{i}/{len(iterable)}] data {data_time:.4f}s", flush=True)
            end = time.time()
        print(f"{header} took {time.time() - start:.2f}s", flush=True)


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, print_freq=50):
    model.train()
    logger = MetricLogger()
    for image, target in logger.log_every(data_loader, print_freq, f"Epoch: [{epoch}]"):
        image, target = image.to(device), target.to(device)
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        logger.update(loss=loss.item())
    return sum(logger.meters["loss"]) / len(logger.meters["loss"])


@torch.inference_mode()
def evaluate(model, data_loader, device):
    model.eval()
    correct = total = 0
    for image, target in data_loader:
        correct += (model(image.to(device)).argmax(1) == target.to(device)).sum().item()
        total += len(target)
    return correct / total
