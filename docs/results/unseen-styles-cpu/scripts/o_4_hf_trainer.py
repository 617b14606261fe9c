"""A hand-written copy of Hugging Face's `Trainer` API, as some projects vendor it to drop the dependency: a
`TrainingArguments` dataclass (`dataloader_num_workers: int = 0`, `per_device_train_batch_size`, `group_by_length`,
...), a `Trainer(model, args, train_dataset, eval_dataset, data_collator, callbacks)` whose `get_train_dataloader()`
builds the DataLoader with `num_workers=self.args.dataloader_num_workers` and a `LengthGroupedSampler`, whose
`train()` loop calls `self.training_step(model, inputs)` -> `self.compute_loss(model, inputs)` -> `loss.backward()`,
steps an LR scheduler, and asks `TrainerCallback`s (`on_step_end`, `on_epoch_end`) through a `TrainerControl`. An
evaluation pass runs at the end of each epoch (`eval_strategy="epoch"`). `main()` sets the arguments in code, the way
notebooks do: `TrainingArguments(output_dir=..., dataloader_num_workers=0, ...)` (the dataclass's default is also 0).

Data: synthetic sentences of 8-120 words tokenized per sample by a hand-written hashing tokenizer with a few
normalisation passes (about 1.5 ms a sample, ~45 ms a batch of 32); a padding collator; a small embedding + GRU classifier.

A correct report: the loop is `Trainer.train()`'s `for step, inputs in enumerate(epoch_iterator)`; the forward pass is
inside `compute_loss`, two calls down (phase forward, not loss); with 0 workers the loop waits for tokenization,
so 1 worker (the most 2 CPUs hold) should be measured faster and advised; the edit must change the count where it
is really set, `TrainingArguments(..., dataloader_num_workers=1)` in `main()`. An edit to the dataclass's
default (`dataloader_num_workers: int = 0`) changes nothing, since `main()` passes the field; an edit hard-coded on
the DataLoader line inside `get_train_dataloader` works but leaves `dataloader_num_workers` a dead setting. This is
*not* Hugging Face's package: no `transformers` import.
"""
import math
import random
import zlib
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Sampler


@dataclass
class TrainingArguments:
    output_dir: str
    per_device_train_batch_size: int = 8
    per_device_eval_batch_size: int = 64
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    logging_steps: int = 500
    eval_strategy: str = "no"
    group_by_length: bool = False
    seed: int = 42
    dataloader_num_workers: int = 0
    dataloader_pin_memory: bool = True
    dataloader_drop_last: bool = False
    report_to: List[str] = field(default_factory=list)


@dataclass
class TrainerControl:
    should_training_stop: bool = False
    should_log: bool = False


class TrainerCallback:
    def on_step_end(self, args, state, control, **kw):
        return control

    def on_epoch_end(self, args, state, control, **kw):
        return control


class PrinterCallback(TrainerCallback):
    def on_step_end(self, args, state, control, **kw):
        if state["global_step"] % args.logging_steps == 0:
            print(f"  step {state['global_step']} loss {kw['loss']:.4f} lr {kw['lr']:.2e}", flush=True)
        return control


class LengthGroupedSampler(Sampler):
    """Shuffles, then sorts megabatches of 50 x batch_size by length (as transformers' own)."""

    def __init__(self, batch_size, lengths, generator=None):
        self.batch_size, self.lengths, self.generator = batch_size, lengths, generator

    def __len__(self):
        return len(self.lengths)

    def __iter__(self):
        indices = torch.randperm(len(self.lengths), generator=self.generator).tolist()
        mb = self.batch_size * 50
        megabatches = [sorted(indices[i:i + mb], key=lambda j: -self.lengths[j]) for i in range(0, len(indices), mb)]
        return iter([i for m in megabatches for i in m])


VOCAB = 4096
WORDS = [f"w{i}" for i in range(3000)]


def tokenize(text):
    ids = []
    for word in text.lower().replace(",", " ,").replace(".", " .").split():
        for piece in (word[:4], word[4:]) if len(word) > 4 else (word,):
            ids.append(zlib.crc32(piece.encode()) % (VOCAB - 2) + 2)
    return ids


class SentimentDataset(Dataset):
    def __init__(self, n, seed):
        rnd = random.Random(seed)
        self.texts, self.labels = [], []
        for _ in range(n):
            label = rnd.randint(0, 1)
            words = [rnd.choice(WORDS) for _ in range(rnd.randint(8, 120))]
            for _ in range(3):
                words.insert(rnd.randrange(len(words)), "good" if label else "bad")
            self.texts.append(", ".join(" ".join(words[i:i + 7]) for i in range(0, len(words), 7)) + ".")
            self.labels.append(label)
        self.lengths = [len(t.split()) for t in self.texts]

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        ids = tokenize(self.texts[i])
        arr = np.asarray(ids, dtype=np.int64)
        for _ in range(70):  # "normalisation" passes a real tokenizer pipeline would do (ngrams, dedup)
            arr = np.where(np.roll(arr, 1) == arr, 1, arr)
            _ = np.unique(arr, return_counts=True)
        return {"input_ids": arr.tolist(), "labels": self.labels[i]}


