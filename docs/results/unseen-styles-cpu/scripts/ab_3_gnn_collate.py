"""Graph classification the PyTorch Geometric way, without the library: each item is a small graph (node features,
an edge_index of shape [2, E], a label); collate_graphs concatenates the graphs into one big disconnected graph,
offsetting each edge_index by the nodes before it, and builds the `batch` vector that maps nodes to graphs.
Message passing is index_add_ over edges; the readout is a mean pool per graph through the batch vector."""
import argparse
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class RandomGraphs(Dataset):
    """Label 1: the graph has a triangle-rich community structure; label 0: an Erdos-Renyi graph of the same density."""

    def __init__(self, num_graphs, seed=0):
        self.specs = []
        rnd = random.Random(seed)
        for _ in range(num_graphs):
            self.specs.append((rnd.randint(12, 40), rnd.randint(0, 1), rnd.randrange(1 << 30)))

    def __len__(self):
        return len(self.specs)

    def __getitem__(self, i):
        n, label, seed = self.specs[i]
        g = torch.Generator().manual_seed(seed)
        if label:
            comm = torch.randint(0, 3, (n,), generator=g)
            same = comm[:, None] == comm[None, :]
            prob = torch.where(same, torch.tensor(0.45), torch.tensor(0.04))
        else:
            prob = torch.full((n, n), 0.17)
        adj = torch.bernoulli(prob, generator=g).triu(1)
        adj = adj + adj.t()
        edge_index = adj.nonzero().t().contiguous()
        deg = adj.sum(1, keepdim=True)
        tri = torch.diagonal(adj @ adj @ adj).unsqueeze(1) / 2
        x = torch.cat([deg / 10, tri / 20, torch.randn(n, 6, generator=g) * 0.1], dim=1)
        return {"x": x, "edge_index": edge_index, "y": label}


def collate_graphs(items):
    xs, edges, batch, offset = [], [], [], 0
    for gi, item in enumerate(items):
        n = item["x"].shape[0]
        xs.append(item["x"])
        edges.append(item["edge_index"] + offset)
        batch.append(torch.full((n,), gi, dtype=torch.long))
        offset += n
    return {
        "x": torch.cat(xs),
        "edge_index": torch.cat(edges, dim=1),
        "batch": torch.cat(batch),
        "y": torch.tensor([item["y"] for item in items]),
        "num_graphs": len(items),
    }


class GraphConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.self_lin = nn.Linear(d_in, d_out)
        self.nbr_lin = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        deg = torch.zeros(x.shape[0], 1).index_add_(0, dst, torch.ones(dst.shape[0], 1)).clamp(min=1)
        return self.self_lin(x) + self.nbr_lin(agg / deg)


class GNN(nn.Module):
    def __init__(self, d_in=8, hidden=64, layers=3):
        super().__init__()
        dims = [d_in] + [hidden] * layers
        self.convs = nn.ModuleList(GraphConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, x, edge_index, batch, num_graphs):
        for conv in self.convs:
            x = F.relu(conv(x, edge_index))
        pooled = torch.zeros(num_graphs, x.shape[1]).index_add_(0, batch, x)
        counts = torch.bincount(batch, minlength=num_graphs).clamp(min=1).unsqueeze(1)
        return self.head(pooled / counts)


def run(args):
    torch.manual_seed(args.seed)
    train_ds = RandomGraphs(3000, seed=1)
    loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, collate_fn=collate_graphs,
                        num_workers=args.num_workers)
    model = GNN()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    for epoch in range(1, args.epochs + 1):
        model.train()
        total, correct, loss_sum = 0, 0, 0.0
        for data in loader:
            out = model(data["x"], data["edge_index"], data["batch"], data["num_graphs"])
            loss = F.cross_entropy(out, data["y"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item() * data["num_graphs"]
            correct += (out.argmax(1) == data["y"]).sum().item()
            total += data["num_graphs"]
        print(f"Epoch: {epoch:03d}, Batches: {len(loader)}, Loss: {loss_sum / total:.4f}, Train Acc: {correct / total:.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--num_workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=12345)
    run(ap.parse_args())
