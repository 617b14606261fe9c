"""fast.ai course part 2 (2022) "miniai" Learner, as its notebooks and the many repos built on it write it: a
`Learner` whose `fit()` -> `_fit()` -> `one_epoch(training)` -> `_one_epoch()` -> `_one_batch()` are wrapped by a
`with_cbs('...')` decorator class that runs `before_*`/`after_*` callbacks and swallows `Cancel*Exception`; the
batch loop is `for self.iter,self.batch in enumerate(self.dl): self._one_batch()`, the SAME loop serving the
training DataLoader and (under `torch.no_grad()(self.one_epoch)(False)`) the validation one; predict, get_loss,
backward, step and zero_grad are not methods at all but reach `TrainCB` through `__getattr__` + `partial(self.callback,
name)`. Data: a dict-of-lists dataset of PIL 28x28 images (synthetic "fashion" silhouettes) turned to tensors per
item by an `inplace`-style transform, `collate_dict`, `DataLoaders.from_dd(tds, bs, num_workers=4)`. Module-level
notebook code, settings as globals; MetricsCB (accuracy by hand), a one-cycle LR scheduler callback."""
import math
import time
from functools import partial
from operator import attrgetter, itemgetter

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn, optim
from torch.utils.data import DataLoader, default_collate
import torchvision.transforms.functional as TF

torch.manual_seed(1)
bs = 256
num_workers = 4
epochs = 12
lr = 2e-2
n_train, n_valid = 24000, 2000


# ---------------------------------------------------------------- data (the HF `datasets` dict of lists, by hand)
def make_split(n, seed):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:28, 0:28]
    images, labels = [], []
    for _ in range(n):
        c = int(rng.integers(0, 10))
        w, h = 4 + (c % 5) * 2, 6 + (c // 5) * 8
        mask = (abs(xx - 14 + rng.integers(-2, 3)) < w) & (abs(yy - 14 + rng.integers(-2, 3)) < h)
        img = mask * (120 + 12 * c) + rng.normal(0, 110, size=(28, 28))
        images.append(Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)))
        labels.append(c)
    return {"image": images, "label": labels}


class DictDataset:
    def __init__(self, d, tfm=None): self.d, self.tfm, self.features = d, tfm, list(d)
    def __len__(self): return len(self.d["label"])
    def __getitem__(self, i):
        item = {k: v[i] for k, v in self.d.items()}
        return self.tfm(item) if self.tfm else item


def transformi(b):
    b["image"] = TF.to_tensor(b["image"]).flatten() - 0.5
    return b


def collate_dict(ds):
    get = itemgetter(*ds.features)
    def _f(b): return get(default_collate(b))
    return _f


def get_dls(train_ds, valid_ds, bs, **kwargs):
    return (DataLoader(train_ds, batch_size=bs, shuffle=True, **kwargs),
            DataLoader(valid_ds, batch_size=bs * 2, **kwargs))


class DataLoaders:
    def __init__(self, *dls): self.train, self.valid = dls[:2]

    @classmethod
    def from_dd(cls, dd, batch_size, **kwargs):
        f = collate_dict(dd["train"])
        return cls(*get_dls(*dd.values(), bs=batch_size, collate_fn=f, **kwargs))


# ---------------------------------------------------------------- the Learner
class CancelFitException(Exception): pass
class CancelBatchException(Exception): pass
class CancelEpochException(Exception): pass


class Callback(): order = 0


def run_cbs(cbs, method_nm, learn=None):
    for cb in sorted(cbs, key=attrgetter('order')):
        method = getattr(cb, method_nm, None)
        if method is not None: method(learn)


class with_cbs:
    def __init__(self, nm): self.nm = nm
    def __call__(self, f):
        def _f(o, *args, **kwargs):
            try:
                o.callback(f'before_{self.nm}')
                f(o, *args, **kwargs)
                o.callback(f'after_{self.nm}')
            except globals()[f'Cancel{self.nm.title()}Exception']: pass
            finally: o.callback(f'cleanup_{self.nm}')
        return _f


