"""Lesson 09's small-files tools on real files: shards, the training script, sshfs, vmtouch, jobs.

Everything works on a tiny generated folder (a few dozen 48-pixel JPEGs, written in about a
second) so the whole file stays cheap on a 2-core CI machine.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from small_files import cache, remote, shards
from small_files.cli import main as small_files_main
from small_files.generate import generate, image_bytes

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("small-files")
    generate(root, train=48, val=12, classes=3, size=48, seed=5, jobs=1)
    return root


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "small_files", *args], capture_output=True, text=True,
                          timeout=timeout, env=ENV, cwd=REPO)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- the data set and the shards
def test_generated_folder_is_deterministic_and_in_imagefolder_layout(folder, tmp_path):
    files = sorted(folder.rglob("*.jpg"))
    assert len(files) == 60 and {p.parent.name for p in files} == {"class00", "class01", "class02"}
    assert (folder / "train" / "class01" / "000004.jpg").read_bytes() == image_bytes(5, 4, 1, 48)
    generate(tmp_path, train=48, val=0, classes=3, size=48, seed=5, jobs=2)  # other process count, same bytes
    assert all(p.read_bytes() == (folder / p.relative_to(tmp_path)).read_bytes() for p in tmp_path.rglob("*.jpg"))
    assert not (tmp_path / "val").exists()


@pytest.mark.parametrize("per_shard", [1, 4, 64])
def test_shards_round_trip_every_sample_byte_identical_with_its_label(folder, tmp_path, per_shard):
    samples, classes = shards.folder_samples(folder / "train")
    index = shards.write_shards(folder / "train", tmp_path, per_shard, seed=3)
    assert len(index["shards"]) == -(-48 // per_shard) and index["classes"] == classes
    got = list(shards.raw_samples(tmp_path))
    order = shards.sample_order(len(samples), 3)
    assert len(got) == len(samples) == 48
    for i, (key, jpg, label) in zip(order, got):
        path, want_label = samples[i]
        assert key == f"{classes[want_label]}/{Path(path).stem}"
        assert jpg == Path(path).read_bytes() and label == want_label
    assert shards.check_shards(tmp_path) == (48, [])


def test_shard_order_is_fixed_by_the_seed_and_the_files_are_reproducible(folder, tmp_path):
    shards.write_shards(folder / "train", tmp_path / "a", 16, seed=3)
    shards.write_shards(folder / "train", tmp_path / "b", 16, seed=3)
    shards.write_shards(folder / "train", tmp_path / "c", 16, seed=4)
    keys = {name: [k for k, _, _ in shards.raw_samples(tmp_path / name)] for name in "abc"}
    assert keys["a"] == keys["b"] != keys["c"] and sorted(keys["a"]) == sorted(keys["c"])
    assert digest(tmp_path / "a" / "shard-000000.tar") == digest(tmp_path / "b" / "shard-000000.tar")


@pytest.mark.slow
def test_training_from_shards_and_from_the_folder_sees_the_same_first_batch(folder, tmp_path):
    shard_dir = tmp_path / "shards"
    assert small_files_main(["shard", str(folder / "train"), str(shard_dir), "--per-shard", "16", "--seed", "7"]) == 0
    labels = {}
    for name, data in (("folder", folder / "train"), ("shards", shard_dir)):
        out = subprocess.run([sys.executable, "small_files/train.py", "--data", str(data), "--seed", "7",
                              "--image-size", "32", "--batch-size", "8", "--max-steps", "1", "--num-workers", "1",
                              "--device", "cpu", "--val", str(folder / "val"),
                              "--metrics-json", str(tmp_path / f"{name}.json")],
                             capture_output=True, text=True, timeout=300, env=ENV, cwd=REPO)
        assert out.returncode == 0, out.stderr[-2000:]
        result = json.loads((tmp_path / f"{name}.json").read_text())
        assert result["steps"] == 1 and result["settings"]["format"] in {"image folder", "shards"}
        assert result["epoch_images"] == [8] and len(result["epoch_seconds"]) == 1  # what a sweep times
        labels[name] = result["first_batch_labels"]
    assert len(labels["folder"]) == 8 and labels["folder"] == labels["shards"]


# ---------------------------------------------------------------- corrupt shards: one line, exit 2
def _drop_member(shard: Path, suffix: str) -> None:
    """Rewrite SHARD without its first member that ends in SUFFIX (a sample missing a part)."""
    with tarfile.open(shard) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    dropped = next(i for i, (m, _) in enumerate(members) if m.name.endswith(suffix))
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tar:
        for i, (m, data) in enumerate(members):
            if i != dropped:
                tar.addfile(m, __import__("io").BytesIO(data))


@pytest.mark.parametrize("damage", ["truncated", "missing .cls", "missing .jpg"])
def test_a_corrupt_shard_is_named_in_one_line_exit_2_and_the_others_are_kept(folder, tmp_path, damage, capsys):
    shard_dir = tmp_path / "shards"
    shards.write_shards(folder / "train", shard_dir, 16, seed=1)
    bad = shard_dir / "shard-000001.tar"
    if damage == "truncated":
        os.truncate(bad, bad.stat().st_size // 2)
    else:
        _drop_member(bad, damage.split()[-1])
    before = {p.name: digest(p) for p in shard_dir.iterdir()}

    assert small_files_main(["check", str(shard_dir)]) == 2
    out = capsys.readouterr()
    assert out.err.count("\n") == 1 and "shard-000001.tar" in out.err
    assert out.out.startswith("32 samples in good shards, 1 bad shard(s)")

    if damage != "truncated":
        return  # the training script reads the shards the same way: one damaged kind is enough there
    train = subprocess.run([sys.executable, "small_files/train.py", "--data", str(shard_dir), "--image-size", "32",
                            "--batch-size", "16", "--num-workers", "1", "--device", "cpu"],
                           capture_output=True, text=True, timeout=300, env=ENV, cwd=REPO)
    assert train.returncode == 2, train.stderr[-2000:]
    [line] = [x for x in train.stderr.splitlines() if x.strip()]
    assert line.startswith("train.py: error: shard ") and "shard-000001.tar" in line
    assert {p.name: digest(p) for p in shard_dir.iterdir()} == before  # nothing rewritten or removed


def test_bad_command_lines_are_one_line_and_exit_2(tmp_path, capsys):
    for args in (["shard", str(tmp_path / "nope"), str(tmp_path / "out")], ["check", str(tmp_path)],
                 ["shard", str(tmp_path), str(tmp_path / "o"), "--per-shard", "x"]):
        try:
            code = small_files_main(args)
        except SystemExit as exc:  # argparse's own errors
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, (args, err)
        assert err.startswith(("python -m small_files", "small_files ")) and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- page cache and sshfs
@pytest.fixture(scope="session")
def vmtouch() -> None:
    if shutil.which("vmtouch") is None:
        if IN_CI:
            pytest.fail("vmtouch missing: `make system-deps` installs it", pytrace=False)
        pytest.skip("vmtouch not installed (make system-deps)")


def test_eviction_leaves_no_page_resident(vmtouch, folder, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(folder / "train", copy)
    for p in copy.rglob("*.jpg"):
        p.read_bytes()
    pages, total = cache.resident(copy)
    assert total >= 48 and pages == total
    cache.evict(copy)
    assert cache.resident(copy) == (0, total)
    assert small_files_main(["evict", str(copy)]) == 0
    assert capsys.readouterr().out.startswith(f"evicted: 0/{total} pages resident (0%)")


@pytest.fixture(scope="session")
def sshfs() -> None:
    problem = remote.missing_tools()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"sshfs mount impossible in CI: {problem}", pytrace=False)
        pytest.skip(problem)


def _mounts() -> str:
    return Path("/proc/self/mounts").read_text()


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def test_sshfs_mount_serves_the_files_and_leaves_nothing_behind(sshfs, folder):
    with remote.sshfs_mount(folder / "train") as mount:
        private = mount.parent
        assert f" {mount} fuse.sshfs " in _mounts()
        served = sorted(p.relative_to(mount) for p in mount.rglob("*.jpg"))
        assert served == sorted(p.relative_to(folder / "train") for p in (folder / "train").rglob("*.jpg"))
        assert (mount / served[0]).read_bytes() == (folder / "train" / served[0]).read_bytes()
        running = _processes_mentioning(str(private))  # the private sshd and the sshfs client run
        assert running and any("Ciphers=aes128-gcm@openssh.com" in p for p in running)  # the cheap cipher
    assert str(private) not in _mounts() and not private.exists()
    assert _processes_mentioning(str(private)) == []


def test_sshfs_command_runs_a_reader_on_the_mount_and_unmounts(sshfs, folder):
    out = cli("sshfs", str(folder / "train"), "--", sys.executable, "-m", "small_files", "read", "{mount}",
              "--workers", "1")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["samples"] == 48 and result["source"].endswith("/mnt") and "dlkit-sshfs-" in result["source"]
    assert "dlkit-sshfs-" not in _mounts()


# ---------------------------------------------------------------- the three job templates on the sandbox
@pytest.mark.slurm
@pytest.mark.slow
def test_folder_shards_and_staged_templates_train_on_the_sandbox(slurm, folder, tmp_path, monkeypatch, python_exe):
    shard_dir = tmp_path / "shards"
    shards.write_shards(folder / "train", shard_dir, 16, seed=1)  # seed 1 = small_files/train.py's default
    site = tmp_path / "site.env"
    site.write_text(f"export SBATCH_PARTITION=debug\nDLKIT_VENV={Path(python_exe).parents[1]}\n"
                    f"DLKIT_DATA_DIR={tmp_path}\n")
    monkeypatch.setenv("DLKIT_SITE_ENV", str(site))
    monkeypatch.setenv("DLKIT_ROOT", str(REPO))  # plain sbatch from another folder: say where the kit is
    tiny = ["--image-size", "32", "--batch-size", "8", "--max-steps", "2", "--device", "cpu",
            "--val", str(folder / "val")]
    jobs = {}
    for name, data in (("folder", folder / "train"), ("shards", shard_dir), ("staged", shard_dir)):
        monkeypatch.setenv("SMALL_FILES_DATA", str(data))
        jobs[name] = slurm.submit(str(REPO / "jobs" / "templates" / f"small-files-{name}.sbatch"), *tiny, cwd=tmp_path)
    for name, job in jobs.items():
        slurm.wait(job, limit=400)
        log = (tmp_path / f"small-files-{name}-{job}.out").read_text()
        state = slurm.sacct(job)[job]["State"]
        assert state == "COMPLETED", f"{name} job {job} ended {state}:\n{log[-3000:]}"
    result = {name: json.loads((tmp_path / "runs" / "small-files" / f"{job}.metrics.json").read_text())
              for name, job in jobs.items()}
    assert {r["steps"] for r in result.values()} == {2}
    assert result["folder"]["settings"]["format"] == "image folder"
    assert result["shards"]["settings"]["format"] == "shards"
    assert result["folder"]["first_batch_labels"] == result["shards"]["first_batch_labels"] == \
        result["staged"]["first_batch_labels"]
    staged_log = (tmp_path / f"small-files-staged-{jobs['staged']}.out").read_text()
    local = result["staged"]["settings"]["data"]
    assert f"from {shard_dir} to " in staged_log and " files) " in staged_log and "staging " in staged_log
    assert local.endswith(f"dlkit-stage-{jobs['staged']}/data") and not Path(local).exists()  # cleaned up


# ---------------------------------------------------------------- the I/O-versus-decode split and its advice
def test_split_measures_read_and_decode_time_per_batch_and_stores_it_in_the_meta(folder, tmp_path, capsys):
    meta = tmp_path / "run.meta.json"
    meta.write_text(json.dumps({"argv": ["small_files/train.py"]}))
    assert small_files_main(["split", str(folder / "train"), "--workers", "1", "--image-size", "32",
                             "--meta", str(meta)]) == 0
    assert capsys.readouterr().out.startswith("read ")
    split = json.loads(meta.read_text())["io_split"]
    assert split["samples"] == 48 and split["batches"] == 1 and split["workers"] == 1
    assert split["read_ms_per_batch"] > 0 and split["decode_ms_per_batch"] > 0 and 0 < split["read_share"] < 1


def test_advice_says_group_or_stage_instead_of_more_workers_when_reads_dominate():
    from dataclasses import replace

    from profiling.advice import advise
    from profiling.records import JobFacts, LoopSummary
    loop = LoopSummary(file="small_files/train.py", function="train", header_line=1, batches=200,
                       wait_seconds=6.0, compute_seconds=2.0)
    facts = JobFacts(cpus=16, gpus=1, num_workers=4)

    def split(share: float) -> JobFacts:  # the run's io_split, as build_facts reads it from the meta
        return replace(facts, read_share=share, read_ms=100 * share, decode_ms=100 * (1 - share))
    reads, decoding, unknown = advise(loop, split(0.8)), advise(loop, split(0.2)), advise(loop, facts)
    assert "many_small_files" in reads.fired_rules and "workers_from_starved_loop" not in reads.fired_rules
    [why] = [r for r in reads.reasons if r.startswith("Many small files: group them or stage them.")]
    assert "80.0 ms per batch opening and reading files and 20.0 ms decoding (80% reads)" in why
    assert "many_small_files" not in decoding.fired_rules and "workers_from_starved_loop" in decoding.fired_rules
    assert [r for r in decoding.fired_rules if r != "decode_on_gpu"] == unknown.fired_rules
