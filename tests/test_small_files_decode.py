"""Lesson 09's indexed shard reader and its GPU decoding path, on real generated JPEGs.

The reader and the batched crop run on the CPU here (roi_align and decode_jpeg have CPU kernels);
the nvJPEG path and `--decode gpu` training are checked where CUDA is present and skipped cleanly
where it is not.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from digits.data import shuffled
from small_files import shards
from small_files.generate import generate
from small_files.gpu_batch import GpuBatches, Packer, augment, crop_boxes, decode, pack, stack
from small_files.shardread import ShardBatches, first_jpeg, my_batches
from small_files.slots import FREE, BatchSlots, InSlot
from small_files.transforms import IMAGENET_MEAN, IMAGENET_STD

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
CUDA = torch.cuda.is_available()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("small-files-decode")
    generate(root, train=40, val=8, classes=4, size=48, seed=2, jobs=1)
    return root


def _pairs(jpegs: list[bytes], labels: list[int]) -> list[tuple[bytes, int]]:
    return list(zip(jpegs, labels))


# ---------------------------------------------------------------- the balanced split
@pytest.mark.parametrize(("samples", "batch", "ranks", "workers"), [(1000, 64, 1, 3), (1000, 64, 2, 3), (50, 8, 1, 7)])
def test_every_batch_goes_to_one_worker_and_no_worker_has_two_more_than_another(samples, batch, ranks, workers):
    per_rank = [[my_batches(samples, batch, ranks, r, workers, w) for w in range(workers)] for r in range(ranks)]
    counts = [len(b) for rank in per_rank for b in rank]
    assert max(counts) - min(counts) <= 1
    assert len({sum(len(b) for b in rank) for rank in per_rank}) == 1  # every rank: the same number of steps
    starts = sorted(r.start for rank in per_rank for worker in rank for r in worker)
    assert len(starts) == len(set(starts)) and starts == list(range(0, starts[-1] + 1, batch))
    if ranks == 1:  # one rank reads every sample once
        assert sum(len(r) for worker in per_rank[0] for r in worker) == samples


def test_indexed_reader_gives_the_folders_shuffled_order_bytes_and_labels_with_any_workers(folder, tmp_path):
    samples, _ = shards.folder_samples(folder / "train")
    shards.write_shards(folder / "train", tmp_path, 16, seed=3)
    want = [samples[i] for i in shuffled(range(len(samples)), 3)]
    for workers in (0, 3):
        loader = DataLoader(ShardBatches(tmp_path, 6, _pairs), batch_size=None, num_workers=workers)
        got = [pair for batch in loader for pair in batch]
        assert [label for _, label in got] == [label for _, label in want]
        assert all(data == Path(path).read_bytes() for (data, _), (path, _) in zip(got, want))


def test_a_cut_short_shard_or_a_stale_index_is_one_line_naming_the_shard(folder, tmp_path):
    shards.write_shards(folder / "train", tmp_path / "a", 16, seed=1)
    bad = tmp_path / "a" / "shard-000001.tar"
    os.truncate(bad, bad.stat().st_size // 2)
    with pytest.raises(shards.ShardError, match=r"shard .*shard-000001\.tar: unreadable \(cut short"):
        list(ShardBatches(tmp_path / "a", 8, _pairs))
    shards.write_shards(folder / "train", tmp_path / "b", 16, seed=1)
    index = (tmp_path / "b" / "index.json").read_text()
    shards.write_shards(folder / "train", tmp_path / "b", 16, seed=2)  # other bytes where the old index points
    (tmp_path / "b" / "index.json").write_text(index)
    with pytest.raises(shards.ShardError, match="not where index.json says|no JPEG member where the index says"):
        shards.check_shards(tmp_path / "b") and list(ShardBatches(tmp_path / "b", 40, _pairs))
    old = json.loads(index)
    old.pop("version")
    (tmp_path / "b" / "index.json").write_text(json.dumps(old))
    with pytest.raises(shards.ShardError, match="written by an older kit"):
        shards.read_index(tmp_path / "b")


# ---------------------------------------------------------------- the batched crop (CPU kernels)
def test_crop_boxes_follow_random_resized_crop_and_stay_inside_each_image():
    n = 4000
    heights, widths = torch.full((n,), 120), torch.full((n,), 90)
    boxes = crop_boxes(heights, widths, torch.Generator().manual_seed(0))
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    assert (boxes[:, :2] >= 0).all() and (boxes[:, 2] <= 90).all() and (boxes[:, 3] <= 120).all()
    area = w * h / (120 * 90)
    assert area.min() >= 0.07 and area.max() <= 1.0 and (w / h).min() >= 0.7 and (w / h).max() <= 1.4
    assert len(set(boxes[:, 0].tolist())) > 20  # the positions vary
    again = crop_boxes(heights, widths, torch.Generator().manual_seed(0))
    assert torch.equal(boxes, again)  # seeded
    thin = crop_boxes(torch.tensor([4]), torch.tensor([400]), torch.Generator().manual_seed(0))
    assert thin.tolist() == [[197.0, 0.0, 202.0, 4.0]]  # no try fits: the centre crop at ratio 4/3


def test_augment_crops_resizes_flips_and_normalises_every_image_in_one_call():
    images = torch.randint(0, 256, (3, 3, 12, 16), dtype=torch.uint8)
    boxes = torch.tensor([[0, 0, 16, 12], [2, 3, 10, 11], [2, 3, 10, 11]], dtype=torch.float32)
    out = augment(images, boxes, torch.tensor([False, False, True]), 8)
    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1) * 255
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1) * 255
    assert out.shape == (3, 3, 8, 8)
    exact = (images[1:, :, 3:11, 2:10].float() - mean) / std  # an 8x8 box to 8x8: the pixels themselves
    torch.testing.assert_close(out[1], exact[0], atol=1e-4, rtol=0)
    torch.testing.assert_close(out[2], exact[1].flip(2), atol=1e-4, rtol=0)
    whole = augment(images[:1], boxes[:1], torch.tensor([False]), 12)  # 16x12 to 12x12: each column averaged
    assert whole.shape == (1, 3, 12, 12) and whole.abs().max() < 3


def test_decoding_a_packed_batch_matches_pil_and_pads_mixed_sizes(folder):
    paths = sorted((folder / "train").rglob("*.jpg"))[:4]
    small = io.BytesIO()
    Image.open(paths[0]).convert("RGB").resize((40, 30)).save(small, format="JPEG")
    jpegs = [p.read_bytes() for p in paths] + [small.getvalue()]
    data, sizes, labels, none = pack(jpegs, [0, 1, 2, 3, 0])
    assert none == [] and sizes.tolist() == [len(j) for j in jpegs]
    images = decode(data, sizes, torch.device("cpu"))
    for jpeg, image in zip(jpegs, images):
        pil = torch.from_numpy(np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))).permute(2, 0, 1)
        assert image.shape == pil.shape and (image.int() - pil.int()).abs().max() <= 2
    batch, heights, widths = stack(images)
    assert batch.shape == (5, 3, 48, 48) and heights.tolist()[-1] == 30 and widths.tolist()[-1] == 40
    x, y = GpuBatches([], torch.device("cpu"), 32, seed=0).batch((data, sizes, labels, none))
    assert x.shape == (5, 3, 32, 32) and torch.isfinite(x).all() and y.tolist() == [0, 1, 2, 3, 0]
    # A share of 0.6: the first 3 stay bytes for nvJPEG, the worker decodes the last 2 (one tensor per size).
    data3, sizes3, labels3, decoded = pack(jpegs, [0, 1, 2, 3, 0], gpu_share=0.6)
    assert len(sizes3) == 3 and isinstance(decoded, list) and [d.shape for d in decoded] == [(3, 48, 48), (3, 30, 40)]
    assert torch.equal(decoded[0], images[3]) and torch.equal(decoded[1], images[4])
    same = pack(jpegs[:4], [0, 1, 2, 3], gpu_share=0.5)[3]
    assert isinstance(same, torch.Tensor) and same.shape == (2, 3, 48, 48)
    x2, y2 = GpuBatches([], torch.device("cpu"), 32, seed=0).batch((data3, sizes3, labels3, decoded))
    torch.testing.assert_close(x2, x)  # the same seed: the same crops of the same pixels, wherever decoded


class _Seen:
    """The loader, passed through, recording how each batch's decoded images were handed over."""

    def __init__(self, loader) -> None:
        self.loader, self.kinds = loader, []

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        for packed in self.loader:
            self.kinds.append(type(packed[3]).__name__)
            yield packed


