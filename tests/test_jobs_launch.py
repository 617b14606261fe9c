"""jobs/launch.py: the ways job scripts start Python, and the lines that start none."""
from __future__ import annotations

import pytest

from jobs.launch import find_launches

# (command, (launcher, script or module, args, srun, nproc)) or None when it starts no Python
CASES = [
    ("module load cuda/12.4", None),
    ("conda activate torch-env", None),
    ("source .venv/bin/activate", None),
    ('echo "python train.py"', None),
    ("python train.py --epochs 3", ("python", "train.py", ("--epochs", "3"), False, None)),
    ("srun --ntasks-per-node=4 -c 8 python -u train.py", ("python", "train.py", (), True, None)),
    ("uv run --with torch python train.py -j 4", ("python", "train.py", ("-j", "4"), False, None)),
    ("conda run -n env --no-capture-output python3 t.py", ("python", "t.py", (), False, None)),
    ("apptainer exec --nv -B /data:/data img.sif python t.py", ("python", "t.py", (), False, None)),
    ("torchrun --standalone --nproc-per-node=4 ft.py --cfg x", ("torchrun", "ft.py", ("--cfg", "x"), False, "4")),
    ("srun python -m torch.distributed.run --nproc_per_node gpu t.py", ("torchrun", "t.py", (), True, "gpu")),
    ("kernprof -l -o out.lprof train.py --workers 3", ("kernprof", "train.py", ("--workers", "3"), False, None)),
    ("python -m pkg.train --workers 12", ("python", "pkg.train", ("--workers", "12"), False, None)),
    ("python -m profiling run -o runs/x -- mnist_classify.py --epochs 1",
     ("profiling run", "mnist_classify.py", ("--epochs", "1"), False, None)),
    ('OMP_NUM_THREADS=1 python3.11 -W ignore train.py "$@" > log 2>&1',
     ("python", "train.py", ("--seed", "3"), False, None)),
    ("for lr in 1 2; do python train.py --lr $lr; done", ("python", "train.py", ("--lr", "$lr"), False, None)),
    ("cd run && srun python a.py &", ("python", "a.py", (), True, None)),
]


@pytest.mark.parametrize("command, expected", CASES, ids=[c[0][:40] for c in CASES])
def test_each_way_of_starting_python(command, expected):
    found = find_launches((command,), ("--seed", "3"))
    if expected is None:
        assert found == ()
        return
    [launch] = found
    assert (launch.launcher, launch.script or launch.module, launch.args, launch.srun,
            launch.nproc_per_node) == expected
