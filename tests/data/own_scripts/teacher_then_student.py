"""Knowledge distillation on one DataLoader: a teacher fitted for one epoch in fit_teacher(), then a student for three
in train_student(), with the teacher's logits under no_grad. The training loop is the student's."""
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Items(Dataset):
    def __len__(self):
        return 96

    def __getitem__(self, i):
        time.sleep(0.003)  # a read
        return torch.full((8,), float(i % 4)), i % 4


def fit_teacher(teacher, loader):
    opt = torch.optim.SGD(teacher.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        F.cross_entropy(teacher(x), y).backward()
        opt.step()


def train_student(student, teacher, loader, epochs):
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for epoch in range(epochs):
        total = 0.0
        for x, y in loader:
            with torch.no_grad():
                target = F.softmax(teacher(x), dim=1)
            loss = F.kl_div(F.log_softmax(student(x), dim=1), target, reduction="batchmean")
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch} loss {total / len(loader):.4f}")


def main():
    torch.manual_seed(0)
    loader = DataLoader(Items(), batch_size=8, shuffle=True, num_workers=1)
    teacher, student = nn.Linear(8, 4), nn.Linear(8, 4)
    fit_teacher(teacher, loader)
    train_student(student, teacher, loader, epochs=4)


if __name__ == "__main__":
    main()