def test_batch_slots_carry_the_workers_batches_and_are_all_given_back(folder, tmp_path):
    """Real worker processes fill the shared slots (4 slots each, 5 batches each: every slot reused);
    two passes give the same images as the ordinary hand-over, and no slot is left in use."""
    shards.write_shards(folder / "train", tmp_path, 16, seed=3)
    side = tuple(decode(*pack([first_jpeg(tmp_path)], [0])[:2], torch.device("cpu"))[0].shape)
    assert side == (3, 48, 48)
    slots = BatchSlots(workers=2, per_worker=2, batch=4, image_shape=side)
    passes = {}
    for name, packer in (("plain", Packer(0.0)), ("slots", Packer(0.0, slots))):
        loader = _Seen(DataLoader(ShardBatches(tmp_path, 4, packer), batch_size=None, num_workers=2))
        gpu = GpuBatches(loader, torch.device("cpu"), 16, seed=5, slots=slots if name == "slots" else None)
        passes[name] = [[x for x, _ in gpu] for _ in range(2)]
        passes[name + " kinds"] = loader.kinds
    assert passes["slots kinds"] == ["InSlot"] * 20 and passes["plain kinds"] == ["Tensor"] * 20
    for plain, slotted in zip(passes["plain"], passes["slots"]):
        assert len(plain) == len(slotted) == 10
        for a, b in zip(plain, slotted):
            torch.testing.assert_close(a, b)
    assert bool((slots.state == FREE).all())
    # Not a worker, or a shape that does not fit: the ordinary way.
    assert slots.fill([torch.zeros(3, 48, 48, dtype=torch.uint8)]) is None
    assert not isinstance(pack([first_jpeg(tmp_path)], [0], 0.0, slots)[3], InSlot)


