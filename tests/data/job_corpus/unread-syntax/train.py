import torch
from torch.utils.data import DataLoader

def main(:
    loader = DataLoader(ds, num_workers=64)
