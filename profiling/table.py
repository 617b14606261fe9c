"""Stage 2: the per-line table (one row per profiled line, columns `LINE_COLUMNS`).

kernprof records each function's file as its `co_filename`, as typed: often relative to where kernprof ran, absolute
for imported modules. So source is looked up under that directory (the run's metadata or `--source-root`), then
beside the `.lprof`. A file not found leaves `source` empty and adds a note: the timings are still worth reading.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from profiling.records import LINE_COLUMNS, LineProfile

Sources = dict[str, list[str] | None]  # file key -> its lines (index 0 is line 1), or None when the file was not found


def read_sources(profile: LineProfile, roots: Iterable[Path]) -> tuple[Sources, list[str]]:
    """Read each profiled file once; return the lines per file key and notes for missing files."""
    roots = [Path(r) for r in roots]
    sources: Sources = {}
    notes: list[str] = []
    for filename in sorted({key[0] for key in profile.timings}):
        candidates = [Path(filename)] if Path(filename).is_absolute() else [root / filename for root in roots]
        if (path := next((c for c in candidates if c.is_file()), None)) is None:  # the file kernprof named, here
            sources[filename] = None
            if not filename.startswith("<"):  # `<string>`, `<frozen os>`: code that has no file, and no note
                where = ", ".join(str(r) for r in roots) or "the current directory"
                notes.append(f"source file {filename!r} not found (looked under {where}); its lines "
                             "have timings but no text or phase (use --source-root DIR)")
            continue
        try:
            sources[filename] = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as err:
            sources[filename] = None
            notes.append(f"source file {path} could not be read ({err.strerror}); lines shown without text")
    return sources, notes


def line_table(profile: LineProfile, sources: Sources) -> pd.DataFrame:
    """One row per (function, line): hits, seconds, ms/hit, % of the function, source, `phase` "other" (set later)."""
    rows = []
    for (filename, _first, function), entries in profile.timings.items():
        total_ticks = sum(ticks for _line, _hits, ticks in entries)
        text = sources.get(filename)
        for line, hits, ticks in entries:
            seconds = ticks * profile.unit
            rows.append({"file": filename, "function": function, "line": line, "hits": hits, "seconds": seconds,
                         "ms_per_hit": seconds * 1e3 / hits if hits else 0.0,
                         "pct_of_function": 100.0 * ticks / total_ticks if total_ticks else 0.0,
                         "source": text[line - 1].rstrip() if text is not None and 0 < line <= len(text) else "",
                         "phase": "other"})
    return pd.DataFrame(rows, columns=list(LINE_COLUMNS)).astype(
        {"line": "int64", "hits": "int64", "seconds": "float64", "ms_per_hit": "float64", "pct_of_function": "float64"})
