"""One self-contained HTML page for a report: advice, phases, plots and the line table.

Why one file with the plots inlined as base64 data URIs: learners copy the page off a cluster or open it from a
Jupyter file browser, and a page that needs sibling files breaks once moved. All text from a profile (source lines,
file names, reasons) is escaped: a source line such as `if a < b:` is not HTML.
"""
from __future__ import annotations

import base64
import html
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from profiling.records import LINE_COLUMNS, Report

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0 1em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: right; }
td:last-child, th:last-child { text-align: left; }
pre { background: #f6f8fa; padding: .75em; overflow-x: auto; }
.advice { background: #eef6ee; border-left: 4px solid #2ca02c; padding: .5em 1em; }
.notes { background: #fff8e6; border-left: 4px solid #ff7f0e; padding: .5em 1em; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
table.meta th { text-align: left; } table.meta td { text-align: left; font-family: ui-monospace, monospace; }
"""
_STYLE += (f"table.lines td:nth-child({LINE_COLUMNS.index('source') + 1}) {{ font-family: ui-monospace, monospace; "
           "white-space: pre; text-align: left; }\n")  # the line table's source column, as code

# Run metadata shown at the top (CPUs, GPUs and workers come from `report.facts` instead).
META_KEYS = ("argv", "cwd", "hostname", "start_time", "end_time", "wall_seconds", "exit_code", "slurm")


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _list(items: Iterable[object]) -> str:
    return "<ul>" + "".join(f"<li>{_esc(item)}</li>" for item in items) + "</ul>"


def _advice_section(report: Report) -> str:
    advice = report.advice
    workers, cpus = ("no change" if n is None else n for n in (advice.num_workers, advice.cpus_per_task))
    parts = ["<section class='advice'><h2>Advice</h2>",
             f"<p><b>num_workers:</b> {_esc(workers)} &nbsp; <b>--cpus-per-task:</b> {_esc(cpus)}</p>"]
    parts += [f"<h3>{title}</h3>" + _list(items) for title, items in (("Why", advice.reasons),
              ("Warnings", advice.warnings), ("Also", advice.notes)) if items]
    parts += ["<h3>Exact edits</h3><pre>" + _esc("\n".join(advice.edits)) + "</pre>"] if advice.edits else []
    if advice.fired_rules:
        parts.append("<p><small>Rules that fired: " + _esc(", ".join(advice.fired_rules)) + "</small></p>")
    return "".join(parts) + "</section>"


def _meta_section(report: Report) -> str:
    facts = report.facts
    rows = [("profile", report.lprof_path), ("CPUs of the job", facts.cpus), ("GPUs", facts.gpus),
            ("num_workers (profiled)", facts.num_workers if facts.num_workers is not None else "unknown")]
    rows += [("counts from", facts.source)] if facts.source else []
    rows += [(key, report.meta[key]) for key in META_KEYS if report.meta.get(key) not in (None, "", [], {})]
    return "<table class='meta'>" + "".join(
        f"<tr><th>{_esc(k)}</th><td>{_esc(' '.join(map(str, v)) if isinstance(v, list) else v)}</td></tr>"
        for k, v in rows) + "</table>"


def _table(frame: pd.DataFrame, css_class: str) -> str:
    """pandas' HTML table (escaped); the line table's source column is shown as code (_STYLE)."""
    return frame.to_html(index=False, escape=True, border=0, na_rep="", classes=css_class, float_format="{:.3f}".format)


def render_html(report: Report, plot_paths: Iterable[Path]) -> str:
    """The whole report as one HTML document (a string); plots are embedded, not linked."""
    title = f"Profile report: {Path(report.lprof_path).name}"
    body = [f"<h1>{_esc(title)}</h1>", _meta_section(report), _advice_section(report)]
    body += ["<section class='notes'><h2>Notes</h2>" + _list(report.notes) + "</section>"] if report.notes else []
    body.append("<h2>Phases</h2>" + _table(report.phases, "phases"))
    plots = [(Path(p), base64.b64encode(Path(p).read_bytes()).decode("ascii")) for p in plot_paths]  # as data URIs
    if plots:
        body.append("<h2>Plots</h2>" + "".join(f"<figure><img alt='{_esc(p.stem)}' src='data:image/png;base64,{png}'>"
                                               f"<figcaption>{_esc(p.name)}</figcaption></figure>" for p, png in plots))
    lines = report.lines.sort_values("seconds", ascending=False) if len(report.lines) else report.lines
    body.append(f"<h2>Lines ({len(lines)}, slowest first)</h2>" + _table(lines, "lines"))
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
            f"<style>{_STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")