def test_slots_are_sized_from_the_first_jpeg_and_bad_first_samples_fail_cleanly(folder, tmp_path):
    import argparse

    from small_files.shards import ShardError
    from small_files.train import gpu_packer
    shards.write_shards(folder / "train", tmp_path / "s", 16, seed=3)
    args = argparse.Namespace(batch_size=8, gpu_decode_share=0.25)
    packer = gpu_packer(args, {"num_workers": 2}, first_jpeg(tmp_path / "s"))
    assert packer.slots is args.batch_slots and tuple(packer.slots.data.shape) == (2 * 4, 6, 3, 48, 48)
    assert gpu_packer(args, {"num_workers": 0}, first_jpeg(tmp_path / "s")).slots is None  # no workers: no slots
    assert gpu_packer(args, {"num_workers": 2}, b"not a jpeg").slots is None  # the workers will say what is wrong
    first = json.loads((tmp_path / "s" / "index.json").read_text())["shards"][0]["name"]
    (tmp_path / "s" / first).unlink()
    with pytest.raises(ShardError, match=r"^shard .*: unreadable \("):
        first_jpeg(tmp_path / "s")


# ---------------------------------------------------------------- the trainer's switch
def _train(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "small_files/train.py", *args], capture_output=True, text=True,
                          timeout=300, env=ENV, cwd=REPO)


