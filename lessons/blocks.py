"""Find the marked code blocks of a lesson, in the order a learner meets them.

A block's info string is ``LANG MODE [key=value ...] [note]`` (see docs/lesson-format.md).
Only the first word is shown by Markdown renderers, so the marks cost the reader nothing.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

#: What a mark means. Every shell block must carry one of the shell modes.
SHELL_MODES = ("run", "cluster", "setup")
OUTPUT_MODES = ("expected", "gpu")
SHELL_LANGS = ("bash", "sh", "shell", "console")

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_OPTION = re.compile(r"^(?P<key>[a-z_]+)=(?P<value>\S+)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, how it is marked and what it holds."""

    lesson: str
    line: int  # 1-based line of the opening fence
    lang: str
    mode: str  # "" when unmarked
    options: dict[str, str] = field(default_factory=dict)
    note: str = ""  # free text after the mode, e.g. the hardware an excerpt came from
    text: str = ""

    @property
    def where(self) -> str:
        return f"{self.lesson}:{self.line}"

    @property
    def is_shell(self) -> bool:
        return self.lang in SHELL_LANGS


def parse_info(info: str) -> tuple[str, str, dict[str, str], str]:
    """Split an info string into language, mode, key=value options and the free note."""
    words = info.strip().split()
    if not words:
        return "", "", {}, ""
    lang, rest = words[0].lower(), words[1:]
    mode = ""
    if rest and rest[0].rstrip(":") in SHELL_MODES + OUTPUT_MODES:
        mode = rest.pop(0).rstrip(":")
    options: dict[str, str] = {}
    note: list[str] = []
    for word in rest:
        match = _OPTION.match(word)
        if match and not note:
            options[match["key"]] = match["value"]
        else:
            note.append(word)
    return lang, mode, options, " ".join(note).strip(" -—:()")


def extract(path: Path) -> list[Block]:
    """All fenced blocks of one Markdown file, in order (unmarked ones included, mode "")."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, start, indent = opening["fence"], i, len(opening["indent"])
        lang, mode, options, note = parse_info(opening["info"])
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            # As Markdown does: a fence indented N spaces (in a list item) strips N from its lines.
            line = lines[i]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
            i += 1
        blocks.append(Block(path.name, start + 1, lang, mode, options, note, "\n".join(body) + "\n"))
        i += 1
    return blocks


def lesson_files(lessons_dir: Path) -> list[Path]:
    """The numbered lessons (``NN-name.md``), sorted by number."""
    return sorted(p for p in lessons_dir.glob("[0-9][0-9]-*.md"))


def commands(text: str) -> list[list[str]]:
    """The simple commands of a shell block as word lists (continuations joined, comments dropped).

    Good enough for the static checks of cluster and set-up blocks: it splits on ``;``, ``&&``,
    ``||``, ``|`` and parentheses (so ``x=$(cmd ...)`` yields ``cmd ...``) but does not
    understand control flow.
    """
    joined = re.sub(r"\\\n", " ", text)
    result: list[list[str]] = []
    for line in joined.splitlines():
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words = list(lexer)
        except ValueError:
            continue
        current: list[str] = []
        for word in words:
            if word and set(word) <= set(";&|()"):
                if current:
                    result.append(current)
                current = []
            else:
                current.append(word)
        if current:
            result.append(current)
    return result