class Learner():
    def __init__(self, model, dls=(0,), loss_func=F.mse_loss, lr=0.1, cbs=None, opt_func=optim.SGD):
        cbs = list(cbs or [])
        self.model, self.dls, self.loss_func, self.lr, self.cbs, self.opt_func = model, dls, loss_func, lr, cbs, opt_func

    @with_cbs('batch')
    def _one_batch(self):
        self.predict()
        self.callback('after_predict')
        self.get_loss()
        self.callback('after_loss')
        if self.training:
            self.backward()
            self.callback('after_backward')
            self.step()
            self.callback('after_step')
            self.zero_grad()

    @with_cbs('epoch')
    def _one_epoch(self):
        for self.iter,self.batch in enumerate(self.dl): self._one_batch()

    def one_epoch(self, training):
        self.model.train(training)
        self.dl = self.dls.train if training else self.dls.valid
        self._one_epoch()

    @with_cbs('fit')
    def _fit(self, train, valid):
        for self.epoch in self.epochs:
            if train: self.one_epoch(True)
            if valid: torch.no_grad()(self.one_epoch)(False)

    def fit(self, n_epochs=1, train=True, valid=True, cbs=None, lr=None):
        cbs = list(cbs or [])
        for cb in cbs: self.cbs.append(cb)
        try:
            self.n_epochs = n_epochs
            self.epochs = range(n_epochs)
            if lr is None: lr = self.lr
            if self.opt_func: self.opt = self.opt_func(self.model.parameters(), lr)
            self._fit(train, valid)
        finally:
            for cb in cbs: self.cbs.remove(cb)

    def __getattr__(self, name):
        if name in ('predict','get_loss','backward','step','zero_grad'): return partial(self.callback, name)
        raise AttributeError(name)

    def callback(self, method_nm): run_cbs(self.cbs, method_nm, self)

    @property
    def training(self): return self.model.training


class TrainCB(Callback):
    def __init__(self, n_inp=1): self.n_inp = n_inp
    def predict(self, learn): learn.preds = learn.model(*learn.batch[:self.n_inp])
    def get_loss(self, learn): learn.loss = learn.loss_func(learn.preds, *learn.batch[self.n_inp:])
    def backward(self, learn): learn.loss.backward()
    def step(self, learn): learn.opt.step()
    def zero_grad(self, learn): learn.opt.zero_grad()


class MetricsCB(Callback):
    def before_epoch(self, learn):
        self.loss_sum, self.correct, self.count, self.t0 = 0.0, 0, 0, time.time()
    def after_batch(self, learn):
        x, y = learn.batch
        n = len(y)
        self.loss_sum += learn.loss.item() * n
        self.correct += (learn.preds.argmax(1) == y).sum().item()
        self.count += n
    def after_epoch(self, learn):
        print(f"{{'accuracy': '{self.correct / self.count:.3f}', 'loss': '{self.loss_sum / self.count:.3f}', "
              f"'epoch': {learn.epoch}, 'train': '{'train' if learn.model.training else 'eval'}', "
              f"'batches': {learn.iter + 1}, 'time': '{time.time() - self.t0:.1f}s'}}", flush=True)


class OneCycleCB(Callback):
    """miniai's BaseSchedCB/BatchSchedCB with OneCycleLR, built in before_fit once the optimizer exists."""
    def before_fit(self, learn):
        tmax = learn.n_epochs * len(learn.dls.train)
        self.sched = optim.lr_scheduler.OneCycleLR(learn.opt, max_lr=learn.lr, total_steps=tmax)
    def after_step(self, learn):
        if learn.training: self.sched.step()


def get_model():
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


if __name__ == "__main__":
    dsd = {"train": make_split(n_train, 0), "test": make_split(n_valid, 1)}
    tds = {k: DictDataset(v, transformi) for k, v in dsd.items()}
    dls = DataLoaders.from_dd(tds, bs, num_workers=num_workers)

    cbs = [TrainCB(), MetricsCB(), OneCycleCB()]
    learn = Learner(get_model(), dls, F.cross_entropy, lr=lr, cbs=cbs, opt_func=partial(optim.SGD, momentum=0.9))
    learn.fit(epochs)
