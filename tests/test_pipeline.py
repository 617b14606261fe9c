"""multi_gpu/pipeline.py: placement files, the stage-cut rule, and real pipeline runs on gloo.

The runs start real processes (torchrun, and srun on the sandbox) on a tiny residual MLP
(width 16, 5 blocks, global batch 32) and compare every weight after 5 SGD steps with a
one-process run of the same model on the same global batch.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ddp_helpers import subprocess_env
from multi_gpu import placement
from multi_gpu.pipeline_models import ModelSpec, block_costs, split

REPO = Path(__file__).resolve().parents[1]
TINY = ["--model", "mlp", "--width", "16", "--depth", "4", "--classes", "4", "--global-batch", "32",
        "--microbatches", "4", "--steps", "5", "--device", "cpu"]
TWO_BY_TWO = REPO / "jobs" / "placements" / "2x2-one-node.yaml"


# ----------------------------------------------------------------------------- placement files
def _check(tmp_path: Path, text: str, *args: str, capsys) -> tuple[int, str, str]:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    code = placement.main([str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


ONE_NODE_4 = ("--hosts", "1", "--gpus-per-host", "4")


@pytest.mark.parametrize(("text", "args", "message"), [
    ("pipelines: [[{host: 0, gpu: 0}, {host: 0, gpu: 1}], [{host: 0, gpu: 1}, {host: 0, gpu: 3}]]",
     ONE_NODE_4, "host 0 GPU 1 is used twice: by pipeline 0 stage 1 and by pipeline 1 stage 0"),
    ("pipelines: [[{host: 0, gpu: 0}, {host: 0, gpu: 1}], [{host: 0, gpu: 2}]]",
     ONE_NODE_4, "every pipeline needs the same number of stages (pipeline 0: 2, pipeline 1: 1)"),
    ("pipelines: [[{host: 0, gpu: 0}, {host: 0, gpu: 1}]]",
     ONE_NODE_4, "the file places 2 stage(s) but the job has 4 task(s); without a stage: host 0 GPU 2, host 0 GPU 3"),
    ("pipelines: [[{host: 1, gpu: 0}, {host: 0, gpu: 1}], [{host: 0, gpu: 2}, {host: 0, gpu: 3}]]",
     ONE_NODE_4, "pipeline 0 stage 0 is on host 1, but the job has 1 host(s) (0..0)"),
    ("pipelines: [[{host: 0, gpu: 0}, {host: 0, gpu: 4}]]",
     ONE_NODE_4, "pipeline 0 stage 1 is on GPU 4, but the job runs 4 task(s) per host (GPUs 0..3)"),
    ("pipelines: [[{host: 0, gpu: -1}]]", ONE_NODE_4, "pipeline 0 stage 0: gpu must be a whole number >= 0, got -1"),
    ("pipelines: [[{host: 0, device: 0}]]", ONE_NODE_4, "pipeline 0 stage 0 must be a mapping {host: H, gpu: G}"),
    ("pipelines: [[]]", ONE_NODE_4, "pipeline 0 must be a non-empty list of stages"),
    ("stages: 2", ONE_NODE_4, "the file must hold a key 'pipelines' with a non-empty list of pipelines"),
    ("pipelines: [[{host: 0, gpu: 0}]]\nranks: 1", ("--hosts", "1", "--gpus-per-host", "1"),
     "unknown key(s) ranks: only 'pipelines' is read"),
    ("pipelines: [[{host: 0, gpu: 0}, {host: 0, gpu: 1]]", ONE_NODE_4, "is not valid YAML (line 1)"),
    ("pipelines: [[{host: 0, gpu: 0}, {host: 0, gpu: 1}], [{host: 0, gpu: 2}, {host: 0, gpu: 3}]]",
     (*ONE_NODE_4, "--stages", "4"), "the file has 2 stage(s) per pipeline but --stages 4 was given"),
], ids=["gpu-twice", "ragged", "idle-tasks", "host-out-of-job", "gpu-out-of-host", "negative",
        "wrong-keys", "empty-pipeline", "no-pipelines", "unknown-key", "bad-yaml", "stages-disagree"])
def test_a_bad_placement_is_refused_in_one_line(tmp_path, capsys, text, args, message) -> None:
    code, out, err = _check(tmp_path, text, *args, capsys=capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("placement: error: ") and message in err, err


def test_an_empty_job_is_refused_in_one_line(capsys) -> None:
    assert placement.main(["--stages", "2", "--hosts", "0"]) == 2
    assert capsys.readouterr().err == "placement: error: a job needs at least 1 host and 1 task per host, got 0 x 0\n"


def test_a_missing_file_is_refused_in_one_line(tmp_path, capsys) -> None:
    assert placement.main([str(tmp_path / "nope.yaml"), *ONE_NODE_4]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read" in err and "nope.yaml" in err


def test_the_shipped_placement_files_pass(capsys) -> None:
    assert placement.main([str(TWO_BY_TWO), *ONE_NODE_4]) == 0
    assert "pipeline 1: s0=host0:gpu1  s1=host0:gpu3" in capsys.readouterr().out
    four = REPO / "jobs" / "placements" / "4x4-two-nodes.yaml"
    assert placement.main([str(four), "--hosts", "2", "--gpus-per-host", "8"]) == 0
    assert "4 pipeline(s) x 4 stage(s) on 2 host(s) x 8 GPU(s)" in capsys.readouterr().out


def test_default_placement_comes_from_the_slurm_allocation() -> None:
    env = {"SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS": "8"}
    placed = placement.resolve(None, 2, 8, env)
    assert (placed.hosts, placed.gpus_per_host, placed.pipelines, placed.stages) == (2, 4, 4, 2)
    # Stages on neighbouring GPUs of one node; the pipelines fill node 0, then node 1.
    assert placed.grid[0] == ((0, 0), (0, 1)) and placed.grid[3] == ((1, 2), (1, 3))
    assert placed.rank_grid() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert placed.role(5) == (2, 1)
    with pytest.raises(placement.PlacementError, match="3 stage.s. do not divide the job's 8 task"):
        placement.resolve(None, 3, 8, env)


def test_a_file_maps_ranks_to_stages_host_by_host() -> None:
    placed = placement.resolve(TWO_BY_TWO, None, 4, {})
    assert placed.rank_grid() == [[0, 2], [1, 3]]  # rank = host * GPUs per host + GPU
    assert [placed.role(r) for r in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]


# ----------------------------------------------------------------------------- the stage-cut rule
def test_split_keeps_blocks_in_order_and_minimises_the_costliest_stage() -> None:
    assert split([1, 1, 1, 1], 2) == [range(0, 2), range(2, 4)]
    assert split([8, 1, 1, 1, 1, 4], 2) == [range(0, 1), range(1, 6)]  # 8 | 8, not 9 | 7
    assert split([5, 5, 5], 3) == [range(0, 1), range(1, 2), range(2, 3)]
    with pytest.raises(ValueError):
        split([1, 1], 3)


def test_block_costs_count_flops_on_the_meta_device() -> None:
    costs, shapes = block_costs(ModelSpec("mlp", classes=4, width=16, depth=4))
    assert len(costs) == 5 and len(set(costs[:4])) == 1  # four equal residual blocks, then the head
    assert costs[0] == 2 * (16 * 64 + 64 * 16)  # two matmuls, 2 FLOPs per multiply-add
    assert shapes[0] == (1, 16) and shapes[-1] == (1, 16)
    resnet, _ = block_costs(ModelSpec("resnet18", classes=10, image_size=32))
    assert len(resnet) == 10 and all(c > 0 for c in resnet)


def test_a_batch_that_does_not_split_is_refused_before_any_process_group() -> None:
    code = subprocess.run([sys.executable, "-m", "multi_gpu.pipeline", *TINY, "--microbatches", "3"],
                          cwd=REPO, env=subprocess_env({"RANK": "0", "WORLD_SIZE": "2"}),
                          capture_output=True, text=True, timeout=120)
    assert code.returncode == 2 and code.stderr.strip().count("\n") == 0, code.stderr
    assert code.stderr.strip() == ("pipeline: error: each pipeline's batch of 32 does not split into "
                                   "3 equal microbatches")


# ----------------------------------------------------------------------------- real runs (gloo)
def _weights(folder: Path) -> dict[str, torch.Tensor]:
    merged: dict[str, torch.Tensor] = {}
    for path in sorted(folder.glob("stage*.pt")):
        merged.update(torch.load(path))
    return merged


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> dict[str, torch.Tensor]:
    """The one-process run: the whole model, the whole global batch, no microbatches."""
    out = tmp_path_factory.mktemp("single")
    done = subprocess.run([sys.executable, "-m", "multi_gpu.pipeline", *TINY, "--save-weights", str(out)],
                          cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "ddp: 1 x 1" in done.stdout
    return _weights(out)


def _assert_same(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    assert got.keys() == want.keys() and len(want) == 4 * 6 + 4  # 4 residual blocks of 6 tensors, the head
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.slow
def test_one_pipeline_of_two_stages_matches_one_process_and_gpipe_equals_1f1b(single, tmp_path) -> None:
    runs = {}
    for schedule in ("gpipe", "1f1b"):
        out = tmp_path / schedule
        done = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
             "-m", "multi_gpu.pipeline", *TINY, "--schedule", schedule, "--save-weights", str(out)],
            cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"pipeline: 1 x 2, {schedule}, 4 microbatches" in done.stdout
        runs[schedule] = _weights(out)
        _assert_same(runs[schedule], single)
    for name, tensor in runs["gpipe"].items():  # the same arithmetic in another order: bit for bit
        assert torch.equal(tensor, runs["1f1b"][name]), name


@pytest.mark.slow
@pytest.mark.slurm
def test_two_pipelines_of_two_stages_under_srun_match_one_process(slurm, single, tmp_path) -> None:
    """srun -n 4 on the 2-core sandbox (--overcommit: 4 tasks share 2 CPUs), placed by a file."""
    out = tmp_path / "srun22"
    done = subprocess.run(
        ["srun", "-n", "4", "--overcommit", "--cpus-per-task=1", "--mem=4G", "--time=5",
         "--job-name=pipeline-test", sys.executable, "-m", "multi_gpu.pipeline", *TINY,
         "--placement", str(TWO_BY_TWO), "--save-weights", str(out)],
        cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pipeline: 2 x 2, 1f1b, 4 microbatches" in done.stdout
    assert "pipeline 0: s0=host0:gpu0  s1=host0:gpu2" in done.stdout
    _assert_same(_weights(out), single)


@pytest.mark.slow
@pytest.mark.slurm
def test_the_one_node_template_trains_one_by_two_on_the_sandbox(slurm, tmp_path) -> None:
    """jobs/templates/pipeline-node.sbatch, CPU variant: 2 tasks (the sandbox's 2 fake GPUs), gloo."""
    site = tmp_path / "site.env"
    site.write_text(f"export SBATCH_PARTITION=debug\nDLKIT_VENV={Path(sys.executable).parents[1]}\n")
    env = {**subprocess_env(), "DLKIT_SITE_ENV": str(site)}
    sbatch = [sys.executable, "-m", "jobs", "sbatch", "--parsable", "--cpus-per-task=1", "--mem=4G",
              str(REPO / "jobs" / "templates" / "pipeline-node.sbatch"), *TINY]
    bad = subprocess.run([*sbatch, "--stages", "3"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    good = subprocess.run(sbatch, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 0 and good.returncode == 0, bad.stderr + good.stderr
    bad_id, good_id = (p.stdout.strip().split(";")[0] for p in (bad, good))
    slurm.wait(bad_id, limit=300)
    slurm.wait(good_id, limit=300)
    bad_log = (tmp_path / f"pipeline-{bad_id}.out").read_text()
    assert "pipeline: error: 3 stage(s) do not divide the job's 2 task(s)" in bad_log
    assert slurm.sacct(bad_id)[bad_id]["ExitCode"] == "2:0"  # refused before srun started anything
    log = (tmp_path / f"pipeline-{good_id}.out").read_text()
    assert slurm.sacct(good_id)[good_id]["State"] == "COMPLETED", log[-3000:]
    assert "pipeline: 1 x 2, 1f1b, 4 microbatches" in log and "step 5 loss" in log, log[-3000:]
    result = json.loads((tmp_path / "runs" / "pipeline" / f"{good_id}.json").read_text())
    assert (result["pipelines"], result["stages"], result["launcher"]) == (1, 2, "srun")
