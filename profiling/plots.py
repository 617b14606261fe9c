"""PNG plots of a report: time per line, the phase breakdown, and utilisation over time.

Why PNG files and not only the HTML page: a learner on a login node can copy a PNG back to a laptop or paste it into a
ticket. matplotlib's object API with the Agg canvas: no display, no global pyplot state (safe in batch jobs and tests).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text

from profiling.cpu_rule import job_cpus
from profiling.records import PHASES, AdviceNumbers, LoaderCurve, Report, curve_timing

TOP_LINES = 15
PHASE_COLOURS: dict[str, str] = dict(zip(PHASES, ("#d62728", "#ff7f0e", "#1f77b4", "#9467bd", "#2ca02c", "#8c564b",
                                                  "#e377c2", "#7f7f7f")))  # stable across plots and reports: tab10


def new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
    """A figure on the Agg canvas, no pyplot. Ours use layout=None and `_save`: constrained layout took ~0.1 s each."""
    fig = Figure(figsize=(width, height), dpi=100, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    """Margins sized from the measured texts at the figure's edges, so nothing clips whatever the labels or fonts (the
    draw reuses the measurements). PNG compression level 1: lossless, ~10 ms less a figure, files ~20 % bigger."""
    renderer = fig.canvas.get_renderer()

    def extent(texts: list[Text], i: int) -> float:  # widest (i=0) or tallest (i=1) shown text, pixels
        return max((t.get_window_extent(renderer).size[i] for t in texts if t.get_visible() and t.get_text()),
                   default=0.0)

    first, last = fig.axes[0], fig.axes[-1]
    xticks = last.get_xticklabels()
    left = max(max(extent(ax.get_yticklabels(), 0) + extent([ax.yaxis.label], 0) for ax in fig.axes),
               extent(xticks, 0) / 2)
    bottom = extent(xticks, 1) + extent([last.xaxis.label], 1)
    pad, gap = 12 * fig.dpi / 72, 4 * fig.dpi / 72  # tick + its pad + the label pad; a gap at the edge
    width, height = fig.bbox.size
    fig.subplots_adjust(left=(left + pad + gap) / width, right=1 - (extent(xticks, 0) / 2 + gap) / width,
                        bottom=(bottom + pad + gap) / height, top=1 - (extent([first.title], 1) + pad) / height,
                        hspace=0.15)
    fig.savefig(path, pil_kwargs={"compress_level": 1})
    return path


def _short(text: str, width: int = 48) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plot_lines(lines: pd.DataFrame, path: Path) -> Path:
    """Horizontal bars of the slowest lines, coloured by phase (lines under 0.1 % of the time left out)."""
    visible = lines[lines["seconds"] >= 0.001 * lines["seconds"].sum()]
    rows = visible.sort_values("seconds", ascending=False).head(TOP_LINES).iloc[::-1]
    ax = new_figure(10, 0.45 * max(len(rows), 3) + 1.2, layout=None).add_subplot()
    labels = [f"{r.function}:{r.line}  {_short(r.source)}" for r in rows.itertuples()]
    colours = [PHASE_COLOURS.get(p, PHASE_COLOURS["other"]) for p in rows["phase"]]
    ax.barh(range(len(rows)), rows["seconds"], color=colours)
    ax.set_yticks(range(len(rows)), labels, fontsize=8, family="monospace", parse_math=False)  # source, not TeX
    ax.set(xlabel="seconds (main process)", title=f"Time per line (top {len(rows)})")
    shown = [p for p in PHASES if p in set(rows["phase"])]
    ax.legend(handles=[Patch(color=PHASE_COLOURS[p], label=p) for p in shown], fontsize=8, loc="lower right")
    return _save(ax.figure, path)


def plot_phases(phases: pd.DataFrame, path: Path) -> Path:
    """Seconds per phase, each bar labelled with its share of the profiled time."""
    rows = phases[phases["seconds"] > 0].iloc[::-1]
    ax = new_figure(8, 0.5 * max(len(rows), 3) + 1.2, layout=None).add_subplot()
    ax.barh(rows["phase"], rows["seconds"], color=[PHASE_COLOURS.get(p, PHASE_COLOURS["other"]) for p in rows["phase"]])
    for y, (sec, pct) in enumerate(zip(rows["seconds"], rows["pct"])):
        ax.annotate(f" {pct:.1f} %", (sec, y), va="center", fontsize=9)
    ax.set(xlabel="seconds", title="Where the training loop's time went, by phase", xmargin=0.15)
    return _save(ax.figure, path)


def plot_utilisation(samples: pd.DataFrame, path: Path) -> Path:
    """Utilisation (top) and memory (bottom) over time, one line per device."""
    util_ax, mem_ax = new_figure(10, 6, layout=None).subplots(2, 1, sharex=True)
    for device, rows in samples.groupby("device", sort=True):
        label = "CPU (% of the job's cores)" if device == "cpu" else f"{device.upper()} (%)"
        util_ax.plot(rows["time_s"], rows["util_pct"], marker=".", label=label)
        mem_ax.plot(rows["time_s"], rows["mem_used_mib"], marker=".",
                    label="CPU RSS, process tree" if device == "cpu" else f"{device.upper()} memory used")
    util_ax.set(ylabel="utilisation %", ylim=(0, 105), title="Utilisation during the run (sampled about once a second)")
    util_ax.legend(fontsize=8)
    mem_ax.set(ylabel="MiB", xlabel="seconds since start")
    mem_ax.legend(fontsize=8)
    return _save(mem_ax.figure, path)


def plot_curve(curve: LoaderCurve, path: Path, numbers: AdviceNumbers | None = None) -> Path:
    """Batches/s against num_workers; with the advice's numbers, the compute rate, target and chosen k marked."""
    points = sorted(curve.points, key=lambda p: p.workers)
    ax = new_figure(7, 4, layout=None).add_subplot()
    ax.plot([p.workers for p in points], [p.batches_per_s for p in points], marker="o", color="#1f77b4",
            label=f"loader, {curve_timing(curve.hold_ms)}, on {curve.cpus} CPU(s)")
    if numbers is not None and numbers.compute_rate:
        ax.axhline(numbers.compute_rate, color="#7f7f7f", linestyle="--",
                   label=f"loop's compute rate: {numbers.compute_rate:.0f} batches/s")
        ax.axhline(numbers.target_rate, color="#ff7f0e", linestyle=":",
                   label=f"target (fed share): {numbers.target_rate:.0f} batches/s")
    if numbers is not None and numbers.num_workers is not None:
        ax.axvline(numbers.num_workers, color="#d62728", linestyle="-.",
                   label=f"advice: num_workers={numbers.num_workers}")
    ax.set(xticks=[p.workers for p in points], xlabel="num_workers", ylabel="batches / s", ylim=(0, None))
    ax.set_title(f"DataLoader throughput ({curve.where or 'the script loader'})", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return _save(ax.figure, path)


def write_plots(report: Report, out_dir: Path, stem: str) -> list[Path]:
    """Write the report's PNGs as `<stem>.<kind>.png`; returns the paths. Each is drawn in a forked process where the
    job has CPUs to spare: drawing (about 0.4 s a figure) is most of what `run` adds after the script ends."""
    (out_dir := Path(out_dir)).mkdir(parents=True, exist_ok=True)
    jobs: list[tuple] = [(plot_lines, report.lines, out_dir / f"{stem}.lines.png")] if len(report.lines) else []
    if len(report.phases) and report.phases["seconds"].sum() > 0:
        jobs.append((plot_phases, report.phases, out_dir / f"{stem}.phases.png"))
    if report.samples is not None and len(report.samples):
        jobs.append((plot_utilisation, report.samples, out_dir / f"{stem}.utilisation.png"))
    if report.curve is not None:
        jobs.append((plot_curve, report.curve, out_dir / f"{stem}.loader-curve.png", report.advice.numbers))
    import multiprocessing  # here, not above: the script's process draws its loader curve at exit, where
    from concurrent.futures import ProcessPoolExecutor  # these imports can no longer register their atexit

    cpus = job_cpus() or 1
    if cpus < 2 or len(jobs) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [job[0](*job[1:]) for job in jobs]
    with ProcessPoolExecutor(min(cpus, len(jobs)), mp_context=multiprocessing.get_context("fork")) as pool:
        return [future.result() for future in [pool.submit(*job) for job in jobs]]
