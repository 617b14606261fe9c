"""profiling/script_reader.py: a script's DataLoader workers read from its text, never run.

Each case is a small script in one of the shapes people write, with the number the reader must
find (None: it must not guess) and a fragment of how it says it found it.
"""
from __future__ import annotations

import textwrap

import pytest

from profiling.script_reader import read_script, read_workers

HEAD = "import os\nfrom torch.utils.data import DataLoader\n"

# (case, body, argv, cpus, value, fragment of `how`, cuda_only)
CASES = [
    ("literal", "DataLoader(ds, num_workers=3)", [], 8, 3, "literal", False),
    ("no-workers-is-zero", "DataLoader(ds, batch_size=4)", [], 8, 0, "default", False),
    ("dict-call", "kw = dict(batch_size=4, num_workers=5)\nDataLoader(ds, **kw)", [], 8, 5, "literal", False),
    ("subscript", "kw = {}\nkw['num_workers'] = 6\nDataLoader(ds, **kw)", [], 8, 6, "literal", False),
    ("spread-in-dict", "base = {'num_workers': 2}\nkw = {**base, 'shuffle': True}\nDataLoader(ds, **kw)",
     [], 8, 2, "literal", False),
    ("if-exp-cuda", "use_cuda = True\nDataLoader(ds, num_workers=4 if use_cuda else 0)", [], 8, 4, "literal", True),
    ("accelerator-only", "use_accel = torch.accelerator.is_available()\nkw = {'batch_size': 64}\nif use_accel:\n"
     "    kw.update({'num_workers': 1, 'pin_memory': True})\nDataLoader(ds, **kw)", [], 1, 1, "literal", True),
    ("env-default-unset", "DataLoader(ds, num_workers=int(os.environ.get('SLURM_CPUS_PER_TASK', 2)))",
     [], None, 2, "does not set it", False),
    ("env-set", "DataLoader(ds, num_workers=int(os.getenv('SLURM_CPUS_PER_TASK', '1')) - 1)", [], 6, 5,
     "SLURM_CPUS_PER_TASK - 1", False),
    ("affinity-min", "DataLoader(ds, num_workers=min(len(os.sched_getaffinity(0)), 4))", [], 16, 4, "min(", False),
    ("other-env", "DataLoader(ds, num_workers=int(os.environ['NUM_WORKERS']))", [], 8, None, "NUM_WORKERS", False),
    ("parameter", "def make(ds, n):\n    return DataLoader(ds, num_workers=n)", [], 8, None, "`n`", False),
    ("config-object", "DataLoader(ds, num_workers=cfg.data.workers)", [], 8, None, "cfg.data.workers", False),
    ("two-loaders-largest", "DataLoader(a, num_workers=2)\nDataLoader(b, num_workers=6)", [], 8, 6, "literal", False),
    ("flag-shell-cpus", "import argparse\np = argparse.ArgumentParser()\np.add_argument('--workers', type=int)\n"
     "args = p.parse_args()\nDataLoader(ds, num_workers=args.workers)", ["--workers", "$SLURM_CPUS_PER_TASK"], 4, 4,
     "--workers $SLURM_CPUS_PER_TASK", False),
    ("flag-shell-other", "import argparse\np = argparse.ArgumentParser()\np.add_argument('--workers', type=int)\n"
     "args = p.parse_args()\nDataLoader(ds, num_workers=args.workers)", ["--workers", "$N"], 4, None, "--workers $N",
     False),
    ("scoped-names", "def a():\n    w = 1\ndef b(ds):\n    w = 7\n    return DataLoader(ds, num_workers=w)",
     [], 8, 7, "literal", False),
]


@pytest.mark.parametrize("case, body, argv, cpus, value, how, cuda_only", CASES, ids=[c[0] for c in CASES])
def test_each_shape_gives_its_number_or_nothing(case, body, argv, cpus, value, how, cuda_only):
    found = read_workers(HEAD + textwrap.dedent(body) + "\n", "train.py", argv, cpus)
    assert found is not None and found.value == value, found
    assert how in found.how and found.cuda_only is cuda_only, found
    assert found.where.startswith("train.py:") or found.where == "the job's command line"


def test_a_script_without_a_loader_gives_none_and_the_line_is_exact():
    assert read_workers("print('hello')\n", "x.py") is None
    found = read_workers(HEAD + "\n\nN = 3\nDataLoader(ds, num_workers=N)\n", "x.py")
    assert found is not None and found.where == "x.py:5"


def test_unreadable_files_give_a_problem(tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "bin.py").write_bytes(b"\x00\x01")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")
    for name, fragment in (("bad.py", "not valid Python (line 1"), ("bin.py", "not a text file"),
                           ("latin.py", "not UTF-8"), ("gone.py", "No such file")):
        read = read_script(tmp_path / name)
        assert read.workers is None and fragment in (read.problem or ""), read


def test_self_referring_names_and_dicts_are_unknown_and_fast():
    """`n = n + 1` thirty times and two dicts updated from each other: no hang, no guess."""
    body = "n = 4\n" + "".join(f"n = n + {i}\n" for i in range(30)) + "a = {}\nb = {}\na.update(b)\nb.update(a)\n"
    found = read_workers(HEAD + body + "DataLoader(x, num_workers=n)\n", "p.py")
    assert found is not None and found.value is None
    assert read_workers(HEAD + body + "DataLoader(x, **a)\n", "p.py").value == 0
