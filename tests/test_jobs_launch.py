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


# (command lines, (script, via, srun, copies unknown) of each launch found)
WRAPPED = [
    (['srun --ntasks=1 bash -c "source env/bin/activate && python main.py --workers 8"'],
     [("main.py", "bash -c", True, False)]),
    (["srun -n 2 sh -lc 'cd run; python3 -u a.py; python3 b.py'"],
     [("a.py", "sh -c", True, False), ("b.py", "sh -c", True, False)]),
    (["bash -c 'srun python t.py'"], [("t.py", "bash -c", True, False)]),
    (["sweeptool hunt --trials 30 --metric loss python main.py --epochs 5"],
     [("main.py", "`sweeptool hunt`", False, False)]),
    (["timeout 3h numactl --cpunodebind=0 python x.py"], [("x.py", "`timeout`", False, False)]),
    (["mpirun -np 4 python x.py"], [("x.py", "`mpirun`", False, True)]),
    (["echo python x.py", "grep -n python x.py", "bash run.sh", "cat <<EOF > python x.py"], []),
    (["ssh node7 python x.py", "salloc -c 4 python x.py"], []),  # elsewhere, with other CPUs
]


@pytest.mark.parametrize("commands, expected", WRAPPED, ids=[c[0][0][:40] for c in WRAPPED])
def test_launches_inside_wrappers_name_the_wrapper(commands, expected):
    found = find_launches(tuple(commands))
    assert [(x.script, x.via, x.srun, x.copies_unknown) for x in found] == expected


@pytest.mark.parametrize("lines, nproc, origin", [
    (["num_gpus=$(nvidia-smi -L | wc -l)", "torchrun --nproc_per_node=$num_gpus t.py"], "gpu",
     "$num_gpus, set to the GPUs the job asked for at line 10"),
    (["export NGPU=2", "echo $NGPU", 'torchrun --nproc-per-node="${NGPU}" t.py'], "2", "${NGPU}, set to 2 at line 10"),
    (["G=`python -c 'import torch; print(torch.cuda.device_count())'`", "torchrun --nproc_per_node $G t.py"], "gpu",
     "$G, set to the GPUs the job asked for at line 10"),
    (["torchrun --nproc_per_node=${SLURM_GPUS_ON_NODE:-1} t.py"], "gpu",
     "${SLURM_GPUS_ON_NODE:-1}, the GPUs the job asked for"),
    (["N=2", "N=4", "torchrun --nproc_per_node=$N t.py"], "$N", None),        # two values: unknown
    (["N=2", "let N=N*2", "torchrun --nproc_per_node=$N t.py"], "$N", None),  # changed: unknown
    (["torchrun --nproc_per_node=$N t.py", "N=2"], "$N", None),               # set only after the launch
    (["for N in 1 2; do torchrun --nproc_per_node=$N t.py; done"], "$N", None),
])
def test_launcher_counts_come_from_variables_set_above(lines, nproc, origin):
    [launch] = find_launches(tuple(lines), (), tuple(range(10, 10 + len(lines))))
    assert (launch.nproc_per_node, launch.nproc_from) == (nproc, origin)
