from argparse import ArgumentParser

from torch.utils.data import DataLoader

from mypkg.data import build_dataset


def cli():
    ap = ArgumentParser(prog="python -m mypkg.train")
    ap.add_argument("--config", default="configs/base.yaml")
    ap.add_argument("--workers", type=int, default=6)
    return ap.parse_args()


def run():
    opts = cli()
    loader = DataLoader(build_dataset(opts.config), batch_size=32, num_workers=opts.workers)
    for _ in loader:
        pass


if __name__ == "__main__":
    run()
