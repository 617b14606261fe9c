import torch
from torch.utils.data import DataLoader, TensorDataset

import fused_ops

loader = DataLoader(TensorDataset(torch.randn(1024, 256)), batch_size=32, num_workers=8)
for (x,) in loader:
    fused_ops.forward(x.cuda())
