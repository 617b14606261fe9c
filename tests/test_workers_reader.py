"""jobs/workers_reader.py: a script's DataLoader workers read from its text, never run.

Each case is a small script in one of the shapes people write, with the number the reader must
find (None: it must not guess) and a fragment of how it says it found it.
"""
from __future__ import annotations

import textwrap

import pytest

from jobs.workers_reader import read_script, read_workers

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


# A helper function, followed one level: (case, body, env the job sets, value, fragment of `how`)
HELPERS = [
    ("returns-variable", "def w():\n    return int(os.environ['SLURM_CPUS_PER_TASK'])\nDataLoader(ds, num_workers=w())",
     {"SLURM_CPUS_PER_TASK": 6}, 6, "SLURM_CPUS_PER_TASK, returned by w() (train.py:4)"),
    ("minus-constant", "def w():\n    n = len(os.sched_getaffinity(0))\n    return n - 1\n"
     "DataLoader(ds, num_workers=w())",
     {}, 7, "len(os.sched_getaffinity(0)) - 1, returned by w()"),
    ("on-node", "def w():\n    return int(os.getenv('SLURM_CPUS_ON_NODE', 2))\nDataLoader(ds, num_workers=w())",
     {"SLURM_CPUS_ON_NODE": 8}, 8, "SLURM_CPUS_ON_NODE"),
    ("constant", "def w():\n    return 3\nDataLoader(ds, num_workers=w())", {}, 3, "literal, returned by w()"),
    ("try-set", "def w():\n    try:\n        return int(os.environ['SLURM_CPUS_PER_TASK'])\n    except KeyError:\n"
     "        return os.cpu_count()\nDataLoader(ds, num_workers=w())", {"SLURM_CPUS_PER_TASK": 4}, 4,
     "SLURM_CPUS_PER_TASK"),
    ("try-unset-fallback", "def w():\n    try:\n        return int(os.environ['SLURM_CPUS_PER_TASK'])\n"
     "    except KeyError:\n"
     "        return 2\nDataLoader(ds, num_workers=w())", {}, 2, "literal, returned by w()"),
    ("guard-set", "def w():\n    if 'SLURM_CPUS_PER_TASK' not in os.environ:\n        return 1\n"
     "    return int(os.environ['SLURM_CPUS_PER_TASK']) - 2\nDataLoader(ds, num_workers=w())",
     {"SLURM_CPUS_PER_TASK": 8}, 6, "SLURM_CPUS_PER_TASK - 2"),
    ("guard-alias-unset", "def w():\n    n = os.environ.get('SLURM_CPUS_PER_TASK')\n    if n:\n        return int(n)\n"
     "    return os.cpu_count()\nDataLoader(ds, num_workers=w())", {}, None, "os.cpu_count()"),
    ("affinity-or-count", "def w():\n    try:\n        return len(os.sched_getaffinity(0)) - 1\n"
     "    except AttributeError:\n        return os.cpu_count() - 1\nDataLoader(ds, num_workers=w())", {}, 7,
     "len(os.sched_getaffinity(0)) - 1"),
    ("hasattr-guard", "def w():\n    if hasattr(os, 'sched_getaffinity'):\n"
     "        return len(os.sched_getaffinity(0))\n    return 4\nDataLoader(ds, num_workers=w())", {}, 8,
     "len(os.sched_getaffinity(0))"),
    ("value-test-both-paths", "def w():\n    n = int(os.environ['SLURM_CPUS_PER_TASK'])\n    if n > 8:\n"
     "        return 8\n    return n\nDataLoader(ds, num_workers=w())", {"SLURM_CPUS_PER_TASK": 4}, None,
     "returns different values"),
    ("method", "class T:\n    def nw(self):\n        return len(os.sched_getaffinity(0))\n    def dl(self):\n"
     "        return DataLoader(ds, num_workers=self.nw())", {}, 8, "returned by self.nw()"),
    ("two-returns-differ", "def w(fast):\n    if fast:\n        return 8\n    return 0\n"
     "DataLoader(ds, num_workers=w(1))",
     {}, None, "returns different values"),
    ("parameter", "def w(n):\n    return n - 1\nDataLoader(ds, num_workers=w(4))", {}, None, "returns `n - 1`"),
    ("two-levels", "def a():\n    return 4\ndef b():\n    return a()\nDataLoader(ds, num_workers=b())", {}, None,
     "a()"),
    ("data-module", "class Data:\n    def __init__(self, num_workers=0):\n        self.nw = num_workers\n"
     "    def train(self):\n        return DataLoader(ds, num_workers=self.nw)\nData(batch_size=4, num_workers=5)",
     {}, 5, "passed to Data()"),
    ("loader-known-wins", "make_loader(ds, num_workers=9)\nDataLoader(ds, num_workers=2)", {}, 2, "literal"),
    ("module-only", "import lightning as L\ndm = L.SomeDataModule('data/', num_workers=int(os.environ['N']))",
     {}, None, "no DataLoader"),
]


@pytest.mark.parametrize("case, body, env, value, how", HELPERS, ids=[c[0] for c in HELPERS])
def test_helpers_are_followed_one_level_and_data_modules_count(case, body, env, value, how):
    found = read_workers(HEAD + textwrap.dedent(body) + "\n", "train.py", [], 8, env)
    if how == "no DataLoader":  # an unknown data-module value and no loader: nothing to say
        assert found is None
        return
    assert found is not None and found.value == value, found
    assert how in found.how, found


def test_a_data_module_value_the_command_line_may_override_is_not_taken():
    body = HEAD + "Data(num_workers=4)\nargparse.ArgumentParser().set_defaults(num_workers=9)\n"
    assert read_workers(body, "fit.py", [], 8).value == 4
    assert read_workers(body, "fit.py", ["data.num_workers=1"], 8) is None


def test_a_helper_in_a_module_beside_the_script(tmp_path):
    """`from helpers import w` and `import tools as t; t.w()`: the module's file is read, never run."""
    (tmp_path / "helpers.py").write_text("import os\nraise SystemExit('run!')\n\ndef w():\n"
                                         "    return int(os.environ['SLURM_CPUS_PER_TASK']) - 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "tools.py").write_text("def w():\n    return 5\n")
    script = tmp_path / "train.py"
    script.write_text(HEAD + "from helpers import w\nDataLoader(ds, num_workers=w())\n")
    read = read_script(script, [], 4, {"SLURM_CPUS_PER_TASK": 4})
    assert read.workers is not None and (read.workers.value, read.workers.where) == (3, "train.py:4")
    assert "returned by w() (helpers.py:5)" in read.workers.how
    script.write_text(HEAD + "import pkg.tools as t\nDataLoader(ds, num_workers=t.w())\n")
    assert read_script(script, [], 4).workers.value == 5
    script.write_text(HEAD + "from elsewhere import w\nDataLoader(ds, num_workers=w())\n")  # not beside it
    assert read_script(script, [], 4).workers.value is None
