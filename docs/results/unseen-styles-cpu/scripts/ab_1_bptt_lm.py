"""Word-level language model in the layout of pytorch/examples' word_language_model: the corpus is one long
tensor of token ids, batchify() folds it into columns, get_batch() slices bptt-long chunks, the hidden state is
carried across chunks and detached with repackage_hidden(), and the update is plain SGD written by hand
(p.data.add_(p.grad, alpha=-lr)) after clip_grad_norm_. No DataLoader, no optimizer object."""
import argparse
import math
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser(description="PyTorch toy word-level LSTM language model")
parser.add_argument("--emsize", type=int, default=128)
parser.add_argument("--nhid", type=int, default=192)
parser.add_argument("--lr", type=float, default=8.0)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batch_size", type=int, default=20, metavar="N")
parser.add_argument("--bptt", type=int, default=35)
parser.add_argument("--seed", type=int, default=1111)
parser.add_argument("--log-interval", type=int, default=50, metavar="N")
args = parser.parse_args()

torch.manual_seed(args.seed)


def make_corpus(n_tokens, vocab=500, seed=0):
    """A Markov-chain 'corpus': each token depends on the one before, so there is something to learn."""
    g = torch.Generator().manual_seed(seed)
    trans = torch.softmax(torch.randn(vocab, vocab, generator=g) * 3.0, dim=1)
    ids = torch.empty(n_tokens, dtype=torch.long)
    ids[0] = 0
    draws = torch.multinomial(trans, 64, replacement=True, generator=g)
    pos = torch.randint(0, 64, (n_tokens,), generator=g)
    for i in range(1, n_tokens):
        ids[i] = draws[ids[i - 1], pos[i]]
    return ids, vocab


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return torch.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


corpus, ntokens = make_corpus(60_000)
train_data = batchify(corpus[:52_000], args.batch_size)
val_data = batchify(corpus[52_000:], 10)
model = RNNModel(ntokens, args.emsize, args.nhid)
criterion = nn.NLLLoss()
lr = args.lr


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(10)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(epoch):
    model.train()
    total_loss = 0.0
    start_time = time.time()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print(f"| epoch {epoch:3d} | {batch:5d}/{len(train_data) // args.bptt:5d} batches | lr {lr:02.2f} | "
                  f"ms/batch {elapsed * 1000 / args.log_interval:5.2f} | loss {cur_loss:5.2f} | ppl {math.exp(cur_loss):8.2f}")
            total_loss = 0.0
            start_time = time.time()


best_val_loss = None
for epoch in range(1, args.epochs + 1):
    epoch_start_time = time.time()
    train(epoch)
    val_loss = evaluate(val_data)
    print("-" * 89)
    print(f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start_time:5.2f}s | valid loss {val_loss:5.2f} | "
          f"valid ppl {math.exp(val_loss):8.2f}")
    print("-" * 89)
    if not best_val_loss or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        lr /= 4.0
