"""Checks of a lesson's text that need no run: length and frame, clean text, quotes, CPU counts, catch-up.

Each check returns a list of problems, one line each (empty: the lesson is fine), so a test can prove
it fails on a bad lesson as well as pass on the real ones. See docs/lesson-format.md for the rules.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from lessons.blocks import Block, extract
from profiling.cpu_rule import workers_for_cpus

MAX_LESSON_LINES = 220
MAX_TOTAL_LINES = 2400
#: How a lesson opens and ends: what you will learn, how long it takes, what you now know.
OPENING = (r"^\*\*You will learn:\*\* \S", r"^\*\*Time:\*\* .*\bminutes?\b")
CLOSING = "## What you now know"
#: Text that only makes sense on the machine a lesson was written on.
MACHINE_TEXT = re.compile(r"/work/|/home/\w|/root/|\$OUT\b|\$\{OUT\}")
#: A double-quoted phrase of four words or more in prose: a quote, checked against the kit's sources.
_QUOTE = re.compile(r"[\"“]([^\"”\n]{3,}?)[\"”]")
_EXPORT = re.compile(r"\bexport\s+([A-Za-z_]\w*)=")
_UNSET = re.compile(r"\bunset\s+([A-Za-z_][\w ]*)")
#: Prose claims of workers and CPUs: "6 workers on 8 CPUs".
_WORKERS_ON = re.compile(r"\b(\d+) (?:loader )?workers? on (\d+) (?:CPUs?|cores?)\b")
_NUM_WORKERS = re.compile(r"--num-workers[ =](\d+)\b")
_CPUS_PER_TASK = re.compile(r"--cpus-per-task[ =](\d+)\b")
#: The runner's own catch-up command, which recreates an earlier lesson's files in this checkout.
CATCH_UP = "python -m lessons.runner {nn} --workdir ."
_EARLIER_RESULT = re.compile(r"\bruns/lesson(\d\d)\b")


def prose(text: str) -> str:
    """The lesson without its fenced blocks and without inline code."""
    kept, fence = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        match = re.match(r"(`{3,}|~{3,})", stripped)
        if match:
            fence = match.group(1)
            continue
        kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def length_problems(paths: Iterable[Path]) -> list[str]:
    """No lesson over MAX_LESSON_LINES, and all of them (the index too) within MAX_TOTAL_LINES."""
    counts = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in paths}
    problems = [f"{name}: {n} lines, more than {MAX_LESSON_LINES}"
                for name, n in counts.items() if n > MAX_LESSON_LINES and name[:2].isdigit()]
    if sum(counts.values()) > MAX_TOTAL_LINES:
        problems.append(f"the lessons have {sum(counts.values())} lines in all, more than {MAX_TOTAL_LINES}")
    return problems


def frame_problems(text: str) -> list[str]:
    """Opens with what you will learn and the time it takes; ends with what you now know."""
    head = "\n".join(text.splitlines()[:12])
    problems = [f"no line matching {rule!r} in the first 12 lines" for rule in OPENING
                if not re.search(rule, head, re.M)]
    headings = re.findall(r"^## .*", text, re.M)
    if not headings or headings[-1].strip() != CLOSING:
        problems.append(f"the last section must be {CLOSING!r}")
    return problems


def machine_problems(text: str) -> list[str]:
    """No path of the machine a lesson was written on, and no $OUT of a benchmark harness."""
    return [f"line {i}: machine-specific text {m.group(0)!r}: {line.strip()[:80]}"
            for i, line in enumerate(text.splitlines(), 1) for m in MACHINE_TEXT.finditer(line)]


def export_problems(blocks: list[Block]) -> list[str]:
    """A variable a run block exports must be unset by a later run block of the same lesson, so it
    is not left set, unnoticed, for the next lesson."""
    problems = []
    runs = [b for b in blocks if b.is_shell and b.mode == "run"]
    for i, block in enumerate(runs):
        for name in _EXPORT.findall(block.text):
            later = " ".join(" ".join(_UNSET.findall(b.text)) for b in runs[i:])
            if name not in later.split():
                problems.append(f"{block.where}: exports {name} and no later block of the lesson unsets it")
    return problems


def quote_problems(text: str, said: str) -> list[str]:
    """Every quoted phrase of four words or more in the prose is text the kit prints: it occurs in
    ``said`` (the kit's sources and the lesson's own output blocks). A paraphrase goes stale silently."""
    flat = " ".join(said.split())
    problems = []
    for match in _QUOTE.finditer(prose(text)):
        quote = " ".join(match.group(1).split())
        if len(quote.split()) >= 4 and quote.rstrip(".,:;") not in flat:
            problems.append(f"quoted {quote!r} is not printed by the kit (not in its sources nor in "
                            "this lesson's output); quote the real output block instead")
    return problems


def cpu_problems(text: str) -> list[str]:
    """Worker and CPU counts stated together follow the kit's one CPU rule for a GPU job
    (profiling/cpu_rule.py): in prose ("6 workers on 8 CPUs") and in any line that sets both flags."""
    problems = []
    for match in _WORKERS_ON.finditer(" ".join(prose(text).split())):
        workers, cpus = int(match.group(1)), int(match.group(2))
        if workers != workers_for_cpus(cpus, gpus=1):
            problems.append(f"{match.group(0)!r}: the CPU rule gives {workers_for_cpus(cpus, gpus=1)} "
                            f"workers on {cpus} CPUs of a GPU job")
    for line in _lines_meant_to_work(text):
        workers, cpus = _NUM_WORKERS.search(line), _CPUS_PER_TASK.search(line)
        if workers and cpus and int(workers.group(1)) != workers_for_cpus(int(cpus.group(1)), gpus=1):
            problems.append(f"{line.strip()[:100]}: the CPU rule gives "
                            f"{workers_for_cpus(int(cpus.group(1)), gpus=1)} workers on {cpus.group(1)} CPUs")
    return problems


def _lines_meant_to_work(text: str) -> list[str]:
    """The lines of a lesson outside output excerpts and outside blocks that fail on purpose (exit=N)."""
    kept, skipping, fence = [], False, ""
    for line in text.splitlines():
        stripped = line.strip()
        opening = re.match(r"(`{3,}|~{3,})(.*)", stripped)
        if fence and stripped.startswith(fence):
            fence, skipping = "", False
            continue
        if not fence and opening:
            fence, info = opening.group(1), opening.group(2)
            skipping = bool(re.search(r"\b(expected|gpu)\b|\bexit=[1-9]", info))
            continue
        if not skipping:
            kept.append(line)
    return kept


def catch_up_problems(path: Path) -> list[str]:
    """A lesson whose commands read an earlier lesson's results says how to make them again."""
    number = int(path.name[:2])
    text = path.read_text(encoding="utf-8")
    commands = "\n".join(b.text for b in extract(path) if b.is_shell and b.mode == "run")
    earlier = sorted({nn for nn in _EARLIER_RESULT.findall(commands) if int(nn) < number})
    return [f"{path.name} reads runs/lesson{nn}/ but never says how to make it again: "
            f"{CATCH_UP.format(nn=nn)!r}" for nn in earlier if CATCH_UP.format(nn=nn) not in text]


def package_problems(setup_text: str, makefile_text: str) -> list[str]:
    """Lesson 00 names every system package the Makefile's system-deps installs for later lessons."""
    match = re.search(r"^system-deps:.*?apt-install\.sh ([^\n]+)", makefile_text, re.M | re.S)
    packages = match.group(1).split() if match else []
    return [f"lesson 00 does not name the system package {p!r}" for p in packages
            if not re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", setup_text)] or (
        [] if packages else ["no system-deps packages found in the Makefile"])