@pytest.mark.skipif(CUDA, reason="checks the refusal on a machine without CUDA")
def test_decode_gpu_without_cuda_is_one_line_exit_2(folder):
    out = _train("--data", str(folder / "train"), "--decode", "gpu", "--max-steps", "1")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("train.py: error: --decode gpu needs a CUDA device") and "Traceback" not in out.stderr


@pytest.mark.skipif(not CUDA, reason="nvJPEG decoding needs a CUDA GPU")
def test_decode_gpu_trains_from_folder_and_shards_with_the_same_first_batch(folder, tmp_path):
    shards.write_shards(folder / "train", tmp_path / "shards", 16, seed=1)
    labels = {}
    for name, data, share in (("folder", folder / "train", "1"), ("shards", tmp_path / "shards", "0.5")):
        out = _train("--data", str(data), "--decode", "gpu", "--gpu-decode-share", share, "--cuda-graph",
                     "--image-size", "32", "--batch-size", "8",
                     "--max-steps", "3", "--num-workers", "2", "--warmup-steps", "1", "--amp", "--channels-last",
                     "--val", str(folder / "val"), "--metrics-json", str(tmp_path / f"{name}.json"))
        assert out.returncode == 0, out.stderr[-2000:]
        result = json.loads((tmp_path / f"{name}.json").read_text())
        assert result["steps"] == 3 and result["settings"]["decode"] == "gpu" and result["gpu_decode_seconds"] > 0
        assert result["test_accuracy"] == result["test_accuracy"]  # the CPU test pass ran (not NaN)
        labels[name] = result["first_batch_labels"]
    assert len(labels["folder"]) == 8 and labels["folder"] == labels["shards"]


@pytest.mark.skipif(not CUDA, reason="nvJPEG decoding needs a CUDA GPU")
def test_nvjpeg_decodes_as_the_cpu_does(folder):
    jpegs = [p.read_bytes() for p in sorted((folder / "train").rglob("*.jpg"))[:8]]
    data, sizes, _, _ = pack(jpegs, [0] * 8)
    on_gpu = decode(data, sizes, torch.device("cuda"))
    on_cpu = decode(data, sizes, torch.device("cpu"))
    # nvJPEG (the H100's JPEG engines) and libjpeg-turbo round and upsample colour differently, so
    # pixels differ by a few levels (a mean of under 1 level failed on the H100): the same picture,
    # not the same bytes.
    for g, c in zip(on_gpu, on_cpu):
        g, c = g.cpu().float(), c.float()
        assert g.shape == c.shape and (g - c).abs().mean() < 8
        assert (g.mean((1, 2)) - c.mean((1, 2))).abs().max() < 2


# ---------------------------------------------------------------- the report: decoding is the cost
def test_advice_names_gpu_decoding_when_the_loop_waits_and_the_workers_mostly_decode():
    from dataclasses import replace

    from profiling.advice import advise
    from profiling.records import JobFacts, LoopSummary
    starved = LoopSummary(file="small_files/train.py", function="train", header_line=1, batches=200,
                          wait_seconds=6.0, compute_seconds=2.0)
    fed = replace(starved, wait_seconds=0.01)
    facts = JobFacts(cpus=16, gpus=1, num_workers=14)
    decoding = replace(facts, read_share=0.03, read_ms=2.6, decode_ms=95.3)  # the H100 node's split
    reading = replace(facts, read_share=0.83, read_ms=1133.2, decode_ms=229.3)  # sshfs, cold
    advice = advise(starved, decoding)
    [why] = [r for r in advice.reasons if r.startswith("Decoding, not reading, is the workers' work")]
    assert "95.3 ms per batch decoding" in why and "2.6 ms opening" in why and "(3% reads)" in why
    assert "--decode gpu" in why and "lesson 09" in why and "lessons/09-small-files.md" in why
    assert "decode_on_gpu" in advice.fired_rules and "workers_from_starved_loop" in advice.fired_rules
    for loop, split in ((fed, decoding), (starved, reading), (starved, facts)):  # fed, reads, or not measured
        assert "decode_on_gpu" not in advise(loop, split).fired_rules
