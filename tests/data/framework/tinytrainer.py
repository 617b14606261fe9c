"""A stand-in for a framework's trainer (Lightning's `Trainer.fit`): installed code, outside the user's
script and its own modules, so kernprof traces none of its lines. The tests put this folder on PYTHONPATH.
Like Lightning, it checks two validation batches before it trains, and validates after every epoch."""
import torch


class Trainer:
    def __init__(self, max_epochs=1):
        self.max_epochs = max_epochs

    def fit(self, module, loader, val_loader=None):
        optimizer = module.configure_optimizers()
        self.validate(module, val_loader, batches=2)  # the sanity check
        for epoch in range(self.max_epochs):
            for batch in loader:
                loss = module.training_step(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch} done, loss {loss.item():.3f}", flush=True)
            self.validate(module, val_loader)

    @staticmethod
    def validate(module, val_loader, batches=None):
        if val_loader is None:
            return
        with torch.no_grad():
            for i, batch in enumerate(val_loader):
                if i == batches:
                    break
                module.training_step(batch)