class DataCollatorWithPadding:
    def __call__(self, features):
        m = max(len(f["input_ids"]) for f in features)
        ids = torch.zeros(len(features), m, dtype=torch.long)
        mask = torch.zeros(len(features), m, dtype=torch.long)
        for k, f in enumerate(features):
            ids[k, :len(f["input_ids"])] = torch.tensor(f["input_ids"])
            mask[k, :len(f["input_ids"])] = 1
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([f["labels"] for f in features])}


class GRUClassifier(nn.Module):
    def __init__(self, d=96):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d, padding_idx=0)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, 2)

    def forward(self, input_ids, attention_mask, labels=None):
        h, _ = self.gru(self.emb(input_ids))
        pooled = (h * attention_mask.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)
        logits = self.head(pooled)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


class Trainer:
    def __init__(self, model, args, train_dataset=None, eval_dataset=None, data_collator=None,
                 callbacks: Optional[List[TrainerCallback]] = None):
        self.model, self.args = model, args
        self.train_dataset, self.eval_dataset, self.data_collator = train_dataset, eval_dataset, data_collator
        self.callbacks = callbacks or []
        self.control = TrainerControl()
        self.state = {"global_step": 0, "epoch": 0, "log_history": []}

    def _get_train_sampler(self):
        g = torch.Generator()
        g.manual_seed(self.args.seed)
        if self.args.group_by_length:
            return LengthGroupedSampler(self.args.per_device_train_batch_size, self.train_dataset.lengths, g)
        return torch.utils.data.RandomSampler(self.train_dataset, generator=g)

    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=self.args.per_device_train_batch_size,
                          sampler=self._get_train_sampler(), collate_fn=self.data_collator,
                          num_workers=self.args.dataloader_num_workers, pin_memory=self.args.dataloader_pin_memory,
                          drop_last=self.args.dataloader_drop_last)

    def get_eval_dataloader(self):
        return DataLoader(self.eval_dataset, batch_size=self.args.per_device_eval_batch_size,
                          collate_fn=self.data_collator, num_workers=self.args.dataloader_num_workers)

    def create_optimizer_and_scheduler(self, num_training_steps):
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.args.learning_rate,
                                           weight_decay=self.args.weight_decay)
        warm = int(self.args.warmup_ratio * num_training_steps)
        lam = lambda s: s / max(1, warm) if s < warm else max(0.0, (num_training_steps - s) / max(1, num_training_steps - warm))
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lam)

    def compute_loss(self, model, inputs, return_outputs=False):
        outputs = model(**inputs)
        loss = outputs["loss"]
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model, inputs):
        model.train()
        loss = self.compute_loss(model, inputs)
        loss.backward()
        return loss.detach()

    def evaluate(self):
        self.model.eval()
        correct = total = 0
        with torch.no_grad():
            for inputs in self.get_eval_dataloader():
                _, out = self.compute_loss(self.model, inputs, return_outputs=True)
                correct += (out["logits"].argmax(-1) == inputs["labels"]).sum().item()
                total += len(inputs["labels"])
        return {"eval_accuracy": correct / total}

    def train(self):
        train_dataloader = self.get_train_dataloader()
        num_update_steps_per_epoch = len(train_dataloader)
        num_train_epochs = math.ceil(self.args.num_train_epochs)
        self.create_optimizer_and_scheduler(num_update_steps_per_epoch * num_train_epochs)
        model = self.model
        for epoch in range(num_train_epochs):
            epoch_iterator = train_dataloader
            tr_loss, steps_in_epoch = 0.0, 0
            for step, inputs in enumerate(epoch_iterator):
                tr_loss_step = self.training_step(model, inputs)
                tr_loss += tr_loss_step.item()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                self.optimizer.step()
                self.lr_scheduler.step()
                model.zero_grad()
                self.state["global_step"] += 1
                steps_in_epoch += 1
                for cb in self.callbacks:
                    self.control = cb.on_step_end(self.args, self.state, self.control, loss=tr_loss_step.item(),
                                                  lr=self.lr_scheduler.get_last_lr()[0])
                if self.control.should_training_stop:
                    break
            self.state["epoch"] = epoch + 1
            metrics = self.evaluate() if self.args.eval_strategy == "epoch" else {}
            print(f"epoch {epoch} loss {tr_loss / steps_in_epoch:.4f} batches {steps_in_epoch} {metrics}", flush=True)
            for cb in self.callbacks:
                self.control = cb.on_epoch_end(self.args, self.state, self.control)
            if self.control.should_training_stop:
                break
        return {"global_step": self.state["global_step"], "train_loss": tr_loss / max(1, steps_in_epoch)}


def main():
    torch.manual_seed(0)
    train_ds, eval_ds = SentimentDataset(2048, seed=1), SentimentDataset(256, seed=2)
    training_args = TrainingArguments(
        output_dir="/tmp/o4-sentiment",
        per_device_train_batch_size=32,
        learning_rate=3e-3,
        num_train_epochs=5,
        warmup_ratio=0.1,
        logging_steps=25,
        eval_strategy="epoch",
        group_by_length=True,
        dataloader_num_workers=0, dataloader_pin_memory=False,  # 0: kept from a Windows notebook
    )
    trainer = Trainer(model=GRUClassifier(), args=training_args, train_dataset=train_ds, eval_dataset=eval_ds,
                      data_collator=DataCollatorWithPadding(), callbacks=[PrinterCallback()])
    print(trainer.train())


if __name__ == "__main__":
    main()
