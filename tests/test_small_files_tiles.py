"""Lesson 09's tiled shards (`python -m small_files shard --tile T`), on real generated JPEGs.

A sheet holds T x T consecutive samples pasted into one JPEG, so that a GPU decoder pays its
per-image cost once a sheet. The checks: the same samples in the same order as untiled shards,
each cut from its sheet (within what a second JPEG encoding changes), on the CPU path, on the GPU
path's batched crop (run on the CPU here), in training, and one clear line for bad input.
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

from small_files import shards
from small_files.cli import main as small_files_main
from small_files.generate import generate
from small_files.gpu_batch import GpuBatches, Packer
from small_files.shardread import ShardBatches
from small_files.transforms import decode_images

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
CUDA = torch.cuda.is_available()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """40 training images in shards of 10, untiled and tiled 2 x 2: each shard ends with a half sheet."""
    root = tmp_path_factory.mktemp("small-files-tiles")
    generate(root, train=40, val=8, classes=4, size=48, seed=3, jobs=1)
    shards.write_shards(root / "train", root / "plain", 10, seed=1)
    shards.write_shards(root / "train", root / "tiled", 10, seed=1, tile=2, jobs=2)
    return root


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.int16)


def test_tiled_shards_hold_the_same_samples_in_order_each_cut_from_its_sheet(data):
    index = shards.read_index(data / "tiled")
    assert index["tile"] == 2 and index["cell"] == [48, 48] and index["samples"] == 40
    assert shards.check_shards(data / "tiled") == (40, [])
    with __import__("tarfile").open(data / "tiled" / "shard-000000.tar") as tar:
        names = tar.getnames()
    assert names == ["sheet000000.jpg", "sheet000000.labels", "sheet000004.jpg", "sheet000004.labels",
                     "sheet000008.jpg", "sheet000008.labels"]  # 10 samples: sheets of 4, 4 and 2
    # Batches of 6 cross sheets and shards: the same labels in the same order, the same pictures.
    plain = list(ShardBatches(data / "plain", 6, lambda jpegs, labels: (jpegs, labels)))
    tiled = list(ShardBatches(data / "tiled", 6, lambda jpegs, labels, where: (jpegs, labels, where)))
    assert [labels for _, labels in plain] == [labels for _, labels, _ in tiled]
    for (jpegs, _), (sheets, _, where) in zip(plain, tiled):
        assert len(sheets) < len(jpegs) and where.shape == (len(jpegs), 5)
        for original, cut in zip(decode_images(jpegs), decode_images(sheets, where)):
            assert cut.size == original.size == (48, 48)
            assert np.abs(_pixels(cut) - _pixels(original)).mean() < 4  # encoded again at quality 95


def test_the_gpu_paths_batched_crop_cuts_the_same_pictures_from_sheets(data):
    """GpuBatches on the CPU (torchvision's decode_jpeg and roi_align have CPU kernels): with one seed,
    the tiled and the untiled shards give the same crops of the same pictures."""
    out = {}
    for name in ("plain", "tiled"):
        loader = DataLoader(ShardBatches(data / name, 8, Packer()), batch_size=None, num_workers=2)
        out[name] = list(GpuBatches(loader, torch.device("cpu"), 32, seed=4))
    assert [y.tolist() for _, y in out["plain"]] == [y.tolist() for _, y in out["tiled"]]
    for (a, _), (b, _) in zip(out["plain"], out["tiled"]):
        assert a.shape == b.shape == (len(a), 3, 32, 32)
        assert (a - b).abs().mean() < 0.1  # normalised units: a few levels of 255 after the second encoding


def test_training_reads_tiled_shards_as_it_reads_untiled_ones(data, tmp_path):
    labels = {}
    for name in ("plain", "tiled"):
        run = subprocess.run([sys.executable, "small_files/train.py", "--data", str(data / name), "--device", "cpu",
                              "--image-size", "32", "--batch-size", "8", "--max-steps", "3", "--num-workers", "1",
                              "--val", str(data / "val"), "--metrics-json", str(tmp_path / f"{name}.json")],
                             capture_output=True, text=True, timeout=300, env=ENV, cwd=REPO)
        assert run.returncode == 0, run.stderr[-2000:]
        result = json.loads((tmp_path / f"{name}.json").read_text())
        assert result["steps"] == 3 and result["settings"]["tile"] == (2 if name == "tiled" else 1)
        labels[name] = result["first_batch_labels"]
    assert len(labels["plain"]) == 8 and labels["plain"] == labels["tiled"]


def test_tiling_images_of_two_sizes_is_one_line_exit_2_and_writes_no_shard(data, tmp_path, capsys):
    folder = tmp_path / "mixed"
    for label, side in (("a", 48), ("b", 40)):
        (folder / label).mkdir(parents=True)
        for i in range(3):
            buffer = io.BytesIO()
            Image.new("RGB", (side, side), (40 * i, 90, 160)).save(buffer, format="JPEG")
            (folder / label / f"{i}.jpg").write_bytes(buffer.getvalue())
    for per_shard in ("2", "6"):  # the sizes differ across shards, then inside one sheet
        out = tmp_path / f"out{per_shard}"
        assert small_files_main(["shard", str(folder), str(out), "--tile", "2", "--per-shard", per_shard]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "same size" in err and "Traceback" not in err, err
        assert not (out / shards.INDEX).exists() and not list(out.glob("*.tar")) and not list(out.glob(".*"))


@pytest.mark.skipif(not CUDA, reason="nvJPEG decoding needs a CUDA GPU")
def test_decode_gpu_trains_from_tiled_shards_and_refuses_a_share_below_1(data, tmp_path):
    def train(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "small_files/train.py", "--data", str(data / "tiled"), "--decode", "gpu",
                               "--image-size", "32", "--batch-size", "8", "--max-steps", "3", "--num-workers", "2",
                               "--no-test", *flags], capture_output=True, text=True, timeout=300, env=ENV, cwd=REPO)

    run = train("--metrics-json", str(tmp_path / "m.json"))
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads((tmp_path / "m.json").read_text())
    assert result["steps"] == 3 and result["settings"]["tile"] == 2 and result["gpu_decode_seconds"] > 0
    refused = train("--gpu-decode-share", "0.5")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "tiled" in refused.stderr


@pytest.mark.parametrize("name", ["plain", "tiled"])
def test_several_decoding_threads_hand_over_the_same_batches_in_the_same_order(data, name):
    """Real threads (on the CPU here): each batch's crops come from the one generator in the loader's
    order, so 3 helpers taking turns give exactly what 1 gives."""
    def run(threads: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        loader = DataLoader(ShardBatches(data / name, 4, Packer()), batch_size=None, num_workers=2)
        return list(GpuBatches(loader, torch.device("cpu"), 24, seed=9, threads=threads))

    one, three = run(1), run(3)
    assert len(one) == len(three) == 10
    for (x1, y1), (x3, y3) in zip(one, three):
        assert torch.equal(y1, y3) and torch.equal(x1, x3)


def test_a_bad_shard_still_stops_the_loop_with_several_decoding_threads(data, tmp_path):
    broken = tmp_path / "tiled"
    __import__("shutil").copytree(data / "tiled", broken)
    os.truncate(broken / "shard-000002.tar", 100)
    loader = DataLoader(ShardBatches(broken, 4, Packer()), batch_size=None, num_workers=1)
    with pytest.raises(shards.ShardError, match="shard-000002.tar"):
        list(GpuBatches(loader, torch.device("cpu"), 24, seed=9, threads=3))


def test_readers_that_take_one_jpeg_a_sample_refuse_tiled_shards_in_one_line(data, capsys):
    for args in (["split", str(data / "tiled"), "--workers", "1"],
                 ["read", str(data / "tiled"), "--workers", "1", "--reader", "webdataset"]):
        assert small_files_main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "tiled shards (--tile 2)" in err and "Traceback" not in err, err
    assert small_files_main(["read", str(data / "tiled"), "--workers", "1"]) == 0  # the kit's own reader
    assert json.loads(capsys.readouterr().out)["samples"] == 40
