"""The lessons are executable: their marked blocks run, in order, in a fresh copy of the kit.

Fast tests check the marking machinery and the lessons' structure; slow tests run each lesson, in
order, against the real local Slurm sandbox (see docs/lesson-format.md for the convention).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from lessons import diff, runner
from lessons.blocks import SHELL_MODES, commands, extract, lesson_files, parse_info
from lessons.shape import json_mismatch, line_pattern, mismatch, text_mismatch

REPO = Path(__file__).resolve().parents[1]

LESSONS = lesson_files(REPO / "lessons")
#: The lesson plan of issue 7; the files must exist, numbered in this order.
PLAN = ["00-setup", "01-baseline", "02-profile", "03-apply-advice", "04-go-faster",
        "05-ddp-one-node", "06-many-nodes", "07-preemption", "08-efficiency", "09-small-files",
        "10-gpu-sharing", "11-pipeline"]


# --- the marking machinery ---------------------------------------------------------------------

def test_info_string_is_split_into_language_mode_options_and_note() -> None:
    assert parse_info("bash run exit=2 timeout=60") == ("bash", "run", {"exit": "2", "timeout": "60"}, "")
    assert parse_info("text expected file=runs/a.txt 2-core CPU (sandbox)") == (
        "text", "expected", {"file": "runs/a.txt"}, "2-core CPU (sandbox")
    assert parse_info("python") == ("python", "", {}, "")


def test_blocks_are_extracted_in_order_with_their_lines(tmp_path: Path) -> None:
    md = tmp_path / "01-x.md"
    md.write_text("# t\n```bash run\necho a\n```\ntext\n````text expected 2-core CPU\na\n```\n````\n")
    blocks = extract(md)
    assert [(b.line, b.lang, b.mode) for b in blocks] == [(2, "bash", "run"), (6, "text", "expected")]
    assert blocks[1].text == "a\n```\n"  # a longer fence may hold a shorter one
    assert blocks[1].note == "2-core CPU"
    md.write_text("1. item\n\n   ```bash run\n   python -c \"\n   import os\n     print(1)\"\n   ```\n")
    assert extract(md)[0].text == 'python -c "\nimport os\n  print(1)"\n'  # list indent removed


def test_commands_split_on_operators_and_join_continuations() -> None:
    text = "sbatch --wait \\\n  jobs/x.sbatch && cat out # comment\nA=1 python y.py --n 2 | tee log\n"
    assert commands(text) == [["sbatch", "--wait", "jobs/x.sbatch"], ["cat", "out"],
                              ["A=1", "python", "y.py", "--n", "2"], ["tee", "log"]]


@pytest.mark.parametrize(("excerpt_line", "output_line", "matches"), [
    ("Test set: Average loss: ~0.2154, Accuracy: ~9368/10000 (~94%)",
     "Test set: Average loss: 0.0301, Accuracy: 9905/10000 (99%)", True),
    ("Test set: Average loss: ~0.2154, Accuracy: ~9368/10000 (94%)",
     "Test set: Average loss: 0.0301, Accuracy: 9905/10000 (99%)", False),  # 94 is fixed
    ("phase      seconds  share", "phase  seconds    share", True),
    ("phase      seconds  share", "phase  seconds    share   per batch", False),  # a new column
    ("data wait  ~12.5  ~84.5%", "data wait  n/a  84.5%", False),  # a number became text
    ("host: ... cpus allowed: ~2", "host: node042 gpu: 1 cpus allowed: 16", True),
    ("epoch time ~00:~01:~07", "epoch time 00:00:09", True),
    ("Loss: ~1e-06", "Loss: 0.25", True),
    ("num_workers: 4", "num_workers 4", False),  # punctuation is part of the shape
])
def test_a_line_matches_when_only_free_numbers_and_spacing_differ(excerpt_line: str, output_line: str,
                                                             matches: bool) -> None:
    assert bool(line_pattern(excerpt_line).match(output_line)) is matches


def test_excerpt_lines_must_appear_in_order() -> None:
    output = "start\nepoch 1 loss 0.5\nnoise\nepoch 2 loss 0.3\ndone\n"
    assert text_mismatch("epoch 1 loss ~0.9\n...\ndone\n", output) is None
    assert "epoch 1" in (text_mismatch("done\nepoch 1 loss ~0.9\n", output) or "")  # wrong order


def test_json_compares_values_and_only_the_kind_of_free_keys() -> None:
    expected = {"images_per_sec": 100.0, "settings": {"device": "cpu", "amp": False}, "epoch_seconds": [1.0]}
    free = ("images_per_sec", "epoch_seconds")
    assert json_mismatch(expected, {"images_per_sec": 9, "settings": {"device": "cpu", "amp": False, "x": 1},
                                    "epoch_seconds": [3.5, 2.0]}, free=free) is None
    assert "device" in (json_mismatch(expected, {"images_per_sec": 9, "settings": {}, "epoch_seconds": []},
                                      free=free) or "")
    assert "cuda" in (json_mismatch(expected, {"images_per_sec": 9, "epoch_seconds": [1.0],
                                               "settings": {"device": "cuda", "amp": False}}, free=free) or "")
    assert "fast" in (json_mismatch({"a": 1}, {"a": "fast"}) or "")
    assert mismatch("json", '{"a": 2}', 'log line\n{"a": 2}') is None


def test_a_failing_block_stops_the_run_and_names_lesson_block_and_output(tmp_path: Path) -> None:
    lesson = tmp_path / "01-demo.md"
    lesson.write_text(
        "```bash run\nGREETING=hello\nmkdir sub && cd sub\n```\n"
        "```bash run\necho \"$GREETING from $(basename $PWD)\"\n```\n"
        "```text expected 2-core CPU\nhello from sub\n```\n"
        "```bash run exit=3\nexit 3\n```\n"
        "```bash run\necho before; false; echo never\n```\n"
        "```bash run\necho unreachable\n```\n"
    )
    lines: list[str] = []
    with pytest.raises(runner.LessonFailure) as failure:
        runner.run_lesson(lesson, tmp_path, sys.executable, log=lines.append)
    message = str(failure.value)
    assert message.startswith("01-demo.md:14 (bash run): exit code 1, expected 0")
    assert "before" in message and "never" not in message.split("--- output")[1]
    assert not any(":17" in line for line in lines)  # nothing ran after the failure


def test_an_excerpt_of_the_wrong_shape_fails(tmp_path: Path) -> None:
    lesson = tmp_path / "02-demo.md"
    lesson.write_text("```bash run\necho 'rate: 12 img/s'\n```\n```text expected 2-core CPU\nspeed: ~12 img/s\n```\n")
    with pytest.raises(runner.LessonFailure, match="speed: ~12 img/s"):
        runner.run_lesson(lesson, tmp_path, sys.executable, log=lambda _: None)


def test_a_cluster_block_with_a_renamed_flag_or_a_missing_file_fails(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "tool.py").write_text(
        "import argparse\ndef build_parser():\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--epochs', type=int)\n    return p\n")
    lesson = tmp_path / "03-demo.md"
    lesson.write_text("```bash cluster\npython tool.py --epochs 3\n```\n"
                      "```bash cluster\nsrun python tool.py --epoch-count 3\n```\n")
    with pytest.raises(runner.LessonFailure, match="epoch-count"):
        runner.run_lesson(lesson, tmp_path, sys.executable, log=lambda _: None)
    lesson.write_text("```bash cluster\nbash jobs/missing.sbatch\n```\n")
    with pytest.raises(runner.LessonFailure, match="jobs/missing.sbatch: no such file"):
        runner.run_lesson(lesson, tmp_path, sys.executable, log=lambda _: None)


@pytest.mark.slurm
def test_cluster_sized_job_scripts_are_checked_shrunk_but_bad_options_fail(slurm: object, tmp_path: Path) -> None:
    """A 2-node request cannot run on the sandbox, yet its directives must still be accepted."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "big.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
        "#SBATCH --cpus-per-task=16\n#SBATCH --mem=64G\n#SBATCH --time=00:30:00\nsrun true\n")
    lesson = tmp_path / "06-demo.md"
    lesson.write_text("```bash cluster\nsbatch --partition gpu --account proj jobs/big.sbatch\n```\n")
    env = runner.learner_env(tmp_path, sys.executable)
    from lessons.static_checks import static_problems
    block = extract(lesson)[0]
    problems = static_problems(block, tmp_path, env)
    assert problems == ["the job checker (python -m jobs check) is not in the kit yet"]
    lesson.write_text("```bash cluster\nsbatch --gpus-per-nodes=4 jobs/big.sbatch\n```\n")
    problems = static_problems(extract(lesson)[0], tmp_path, env)
    assert any("unrecognized option" in p for p in problems), problems
    # a shard request (lesson 10): tried with a whole GPU where the sandbox has no shards, still checked
    (tmp_path / "jobs" / "shard.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --gres=shard:1\n#SBATCH --cpus-per-task=1\n#SBATCH --time=00:05:00\ntrue\n")
    lesson.write_text("```bash cluster\nsbatch --array=0-3 jobs/shard.sbatch\n```\n")
    assert static_problems(extract(lesson)[0], tmp_path, env) == [
        "the job checker (python -m jobs check) is not in the kit yet"]
    lesson.write_text("```bash cluster\nsbatch --array=0-3 --tim=5 jobs/shard.sbatch\n```\n")
    assert any("sbatch --test-only" in p for p in static_problems(extract(lesson)[0], tmp_path, env))


