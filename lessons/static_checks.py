"""Check the blocks a learner runs only on a real cluster (or once, at set-up) without running them.

What can be checked on a laptop with the Slurm sandbox, is:

* the block is valid bash (``bash -n``);
* every path into the kit it names exists in the checkout;
* every ``make TARGET`` exists (``make -n``);
* every job script given to ``sbatch`` passes the job checker (``python -m jobs check``) and
  ``sbatch --test-only`` with the same options. A request bigger than the one-node sandbox (more
  nodes, CPUs, GPUs or memory than it has, or GPU shards where it offers none) is tried again
  shrunk to fit, without the site's partition and account: Slurm must then accept every other
  directive of the script;
* every ``SCRIPT.py ARGS`` (also after srun, torchrun or ``profiling run --``) parses with the
  script's own ``build_parser()``, so a renamed flag breaks the lesson here, not in a workshop.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lessons.blocks import Block, commands
from profiling.argv import strip_flags

KIT_DIRS = ("jobs", "profiling", "multi_gpu", "lessons", "benchmarks", "docs", "tests")
_SHELL_OPS = {"&&", "||", "|", ";", "&"}
#: Slurm's answers for a request that is valid but bigger than the one-node sandbox.
_TOO_BIG = ("Requested node configuration is not available", "More processors requested than permitted",
            "Node count specification invalid", "Memory required by task is not available")
#: Options that name a cluster's own partitions and accounts, unknown to the sandbox.
_SITE_OPTIONS = ("--partition", "-p", "--account", "-A", "--qos", "-q", "--reservation")
#: Appended (so they win) when a cluster-sized request is re-tried on the sandbox.
_SHRINK = ["--nodes=1", "--ntasks-per-node=1", "--cpus-per-task=1", "--gres=gpu:1", "--mem=1G"]

_PARSE_ARGS = """
import importlib.util, json, sys
path, args = sys.argv[1], json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("lesson_checked_script", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
if hasattr(module, "build_parser"):
    module.build_parser().parse_args(args)
"""


def _run(argv: list[str], root: Path, env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def _path_problems(words: list[str], root: Path) -> list[str]:
    problems = []
    for word in words:
        candidate = word.split("=", 1)[-1]
        if any(c in candidate for c in "$*?{}<>") or "/" not in candidate:
            continue
        if candidate.split("/", 1)[0] in KIT_DIRS and not (root / candidate).exists():
            problems.append(f"{candidate}: no such file in the kit")
    return problems


def _sbatch_problems(words: list[str], root: Path, env: dict[str, str]) -> list[str]:
    i = words.index("sbatch")
    scripts = [w for w in words[i + 1 :] if not w.startswith("-") and (root / w).is_file()]
    if not scripts:
        return [f"sbatch without a job script of the kit: {' '.join(words)}"]
    script = scripts[0]
    options = words[i + 1 : words.index(script, i + 1)]
    problems = []
    if not (root / "jobs" / "__main__.py").exists() and not (root / "jobs" / "check.py").exists():
        problems.append("the job checker (python -m jobs check) is not in the kit yet")
    else:
        code, out = _run([sys.executable, "-m", "jobs", "check", script], root, env)
        if code != 0:
            problems.append(f"python -m jobs check {script}: exit {code}: {out}")
    # Values only the real run knows (a job id in --dependency=afterany:$array) cannot be tested.
    options = _without_site_options([o for o in options
                                     if o not in ("--wait", "-W", "--parsable") and "$" not in o])
    code, out = _run(["sbatch", "--test-only", *options, script], root, env, timeout=30)
    if code != 0 and any(msg in out for msg in _TOO_BIG) or _shards_unknown_here(code, out, script, options, root, env):
        # Valid, but cluster-sized: the same directives, shrunk to fit, must still be accepted.
        local = options + _SHRINK
        code, out = _run(["sbatch", "--test-only", *local, script], root, env, timeout=30)
    if code != 0:
        problems.append(f"sbatch --test-only {' '.join(options + [script])}: exit {code}: {out}")
    return problems


def _shards_unknown_here(code: int, out: str, script: str, options: list[str], root: Path,
                         env: dict[str, str]) -> bool:
    """A shard request (lesson 10) refused only because this sandbox offers no gres/shard: the other
    directives are then tried with a whole GPU. A sandbox with shards tests the request as it is."""
    if code == 0 or "Invalid generic resource" not in out:
        return False
    asked = any("shard" in o for o in options) or "shard:" in (root / script).read_text(errors="replace")
    _, offered = _run(["sinfo", "-h", "-o", "%G"], root, env, timeout=30)
    return asked and "shard" not in offered


def _without_site_options(options: list[str]) -> list[str]:
    """The sandbox has none of the site's partitions or accounts, so their options are dropped."""
    return strip_flags(options, _SITE_OPTIONS)


def _script_args(words: list[str], root: Path) -> tuple[str, list[str]] | None:
    """The first kit ``*.py`` in a command and the arguments that follow it."""
    for i, word in enumerate(words):
        if word.endswith(".py") and (root / word).is_file():
            args = []
            for arg in words[i + 1 :]:
                if arg in _SHELL_OPS or arg.startswith(">"):
                    break
                args.append(arg)
            return word, args
    return None


def _argument_problems(words: list[str], root: Path, env: dict[str, str]) -> list[str]:
    found = _script_args(words, root)
    if found is None:
        return []
    script, args = found[0], [os.path.expandvars(a) for a in found[1]]
    if any("$" in a for a in args):
        return []  # a variable only the cluster has: the value cannot be checked here
    code, out = _run([sys.executable, "-c", _PARSE_ARGS, str(root / script), json.dumps(args)], root, env)
    if code != 0:
        last = out.splitlines()[-1] if out else ""
        return [f"{script} {' '.join(args)}: the script's parser refuses it: {last}"]
    return []


def static_problems(block: Block, root: Path, env: dict[str, str]) -> list[str]:
    """Everything wrong with a cluster or set-up block, as one line each (empty: it is fine)."""
    code, out = _run(["bash", "-n", "-c", block.text], root, env)
    problems = [f"bash -n: {out}"] if code != 0 else []
    for words in commands(block.text):
        problems += _path_problems(words, root)
        if words[0] == "make":
            targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
            code, out = _run(["make", "-n", *targets], root, env)
            if code != 0:
                problems.append(f"make -n {' '.join(targets)}: {out.splitlines()[-1] if out else code}")
        if "sbatch" in words:
            problems += _sbatch_problems(words, root, env)
        problems += _argument_problems(words, root, env)
    return problems
