import argparse, time
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
import lightning as L

class SlowReads(Dataset):
    def __init__(self, n): self.n = n
    def __len__(self): return self.n
    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.full((8,), float(i % 5)), i % 5

class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 5)
    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)
    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--items", type=int, default=192); ap.add_argument("--accelerator", default="cpu"); a = ap.parse_args()
    trainer = L.Trainer(max_epochs=a.epochs, accelerator=a.accelerator, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Classifier(), DataLoader(SlowReads(a.items), batch_size=8, shuffle=True), DataLoader(SlowReads(a.items), batch_size=8))
    print("fit done")
