"""Stage 5: the report as terminal text, Markdown, JSON or CSV (HTML: `profiling.html`). Renderers only format what
`build_report` computed, so the text, Markdown, JSON and HTML can never disagree.
"""
from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from profiling.records import Report, curve_timing, plural

TOP_LINES = 15  # the slowest lines shown in text and Markdown (the CSV and HTML have them all)
TEXT_WHY = 3    # the text report's "Why" lines (the Markdown, HTML and JSON reports have them all)


def _num(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _phase_rows(report: Report) -> list[list[str]]:
    rows = report.phases[report.phases["seconds"] > 0]
    return [[r.phase, _num(r.seconds, 3), _num(r.pct, 1), _num(r.per_batch_ms, 3)] for r in rows.itertuples()]


def _line_rows(report: Report) -> list[list[str]]:
    rows = report.lines.sort_values("seconds", ascending=False).head(TOP_LINES)
    return [[f"{Path(r.file).name}:{r.line}", str(r.hits), _num(r.seconds, 3), _num(r.ms_per_hit, 3),
             _num(r.pct_of_function, 1), r.phase, r.source.strip()[:60]] for r in rows.itertuples()]


PHASE_HEADER = ["phase", "seconds", "%", "ms/batch"]
LINE_HEADER = ["line", "hits", "seconds", "ms/hit", "% of fn", "phase", "source"]


def _loop_lines(report: Report) -> list[str]:
    loop = report.loop
    if loop is None:
        return ["No training loop (`for ... in <loader>`) found: see the notes."]
    n = report.advice.numbers
    traced = f"the first {n.traced_batches} batches traced" if n and n.traced_batches else "traced"
    if n and n.traced_batches and "kept batches" in n.fallback:  # the loop ran on without its loader (o_5)
        traced = f"all traced; {n.traced_batches} came from its DataLoader"
    where = f"in {loop.function}()" if loop.function else "(timed through its DataLoader, not in the profiled lines)"
    steps = "batches" if loop.function else "steps timed"  # the hook times a step from one batch to the next
    lines = [f"Training loop: {loop.file}:{loop.header_line} {where}, {loop.batches} {steps} ({traced})",
             f"  data wait per batch  {1e3 * loop.wait_per_batch:9.3f} ms  ({loop.wait_fraction:.1%} of a traced step)",
             f"  compute per batch    {1e3 * loop.compute_per_batch:9.3f} ms  (every other line of the loop body)"]
    if n and n.untraced_step_ms and n.held_cpus:  # held to fewer CPUs than the traced part had: not tracing's cost
        lines.append(f"  untraced step        {n.untraced_step_ms:9.3f} ms  (the same loop timed untraced on the "
                     f"{n.held_cpus} CPUs of {n.current_workers} worker(s); the traced part had all {n.cpus})")
    elif n and n.untraced_step_ms and n.traced_step_ms:  # a shorter traced step is not tracing's doing: no ratio
        cost, traced = n.traced_step_ms / n.untraced_step_ms, n.traced_step_ms
        lines.append(f"  untraced step        {n.untraced_step_ms:9.3f} ms  (the same loop timed untraced: " + (
            f"tracing made a step {cost:.2f}x as long)" if cost >= 1 else f"its traced steps took {traced:.3f} ms)"))
    return [plural(line) for line in lines]


BASIS = {"tried": "(measured in your run)", "measured": "(measured: loader curve)", "estimate": "(ESTIMATE: see below)",
         "kept": "(kept: the loader keeps up)", "own": "(your count, measured in your run)", "stream": "(kept)",
         "none": ""}


def _advice_head(report: Report) -> list[str]:
    advice = report.advice
    if advice.num_workers is None:
        return ["No num_workers advice (see why below)."]
    basis = BASIS.get(advice.numbers.basis if advice.numbers else "none", "")
    if advice.numbers and advice.numbers.fallback:  # said first: the run's own loop could not be measured
        basis = f"{basis[:-1]}; fallback: {advice.numbers.fallback})"
    elif "few_turns" in advice.fired_rules and advice.numbers:  # said first, as a fallback is
        basis = f"{basis[:-1]}; {advice.numbers.tried_turns} turn(s) a count only: more epochs give a surer count)"
    elif "not_sure" in advice.fired_rules and (n := advice.numbers):  # the JSON's note, in the first line (unseen j_4)
        sure = f"{n.behind_workers} worker(s) {n.behind_pct:.1f}% ± {n.behind_noise_pct:.1f}% behind"
        basis = f"{basis[:-1]}; not sure: {sure})"
    return [plural(f"num_workers = {advice.num_workers}   --cpus-per-task = {advice.cpus_per_task}   {basis}".rstrip())]


def _facts_line(report: Report) -> str:
    f = report.facts
    workers = "unknown" if f.num_workers is None else str(f.num_workers)
    per_gpu = f", node has {f.cores_per_gpu} cores per GPU" if f.cores_per_gpu else ""
    return plural(f"Job: {f.cpus} CPU(s), {f.gpus} GPU(s), profiled with num_workers={workers}{per_gpu}")


def _text_table(header: Sequence[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip()] + [fmt.format(*row).rstrip() for row in rows]


def render_text(report: Report) -> str:
    out = [f"Profile: {report.lprof_path}", _facts_line(report), f"  ({report.facts.source})", ""]
    loop = report.loop  # one timed through its DataLoader only (at module level: unseen v_2) has no lines of its own
    title = "" if loop is None else f" of the loop in {loop.function}()" if loop.function else (
        " of the profiled lines (the loop's own ran unprofiled: its wait is above)")
    out += _loop_lines(report) + ["", f"Phases{title}:"]
    out += _text_table(PHASE_HEADER, _phase_rows(report))
    out += ["", "ADVICE", "  " + _advice_head(report)[0]]
    if report.advice.edits:
        out += ["  Exact edits (job script, then training script):"] + [f"    {e}" for e in report.advice.edits]
    out += ["  Why:"] + [f"  - {r}" for r in (report.advice.briefs or report.advice.reasons)[:TEXT_WHY]]
    out += ["  Warnings:"] + [f"  - {r}" for r in report.advice.warnings] if report.advice.warnings else []
    if len(report.advice.reasons) > TEXT_WHY or report.advice.notes or report.curve is not None:
        out += ["  (the curve, the other reasons and notes: the md, html and json reports, written unless --formats "
                "leaves them out)"]
    out += ["", "Notes:"] + [f"  - {n}" for n in report.notes] if report.notes else []
    out += ["", f"Slowest lines (of {len(report.lines)}):"] + _text_table(LINE_HEADER, _line_rows(report))
    return "\n".join(out)


def _md_table(header: Sequence[str], rows: list[list[str]]) -> list[str]:
    def cells(values: Iterable[str]) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"
    return [cells(header), "|" + "---|" * len(header)] + [cells(row) for row in rows]


def render_markdown(report: Report) -> str:
    out = [f"# Profile report: `{Path(report.lprof_path).name}`", "", _facts_line(report) + ".",
           f"Counts from: {report.facts.source}.", "", "## Training loop", ""]
    out += [line.strip() + "  " for line in _loop_lines(report)]
    out += ["", "## Advice", "", "**" + _advice_head(report)[0] + "**", ""]
    if (curve := report.curve) is not None:  # the measured loader curve, one line: k -> batches/s
        points = ", ".join(f"{p.workers}: {p.batches_per_s:.0f}" for p in sorted(curve.points, key=lambda p: p.workers))
        out += [f"Loader curve (num_workers: batches/s, {curve_timing(curve.hold_ms)} on {curve.cpus} CPUs): "
                f"{points}", ""]
    if report.advice.edits:
        out += ["Exact edits (job script, then training script):", "", "```bash", *report.advice.edits, "```", ""]
    out += [f"- {r}" for r in report.advice.reasons]
    for title, items in (("Warnings", report.advice.warnings), ("Also", report.advice.notes)):
        if items:
            out += ["", f"**{title}:**", ""] + [f"- {r}" for r in items]
    out += ["", "## Phases", ""] + _md_table(PHASE_HEADER, _phase_rows(report))
    out += ["", "## Notes", ""] + [f"- {n}" for n in report.notes] if report.notes else []
    rows = [[c if i != 6 else f"`{c}`" if c else "" for i, c in enumerate(row)] for row in _line_rows(report)]
    out += ["", f"## Slowest lines (of {len(report.lines)})", ""] + _md_table(LINE_HEADER, rows)
    return "\n".join(out) + "\n"


def _plain(value: Any) -> Any:
    """JSON-safe: NaN/inf -> null, paths -> str, numpy scalars -> Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value


def report_dict(report: Report) -> dict[str, Any]:
    """The report as plain data: what `--format json` prints and other tools read."""
    loop = None if report.loop is None else asdict(report.loop) | {
        "wait_per_batch_s": report.loop.wait_per_batch, "compute_per_batch_s": report.loop.compute_per_batch,
        "data_wait_fraction": report.loop.wait_fraction}
    advice = report.advice
    return _plain({"profile": report.lprof_path, "facts": asdict(report.facts), "loop": loop,
        "phases": report.phases.to_dict(orient="records"),
        "advice": {"num_workers": advice.num_workers, "cpus_per_task": advice.cpus_per_task,
                   "reasons": advice.reasons, "warnings": advice.warnings, "notes": advice.notes,
                   "edits": advice.edits, "rules": advice.fired_rules,
                   "numbers": asdict(advice.numbers) if advice.numbers is not None else None},
        "curve": asdict(report.curve) if report.curve is not None else None, "notes": report.notes, "meta": report.meta,
    })


def render(report: Report, fmt: str, plot_paths: list[Path] | None = None) -> str:
    """The report in one format: text, md, json, csv or html (without `plot_paths`, drawn in a temporary folder)."""
    if fmt == "html":
        from profiling import html, plots

        if plot_paths is not None:
            return html.render_html(report, plot_paths)
        with tempfile.TemporaryDirectory() as tmp:
            return html.render_html(report, plots.write_plots(report, Path(tmp), "report"))
    renderers = {"text": render_text, "md": render_markdown, "csv": lambda r: r.lines.to_csv(index=False),
                 "json": lambda r: json.dumps(report_dict(r), indent=2)}
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}")
    return renderers[fmt](report)
