"""`python -m small_files VERB`: generate, shard, check, evict, sshfs, read, split.

Bad input (a missing folder, a corrupt shard) prints one line and exits 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def _count(text: str) -> int:
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m small_files", description="Many small image files, grouped into shards.")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB", parser_class=_Parser)
    g = verbs.add_parser("generate", help="write ROOT/{train,val}/<class>/<n>.jpg, the same bytes for a seed")
    g.add_argument("root", type=Path)
    g.add_argument("--train", type=_count, default=50_000, help="training images")
    g.add_argument("--val", type=_count, default=1_000, help="test images")
    g.add_argument("--classes", type=_count, default=10)
    g.add_argument("--size", type=_count, default=160, help="image side in pixels (Imagenette's small version: 160)")
    g.add_argument("--seed", type=int, default=0)
    s = verbs.add_parser("shard", help="group an image folder into WebDataset tar shards of N samples")
    s.add_argument("folder", type=Path, help="an ImageFolder (FOLDER/<class>/<file>.jpg)")
    s.add_argument("out", type=Path, help="where shard-NNNNNN.tar and index.json go")
    s.add_argument("--per-shard", type=_count, default=1024, help="samples per shard")
    s.add_argument("--seed", type=int, default=1,
                   help="the written order is the shuffle of lesson 1's training script for this seed")
    s.add_argument("--tile", type=_count, default=1, metavar="T",
                   help="paste each T x T consecutive images (all one size) into one JPEG sheet, so that a "
                        "GPU decoder pays its per-image cost once a sheet (lesson 09, --decode gpu); 1: none")
    c = verbs.add_parser("check", help="read every shard's headers; name each bad one and exit 2")
    c.add_argument("shards", type=Path)
    e = verbs.add_parser("evict", help="drop files from the page cache (vmtouch -e) and show what stays resident")
    e.add_argument("paths", type=Path, nargs="+")
    m = verbs.add_parser("sshfs", help="serve FOLDER over sshfs on 127.0.0.1, run COMMAND with {mount} "
                                       "replaced by the mount point, unmount")
    m.add_argument("folder", type=Path)
    m.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS... ({mount} = the mount point)")
    r = verbs.add_parser("read", help="samples/s of one DataLoader pass over a folder or shards")
    r.add_argument("source", type=Path)
    r.add_argument("--workers", type=_count, default=2)
    r.add_argument("--samples", type=_count, default=None, help="stop after N samples (default: all)")
    r.add_argument("--decode", action="store_true", help="decode and transform too, as training does")
    r.add_argument("--cold", action="store_true", help="evict SOURCE from the page cache first")
    r.add_argument("--reader", choices=["index", "webdataset"], default="index",
                   help="shards: the kit's indexed reader (as training reads) or WebDataset's tar reader")
    t = verbs.add_parser("split", help="per batch, the workers' file open/read time against decode/transform time")
    t.add_argument("source", type=Path)
    t.add_argument("--workers", type=_count, default=2)
    t.add_argument("--samples", type=_count, default=None, help="stop after N samples (default: all)")
    t.add_argument("--image-size", type=_count, default=128)
    t.add_argument("--cold", action="store_true", help="evict SOURCE from the page cache first")
    t.add_argument("--meta", type=Path, default=None,
                   help="also store the split as 'io_split' in this run's .meta.json (written by "
                        "`python -m profiling run`), so that `python -m profiling report` can use it")
    return p


def _exists(path: Path, what: str) -> None:
    if not path.is_dir():
        raise FileNotFoundError(f"{what} {path}: no such folder")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from small_files import cache, remote, shards
    try:
        if args.verb == "generate":
            from small_files.generate import generate
            t0 = time.perf_counter()
            counts = generate(args.root, args.train, args.val, args.classes, args.size, args.seed)
            print(f"wrote {counts['train']} train and {counts['val']} val JPEGs ({args.size} px, "
                  f"{args.classes} classes, seed {args.seed}) under {args.root} in {time.perf_counter() - t0:.1f} s")
        elif args.verb == "shard":
            _exists(args.folder, "folder")
            if args.per_shard < 1:
                raise ValueError("--per-shard must be at least 1")
            if args.tile < 1:
                raise ValueError("--tile must be at least 1")
            t0 = time.perf_counter()
            index = shards.write_shards(args.folder, args.out, args.per_shard, args.seed, args.tile)
            print(f"wrote {len(index['shards'])} shards of up to {args.per_shard} samples "
                  f"({index['samples']} samples, order seed {args.seed}) to {args.out} "
                  f"in {time.perf_counter() - t0:.1f} s")
        elif args.verb == "check":
            good, problems = shards.check_shards(args.shards)
            for line in problems:
                print(f"check: {line}", file=sys.stderr)
            print(f"{good} samples in good shards, {len(problems)} bad shard(s)")
            return EXIT_BAD_INPUT if problems else 0
        elif args.verb == "evict":
            method = cache.evict(*args.paths)
            if method != "vmtouch -e":
                print(f"evicted with {method} (install vmtouch to see what stays resident)")
                return 0
            pages, total = cache.resident(*args.paths)
            print(f"evicted: {pages}/{total} pages resident ({100 * pages / max(total, 1):.0f}%)")
        elif args.verb == "sshfs":
            _exists(args.folder, "folder")
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not command:
                raise ValueError("give a command after --, e.g. -- ls {mount}")
            with remote.sshfs_mount(args.folder) as mount:
                return subprocess.run([part.replace("{mount}", str(mount)) for part in command], check=False).returncode
        elif args.verb == "read":
            from small_files.measure import read_rate
            _exists(args.source, "source")
            if args.cold:
                cache.evict(args.source)
            print(json.dumps({"source": str(args.source), "workers": args.workers, "decode": args.decode,
                              **read_rate(args.source, args.workers, args.samples, args.decode, reader=args.reader)}))
        elif args.verb == "split":
            from small_files.readtime import split
            _exists(args.source, "source")
            if args.cold:
                cache.evict(args.source)
            result = split(args.source, args.workers, args.samples, args.image_size)
            short = {k: v for k, v in result.items() if not k.endswith("_batches")}
            print(f"read {result['read_ms_per_batch']:.1f} ms, decode {result['decode_ms_per_batch']:.1f} ms "
                  f"per batch of {result['batch_size']} (worker time; reads {100 * result['read_share']:.0f}%)")
            print(json.dumps(short))
            if args.meta is not None:
                meta = json.loads(args.meta.read_text())
                meta["io_split"] = short
                args.meta.write_text(json.dumps(meta, indent=2) + "\n")
    except (shards.ShardError, remote.SshfsUnavailable, cache.CacheToolMissing, FileNotFoundError,
            ValueError, OSError) as exc:
        print(f"small_files {args.verb}: error: {str(exc).strip().splitlines()[-1]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0
