"""CycleGAN/pix2pix layout (junyanz/pytorch-CycleGAN-and-pix2pix) in one file: an options class whose worker flag is
`--num_threads` (default 4); a `CustomDatasetDataLoader` holding the DataLoader (`num_workers=int(opt.num_threads)`),
its `load_data()` returning itself, its `__iter__` yielding dict batches up to `max_dataset_size`; a pix2pix-like model
(`set_input` / `optimize_parameters`: forward, two backward passes, two optimizers); and, as that repo's train.py, the
epoch loop at module level under `if __name__ == '__main__':`. Data: 3x48x48 pairs augmented in numpy (~1 ms an item).
A correct report: the loop is `for i, data in enumerate(dataset)` (the wrapper's `for` only hands batches on); each
epoch keeps its 57 batches; the edit is `--num_threads N`, the flag the DataLoader's count comes from.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.utils.data


class TrainOptions:
    def initialize(self, parser):
        parser.add_argument('--batch_size', type=int, default=16, help='input batch size')
        parser.add_argument('--num_threads', default=4, type=int, help='# threads for loading data')
        parser.add_argument('--serial_batches', action='store_true', help='if true, takes images in order')
        parser.add_argument('--max_dataset_size', type=int, default=float("inf"), help='max #samples per epoch')
        parser.add_argument('--epoch_count', type=int, default=1, help='the starting epoch count')
        parser.add_argument('--n_epochs', type=int, default=4, help='number of epochs')
        parser.add_argument('--lr', type=float, default=0.0002, help='initial learning rate for adam')
        parser.add_argument('--lambda_L1', type=float, default=100.0, help='weight for L1 loss')
        parser.add_argument('--print_freq', type=int, default=160, help='frequency of showing training results')
        return parser

    def parse(self):
        parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        return self.initialize(parser).parse_args()


class AlignedDataset(torch.utils.data.Dataset):
    def __init__(self, opt, n=900):
        self.A = np.random.default_rng(0).random((n, 3, 48, 48), dtype=np.float32)
        self.paths = ['img_%04d.png' % i for i in range(n)]

    def __getitem__(self, index):
        rng = np.random.default_rng(index)  # the same pair whichever process builds it
        A = self.A[index]
        B = np.tanh(3.0 * (A - A.mean(axis=(1, 2), keepdims=True)))
        for _ in range(110):  # "resize, crop, jitter": per-item CPU work
            B = 0.9 * B + 0.1 * np.roll(B, 1, axis=2)
        if rng.random() > 0.5:
            A, B = A[:, :, ::-1], B[:, :, ::-1]
        return {'A': torch.from_numpy(((A - 0.5) / 0.5).copy()), 'B': torch.from_numpy(B.astype(np.float32).copy()),
                'A_paths': self.paths[index]}

    def __len__(self):
        return len(self.A)


class CustomDatasetDataLoader():
    def __init__(self, opt):
        self.opt = opt
        self.dataset = AlignedDataset(opt)
        self.dataloader = torch.utils.data.DataLoader(
            self.dataset,
            batch_size=opt.batch_size,
            shuffle=not opt.serial_batches,
            num_workers=int(opt.num_threads))

    def load_data(self):
        return self

    def __len__(self):
        return min(len(self.dataset), self.opt.max_dataset_size)

    def __iter__(self):
        for i, data in enumerate(self.dataloader):
            if i * self.opt.batch_size >= self.opt.max_dataset_size:
                break
            yield data


def create_dataset(opt):
    return CustomDatasetDataLoader(opt).load_data()


class Pix2PixModel:
    def __init__(self, opt):
        self.opt = opt
        self.netG = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
                                  nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1), nn.Tanh())
        self.netD = nn.Sequential(nn.Conv2d(6, 16, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(16, 1, 4, 2, 1))
        self.criterionGAN, self.criterionL1 = nn.MSELoss(), nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=opt.lr, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=opt.lr, betas=(0.5, 0.999))

    def set_input(self, input):  # (also takes input['A_paths'] in the original)
        self.real_A, self.real_B = input['A'], input['B']

    def forward(self):
        self.fake_B = self.netG(self.real_A)

    def backward_D(self):
        fake, real = self.netD(torch.cat((self.real_A, self.fake_B), 1).detach()), self.netD(
            torch.cat((self.real_A, self.real_B), 1))
        self.loss_D = 0.5 * (self.criterionGAN(fake, torch.zeros_like(fake)) + self.criterionGAN(real, torch.ones_like(real)))
        self.loss_D.backward()

    def backward_G(self):
        pred_fake = self.netD(torch.cat((self.real_A, self.fake_B), 1))
        self.loss_G_L1 = self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1
        self.loss_G = self.criterionGAN(pred_fake, torch.ones_like(pred_fake)) + self.loss_G_L1
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()

    def get_current_losses(self):
        return {'G_L1': float(self.loss_G_L1), 'D': float(self.loss_D)}


if __name__ == '__main__':
    opt = TrainOptions().parse()
    torch.manual_seed(0)
    dataset = create_dataset(opt)
    print('The number of training images = %d' % len(dataset))
    model = Pix2PixModel(opt)
    total_iters = 0
    for epoch in range(opt.epoch_count, opt.n_epochs + 1):
        epoch_start_time = iter_data_time = time.time()
        epoch_iter, n_batches, l1_sum = 0, 0, 0.0
        for i, data in enumerate(dataset):
            iter_start_time = time.time()
            if total_iters % opt.print_freq == 0:
                t_data = iter_start_time - iter_data_time
            total_iters += opt.batch_size
            epoch_iter += opt.batch_size
            model.set_input(data)
            model.optimize_parameters()
            losses = model.get_current_losses()
            l1_sum, n_batches = l1_sum + losses['G_L1'], n_batches + 1
            if total_iters % opt.print_freq == 0:
                t_comp = (time.time() - iter_start_time) / opt.batch_size
                print('(epoch: %d, iters: %d, time: %.3f, data: %.3f) G_L1: %.3f D: %.3f'
                      % (epoch, epoch_iter, t_comp, t_data, losses['G_L1'], losses['D']))
            iter_data_time = time.time()
        print('End of epoch %d / %d \t batches %d \t mean G_L1 %.4f \t Time Taken: %.1f sec'
              % (epoch, opt.n_epochs, n_batches, l1_sum / n_batches, time.time() - epoch_start_time), flush=True)
