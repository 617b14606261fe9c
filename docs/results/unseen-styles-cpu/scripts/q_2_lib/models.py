import torch.nn as nn


def conv1d_classifier(n_classes=4):
    return nn.Sequential(
        nn.Conv1d(1, 16, 9, stride=2, padding=4), nn.ReLU(),
        nn.Conv1d(16, 32, 9, stride=2, padding=4), nn.ReLU(),
        nn.Conv1d(32, 32, 9, stride=4, padding=4), nn.ReLU(),
        nn.AdaptiveAvgPool1d(8), nn.Flatten(), nn.Linear(256, n_classes))
