"""A script whose options kernprof has too: `-c CONFIG` (kernprof's literal code) and `--out` (a prefix of its
`--outfile` and `--output-interval`)."""
import argparse
import json

from torch.utils.data import DataLoader


def train(config, out):
    for batch in DataLoader(list(range(64)), batch_size=8, num_workers=config["workers"]):
        pass
    print(f"trained with {config}, results in {out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("-c", "--config", required=True)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    with open(args.config) as f:
        train(json.load(f), args.out)