def test_diff_prints_one_function_and_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n\ndef g():\n    pass\n")
    (tmp_path / "b.py").write_text("import os\n\ndef f():\n    return 2\n")
    assert diff.main([f"{tmp_path}/a.py:f", f"{tmp_path}/b.py:f"]) == 0
    out = capsys.readouterr().out
    assert "-    return 1\n+    return 2" in out and "import os" not in out and "def g" not in out
    assert diff.main([f"{tmp_path}/a.py:nope", f"{tmp_path}/b.py"]) == 2
    assert diff.main([f"{tmp_path}/a.py:f", f"{tmp_path}/a.py:g,f"]) == 0
    out = capsys.readouterr().out
    assert "+def g():\n+    pass\n+\n def f():" in out  # several names: in order, blank line between


# --- the lessons' structure --------------------------------------------------------------------

def test_the_lessons_follow_the_plan_and_are_indexed() -> None:
    assert [p.stem for p in LESSONS] == PLAN
    index = (REPO / "lessons" / "README.md").read_text()
    for path in LESSONS:
        assert f"({path.name})" in index, f"{path.name} is not linked from lessons/README.md"


_PIPE_TO_HEAD = re.compile(r"\|\s*head\b")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_each_lesson_has_a_goal_marked_blocks_and_exercises_with_solutions(path: Path) -> None:
    text = path.read_text()
    assert re.search(r"^## Exercises", text, re.M) and re.search(r"^## Solutions", text, re.M)
    assert re.search(r"^## What to look for", text, re.M)
    blocks = extract(path)
    for block in blocks:
        if block.is_shell:
            assert block.mode in SHELL_MODES, f"{block.where}: shell block without run/cluster/setup mark"
        if block.mode in ("expected", "gpu"):
            assert block.note, f"{block.where}: an output excerpt must name its hardware"
        if block.is_shell and block.mode == "run":
            # The runner sets pipefail: a writer that outlives `head` dies of SIGPIPE (exit 141)
            # or not, depending on timing. `sed -n 1,Np` and `grep -m N` read to the end.
            assert not _PIPE_TO_HEAD.search(block.text), f"{block.where}: pipe into head is flaky under pipefail"
    modes = [b.mode for b in blocks]
    assert "run" in modes and "cluster" in modes, "each lesson has a laptop form and a cluster form"
    assert "expected" in modes, "each lesson shows real output"
    number = int(path.name[:2])
    if number >= 1:
        gpu = "gpu" in modes or f"<!-- GPU-RESULTS: lesson{number} -->" in text
        assert gpu, f"GPU figures (a `text gpu` block or the placeholder <!-- GPU-RESULTS: lesson{number} -->)"


