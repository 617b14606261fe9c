"""HF Accelerate-like hand-written loop: enumerate(train_dataloader, start=1), accumulation via step % accum."""
import argparse, math, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader


class TokenDataset(Dataset):
    def __init__(self, n=640, seq=32, vocab=500):
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, idx):
        ids = self.ids[idx].clone()
        mask = (ids % 7 != 0).long()
        for _ in range(10):
            ids = torch.where(mask.bool(), ids, torch.zeros_like(ids))
            _ = torch.cumsum(ids.float(), 0).softmax(0)
        time.sleep(0.001)
        return {"input_ids": ids, "attention_mask": mask, "labels": self.labels[idx]}


class TinyClassifier(nn.Module):
    def __init__(self, vocab=500, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.TransformerEncoderLayer(d, 4, 128, batch_first=True)
        self.head = nn.Linear(d, 2)

    def forward(self, input_ids, attention_mask, labels=None):
        h = self.enc(self.emb(input_ids), src_key_padding_mask=attention_mask == 0)
        logits = self.head(h.mean(1))
        loss = nn.functional.cross_entropy(logits, labels)
        return loss, logits


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--num_train_epochs", type=int, default=3)
    p.add_argument("--per_device_train_batch_size", type=int, default=16)
    p.add_argument("--gradient_accumulation_steps", type=int, default=2)
    p.add_argument("--dataloader_num_workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    train_dataset = TokenDataset()
    train_dataloader = DataLoader(train_dataset, shuffle=True, batch_size=args.per_device_train_batch_size,
                                  num_workers=args.dataloader_num_workers)
    model = TinyClassifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
    max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / max_train_steps)
    completed_steps = 0
    for epoch in range(args.num_train_epochs):
        model.train()
        total_loss = 0.0
        t = time.time()
        for step, batch in enumerate(train_dataloader, start=1):
            outputs = model(**batch)
            loss = outputs[0]
            total_loss += loss.detach().float()
            loss = loss / args.gradient_accumulation_steps
            loss.backward()
            if step % args.gradient_accumulation_steps == 0 or step == len(train_dataloader):
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                completed_steps += 1
        print(f"epoch {epoch}: steps {step}, updates {completed_steps}, train_loss {total_loss.item() / step:.5f}, {time.time() - t:.2f}s")


if __name__ == "__main__":
    main()
