"""MAE-style pre-training (facebookresearch/mae's main_pretrain + engine_pretrain layout, shrunk): random masking
inside the model, a per-iteration LR schedule, accumulation, and a NativeScaler-like `loss_scaler(loss, optimizer,
update_grad=...)` object whose __call__ does the backward pass and the optimizer step."""
import argparse
import math
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class Textures(Dataset):
    def __init__(self, n=3000, seed=0, transform=None):
        g = torch.Generator().manual_seed(seed)
        freq = torch.rand(n, 2, generator=g) * 6 + 1
        yy, xx = torch.meshgrid(torch.linspace(0, 6.28, 40), torch.linspace(0, 6.28, 40), indexing="ij")
        base = torch.sin(freq[:, 0, None, None] * xx) * torch.cos(freq[:, 1, None, None] * yy)
        self.images = torch.stack([base, base.roll(3, 1), -base], 1) + 0.2 * torch.randn(n, 3, 40, 40, generator=g)
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i]), 0


class MaskedAutoencoder(nn.Module):
    def __init__(self, img=32, patch=4, dim=96, depth=2, dec_dim=64):
        super().__init__()
        self.patch, self.n = patch, (img // patch) ** 2
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.pos = nn.Parameter(torch.randn(1, self.n, dim) * 0.02)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 4, dim * 2, batch_first=True), depth)
        self.to_dec = nn.Linear(dim, dec_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dec_dim))
        self.dec_pos = nn.Parameter(torch.randn(1, self.n, dec_dim) * 0.02)
        self.decoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dec_dim, 4, dec_dim * 2, batch_first=True), 1)
        self.head = nn.Linear(dec_dim, 3 * patch * patch)

    def patchify(self, imgs):
        p = self.patch
        x = imgs.unfold(2, p, p).unfold(3, p, p)  # N, 3, h, w, p, p
        return x.permute(0, 2, 3, 1, 4, 5).reshape(imgs.shape[0], self.n, -1)

    def random_masking(self, x, mask_ratio):
        N, L, D = x.shape
        keep = int(L * (1 - mask_ratio))
        noise = torch.rand(N, L)  # the global generator, as MAE does
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        x_masked = torch.gather(x, 1, ids_shuffle[:, :keep, None].expand(-1, -1, D))
        mask = torch.ones(N, L)
        mask[:, :keep] = 0
        return x_masked, torch.gather(mask, 1, ids_restore), ids_restore

    def forward(self, imgs, mask_ratio=0.75):
        target = self.patchify(imgs)
        x, mask, ids_restore = self.random_masking(self.embed(target) + self.pos, mask_ratio)
        x = self.to_dec(self.encoder(x))
        x = torch.cat([x, self.mask_token.expand(x.shape[0], self.n - x.shape[1], -1)], 1)
        x = torch.gather(x, 1, ids_restore[:, :, None].expand(-1, -1, x.shape[2])) + self.dec_pos
        pred = self.head(self.decoder(x))
        loss = ((pred - target) ** 2).mean(-1)
        return (loss * mask).sum() / mask.sum(), pred, mask


class NativeScaler:
    state_dict_key = "amp_scaler"

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, create_graph=False, update_grad=True):
        loss.backward(create_graph=create_graph)
        if update_grad:
            if clip_grad is not None:
                torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
            optimizer.step()


def adjust_learning_rate(optimizer, epoch, args):
    if epoch < args.warmup_epochs:
        lr = args.lr * epoch / args.warmup_epochs
    else:
        lr = args.lr * 0.5 * (1. + math.cos(math.pi * (epoch - args.warmup_epochs) / (args.epochs - args.warmup_epochs)))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    return lr


def train_one_epoch(model, data_loader, optimizer, epoch, loss_scaler, args):
    model.train(True)
    accum_iter = args.accum_iter
    optimizer.zero_grad()
    total, count = 0.0, 0
    for data_iter_step, (samples, _) in enumerate(data_loader):
        if data_iter_step % accum_iter == 0:
            adjust_learning_rate(optimizer, data_iter_step / len(data_loader) + epoch, args)
        loss, _, _ = model(samples, mask_ratio=args.mask_ratio)
        loss_value = loss.item()
        loss /= accum_iter
        loss_scaler(loss, optimizer, parameters=model.parameters(), update_grad=(data_iter_step + 1) % accum_iter == 0)
        if (data_iter_step + 1) % accum_iter == 0:
            optimizer.zero_grad()
        total += loss_value
        count += 1
    return {"loss": total / count, "batches": count}


def get_args_parser():
    parser = argparse.ArgumentParser("MAE pre-training", add_help=False)
    parser.add_argument("--batch_size", default=64, type=int)
    parser.add_argument("--epochs", default=5, type=int)
    parser.add_argument("--accum_iter", default=2, type=int)
    parser.add_argument("--mask_ratio", default=0.75, type=float)
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--warmup_epochs", type=int, default=1)
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--num_workers", default=1, type=int)
    parser.add_argument("--pin_mem", action="store_true", help="Pin CPU memory in DataLoader.")
    parser.add_argument("--no_pin_mem", action="store_false", dest="pin_mem")
    parser.set_defaults(pin_mem=True)
    return parser


def main(args):
    torch.manual_seed(args.seed)
    transform_train = transforms.Compose([transforms.RandomResizedCrop(32, scale=(0.4, 1.0), antialias=True),
                                          transforms.RandomHorizontalFlip()])
    dataset_train = Textures(transform=transform_train)
    sampler_train = torch.utils.data.RandomSampler(dataset_train)
    data_loader_train = torch.utils.data.DataLoader(
        dataset_train, sampler=sampler_train, batch_size=args.batch_size, num_workers=args.num_workers,
        pin_memory=args.pin_mem and torch.cuda.is_available(), drop_last=True)
    model = MaskedAutoencoder()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.05)
    loss_scaler = NativeScaler()
    start_time = time.time()
    for epoch in range(args.epochs):
        t0 = time.time()
        stats = train_one_epoch(model, data_loader_train, optimizer, epoch, loss_scaler, args)
        print(f"epoch {epoch} loss {stats['loss']:.4f} batches {stats['batches']} time {time.time() - t0:.1f}s",
              flush=True)
    print(f"Training time {time.time() - start_time:.1f}s")


if __name__ == "__main__":
    args = get_args_parser().parse_args()
    main(args)