_KIT_PATH = re.compile(
    r"\b(?:jobs|profiling|multi_gpu|lessons|benchmarks|docs)/[\w./-]*\w\.(?:md|py|sh|sbatch|env|example)\b")


@pytest.mark.parametrize("path", [*LESSONS, REPO / "lessons" / "README.md"], ids=lambda p: p.stem)
def test_every_kit_file_a_lesson_names_exists(path: Path) -> None:
    """Prose goes stale too: a renamed template or doc breaks this before a learner finds out."""
    text = path.read_text()
    missing = sorted({m for m in _KIT_PATH.findall(text)
                      if not (REPO / m).exists() and not (REPO / "lessons" / m).exists()})
    assert not missing, f"{path.name} names files that do not exist: {missing}"


# --- the lessons themselves --------------------------------------------------------------------

#: Set once a lesson fails: the lessons after it build on its files and jobs, so they are skipped.
_FIRST_FAILURE: list[str] = []


@pytest.fixture(scope="module")
def kit(slurm: object, python_exe: str, repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh copy of the kit for the whole lesson path, as a learner's checkout."""
    root = runner.fresh_copy(tmp_path_factory.mktemp("lessons") / "kit", repo)
    runner.provide_setup(root, python_exe)
    return root


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.alone  # the excerpts are a quiet laptop's output, some of them measured: no other test beside it
@pytest.mark.timeout(1800)  # a guard against a hang only: every block has its own time limit
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_lesson_runs_in_order_in_a_fresh_copy(kit: Path, python_exe: str, path: Path) -> None:
    """The CPU path through the lessons, as a learner types it: one test per lesson, in order, in one
    shared copy (later lessons use what earlier ones made). No wall-clock budget is asserted here: a
    busy machine is slower, not wrong; `make test` lists the slowest tests instead."""
    if _FIRST_FAILURE:
        pytest.skip(f"{_FIRST_FAILURE[0]} failed, and this lesson builds on it")
    try:
        seconds = runner.run_lesson(path, kit, python_exe, log=print)
    except BaseException:
        _FIRST_FAILURE.append(path.stem)
        raise
    print(f"{path.name}: {seconds:.0f} s")


# --- lesson numbers named in code ------------------------------------------------------------------

#: What each lesson is about: words from its heading, and words one of which must stand next to any
#: "lesson NN" in the code or the templates (on the same line or the next), so a renumbered lesson
#: cannot leave a stale reference behind.
TOPICS = {
    0: ("set-up", ("set-up", "setup", "environment", "install")),
    1: ("baseline", ("mnist", "baseline", "train", "loop", "model", "main", "script", "single-gpu", "cnn", "epoch",
                      "network", "recipe", "pytorch/examples", "accuracy")),
    2: ("profile", ("profil", "kernprof", "report", "measure", "starv")),
    3: ("advice", ("advice", "num_workers", "workers", "sweep", "cpus", "data loading", "setting at a time")),
    4: ("faster", ("faster", "speed", "setting", "amp", "switch", "large-batch", "fast path", "real digits")),
    5: ("DDP on one node", ("ddp", "distributed", "one node")),
    6: ("many nodes", ("nodes", "rendezvous")),
    7: ("preemption", ("preempt", "checkpoint", "requeue", "signal")),
    8: ("efficiency", ("efficien", "seff", "sacct", "tensorboard")),
    9: ("small files", ("small files", "small jpeg", "shard", "webdataset", "stage", "staging", "folder", "i/o",
                        "sshfs", "grouping", "local disk")),
    10: ("sharing", ("shar", "pack", "mps", "strong", "scaling", "global batch", "foreground", "background",
                     "gpus")),
    11: ("pipeline", ("pipeline", "stage", "microbatch", "placement")),
}
CODE = [*REPO.glob("*.py"), *REPO.glob("jobs/templates/*.sbatch"), *REPO.glob("jobs/**/*.py"),
        *REPO.glob("jobs/**/*.sh"), *REPO.glob("profiling/*.py"), *REPO.glob("multi_gpu/*.py"),
        *(p for p in REPO.glob("benchmarks/**/*") if p.is_file()),
        *REPO.glob("lessons/*.py"), *REPO.glob("lessons/*.sh"),
        *REPO.glob("small_files/*.py"), *REPO.glob("digits/*.py")]


def test_every_lesson_named_in_code_exists_and_has_that_topic() -> None:
    headings = {int(path.name[:2]): path.read_text(encoding="utf-8").splitlines()[0] for path in LESSONS}
    for number, (title, _) in TOPICS.items():
        assert title.lower() in headings[number].lower(), f"lesson {number:02d} is no longer {title!r}"
    wrong, seen = [], 0
    for path in CODE:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            for match in re.finditer(r"\blesson (\d+)\b", line, flags=re.IGNORECASE):
                seen += 1
                number, where = int(match.group(1)), f"{path.relative_to(REPO)}:{i + 1}"
                window = " ".join(lines[i:i + 2]).lower()
                if number not in headings:
                    wrong.append(f"{where}: there is no lesson {number:02d}")
                elif not any(word in window for word in TOPICS[number][1]):
                    wrong.append(f"{where}: lesson {number:02d} is {headings[number]!r}, not what this line says")
    assert seen > 20 and wrong == []
