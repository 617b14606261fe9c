"""Stage 4: turn the loop's numbers into `num_workers` / `--cpus-per-task` advice, with reasons.

The numbers are computed once (`model_numbers`, into a typed `AdviceNumbers`): from the run's own loop timed untraced
with worker counts taking turns (profiling.trials), else from a loader curve, else an estimate from the profile alone.
The advice is a table of rules (a name, a level, a condition on the numbers, a message filled from them); hints that
name the lesson script's own flags are a separate table. How the advice is found: docs/profiling-model.md.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from profiling.cpu_rule import cpus_for_workers, main_process_cpus
from profiling.curve import FED_SHARE, LEVEL, choose_workers
from profiling.edits import script_edits
from profiling.records import Advice, AdviceNumbers, JobFacts, Level, LoaderCurve, LoopSummary, plural
from profiling.turns import (HANDOFF_MS, LOADER_BOUND, MIN_TIMED, TOLERANCE, TURNS_FOR_SPREAD, fewest_within,
                             STREAM, least_wait_of, measured_steps, step_noise, turn_means, untraced_own)

# Without a curve the need is inferred, between the average need ceil(P / C) and ESTIMATE_FACTOR times it. The
# estimate takes the top: on an H100 the average ran 1.21x slower than a sweep's best; more workers cost only idle CPUs.
ESTIMATE_FACTOR = 1.5
FEW_BATCHES = 20      # below this, start-up (first batch, worker start) dominates the averages
ASSUMED_WORKERS = 1   # the DataLoader default of the lesson script (and pytorch/examples on GPU)
CURVE_COMMAND = "python -m profiling run -- SCRIPT ARGS"  # named by an estimate: it measures in the loop
CONSTANTS = {"handoff_ms": HANDOFF_MS, "factor": ESTIMATE_FACTOR, "fed_pct": round(100 * FED_SHARE),
             "level_pct": round(100 * LEVEL), "starve_pct": round(100 * (1 / FED_SHARE - 1))}
READS_DOMINATE = 0.5  # the workers' share of time reading files (the meta's io_split) above which reads cost most


@dataclass(frozen=True)
class Rule:
    """One row of the advice table: when `when(numbers)` holds, `message` is formatted with them."""

    name: str
    level: Level
    when: Callable[[AdviceNumbers], bool]
    message: str

    def text(self, numbers: AdviceNumbers, kit_script: bool = False) -> str:
        """The message filled in, then the lesson script's hint for this rule when it is the kit's script."""
        hint = LESSON_SCRIPT_HINTS.get(self.name) if kit_script else None
        return plural(" ".join(part.format(**asdict(numbers), **CONSTANTS) for part in (self.message, hint) if part))

    def brief(self, numbers: AdviceNumbers) -> str:
        """The plain one-liner for the terminal's "Why" (BRIEF), or the message itself."""
        return plural(BRIEF.get(self.name, self.message).format(**asdict(numbers), **CONSTANTS))


def model_numbers(loop: LoopSummary | None, facts: JobFacts, curve: LoaderCurve | None = None,
                  trials: dict | None = None) -> AdviceNumbers:
    """Every number the rules use, computed once: from the loop timed untraced, else the curve, else the estimate."""
    workers = facts.num_workers if facts.num_workers is not None else ASSUMED_WORKERS
    # The CPUs the next run may have: this job's, or the node's share per GPU if that is larger.
    ceiling = max(facts.cpus, facts.cores_per_gpu) if facts.gpus >= 1 and facts.cores_per_gpu else facts.cpus
    main_cpus = main_process_cpus(facts.gpus, facts.pin_memory)
    worker_cap = max(ceiling - main_cpus, 0)
    read_share = facts.read_share or 0.0
    job = AdviceNumbers(loop_found=loop is not None, cpus=facts.cpus, gpus=facts.gpus, current_workers=workers,
        workers_known=facts.num_workers is not None, requested=facts.requested, cpu_ceiling=ceiling,
        main_cpus=main_cpus, worker_cap=worker_cap, pin_memory=facts.pin_memory,
        persistent_workers=facts.persistent_workers, compute_kind="GPU" if facts.gpus >= 1 else "CPU",
        curve_command=CURVE_COMMAND, curve_hold_ms=curve.hold_ms if curve is not None else 0.0,
        io_known=facts.read_share is not None, read_ms=facts.read_ms or 0.0, decode_ms=facts.decode_ms or 0.0,
        read_pct=100 * read_share, reads_dominate=read_share >= READS_DOMINATE, other_loader=facts.other_loader,
        other_cpus=cpus_for_workers(facts.other_workers, facts.gpus, facts.pin_memory) if facts.other_workers else 0)
    if loop is None:
        return job
    steps, own = measured_steps(trials), untraced_own(trials)
    status = (trials or {}).get("status", "")
    untraced = own is not None and (bool(steps) or status == "compute-bound")
    wait, compute = own if untraced and own else (loop.wait_per_batch, loop.compute_per_batch)
    wait_fraction = wait / (wait + compute) if wait + compute > 0 else 0.0
    produce = wait if workers == 0 else workers * (wait + compute)
    above_threshold = wait_fraction >= LOADER_BOUND
    within_handoff = workers >= 1 and 1e3 * wait <= HANDOFF_MS  # the wait no worker can remove
    loader_bound = above_threshold and not within_handoff
    raw = math.ceil(produce / compute - 1e-9) if loader_bound and compute > 0 else None
    traced = (trials or {}).get("traced") or {}  # the hook's clock: batch to batch, the first (workers' start) left out
    from_loader = (trials or {}).get("traced_batches") or math.inf  # fewer than the loop's steps: it ran on without
    if status.startswith("too short") and loop.batches > from_loader + 1 and not (trials or {}).get("other_batches"):
        status = (f"worker counts not tried: the loop stepped {loop.batches} times on {from_loader} "
                  "batches of its DataLoader and asked for no more (a loop over kept batches, as itertools.cycle does)")
    measured: dict = {}
    capped = never = spare = False  # each branch below sets those it knows
    stream = status == STREAM  # (profiling.trials): its workers copy the stream, so no other count is advised
    choice = choose_workers(curve, worker_cap) if curve is not None and compute > 0 and not stream else None
    short = curve is not None and curve.hold_ms > 0 and compute > 0 and choice is None and not stream
    if choice is not None and (not loader_bound and (choice.workers > workers or choice.capped)
                               or not above_threshold and choice.never_keeps_up):
        choice = None  # a loop that did not wait is never told to add workers, nor that the loader holds it back
    if choice is not None and choice.workers == 0 and not (choice.capped or choice.never_keeps_up):
        loader_bound = False  # the curve measured that the main process alone keeps up
    if steps:
        noise = step_noise(trials)
        chosen = needed = fewest_within(steps)
        # (profiling.trials.held_slower); without the traced part's steps there is no compute to compare
        needs_cpus = bool(trials.get("squeezed")) and not above_threshold and bool(traced.get("steps"))
        basis, loader_bound = "tried", not needs_cpus
        if needs_cpus:
            measured.update(step_needs_cpus=True, held_cpus=cpus_for_workers(workers, facts.gpus, facts.pin_memory),
                            traced_compute_ms=1e3 * (traced["seconds"] - traced["wait_seconds"]) / traced["steps"])
        fastest = sorted(steps.items(), key=lambda kt: kt[1])
        best, best_step = fastest[0]
        least_wait, least_at = least_wait_of(trials["settings"], steps)
        capped = not needs_cpus and max(steps) >= facts.cpus - main_cpus and least_wait >= LOADER_BOUND \
            and steps[max(steps)] <= (1 + TOLERANCE) * best_step  # starved at every k, the most no slower (n_5)
        # advised the fastest: is the next count down surely behind it? (the fewest tried: is the next up not ahead?)
        fewer, more = [k for k in steps if k < chosen], [k for k in steps if k > chosen]
        behind = chosen if chosen != best else max(fewer) if fewer else min(more, default=chosen)
        gap_noise = math.hypot(noise.get(behind, 0.0), noise.get(best, 0.0))
        measured |= {"tried": steps, "tried_noise": noise, "tolerance_pct": 100 * TOLERANCE, "tried_text": ", ".join(
            f"{k} worker{'s' * (k != 1)} {1e3 * t:.2f} ms a step" for k, t in fastest), "behind_workers": behind,
            "behind_pct": 100 * (steps[behind] / best_step - 1), "behind_noise_pct": 200 * gap_noise / best_step,
            "tried_turns": min(len(turn_means(trials.get("segments", [])).get(k, [])) for k in (chosen, best)),
            "tried_wait_pct": 100 * least_wait, "least_wait_at": least_at, "turn_s": trials.get("lengthened_to") or 0.0,
            "start_total_s": trials.get("start_seconds", 0.0), "tried_cpus": trials.get("cpus") or facts.cpus,
            "zero_untried": ",".join(map(str, [0, *sorted(steps)])) if facts.gpus == 0 and 0 not in steps and "0"
            not in trials.get("refused", {}) and steps[min(steps)] <= (1 + TOLERANCE) * best_step else ""}  # (v_5)
    elif stream:  # another count changes the data (a replay buffer's copy in each worker: unseen ac_5)
        chosen, needed, basis = workers, workers, "stream"
    elif choice is not None:
        chosen, needed, basis = choice.workers, choice.workers, "measured"
        capped, never = choice.capped, choice.never_keeps_up
        measured = {"compute_rate": 1 / compute, "target_rate": choice.target_rate,
                    "chosen_rate": choice.chosen_rate, "curve_best_rate": choice.best_rate,
                    "curve_best_workers": choice.best_workers, "curve_max_workers": choice.max_workers,
                    "curve_fed_workers": choice.fed_workers, "curve_fed_rate": choice.fed_rate,
                    "curve_slack": None if choice.fed_workers is None else choice.workers - choice.fed_workers}
        timed_up_to = max(p.workers for p in curve.points) if curve is not None else 0
        if own is not None and workers > max(chosen, timed_up_to) and choice.chosen_rate \
                and sum(own) < (1 - TOLERANCE) / choice.chosen_rate:  # the run's own count, timed untraced, is faster
            chosen, needed, basis, capped, never = workers, workers, "own", False, False
            wait, compute = own  # what the Why lines say, as the step beside them is: untraced
            wait_fraction = wait / (wait + compute)
            measured |= {"curve_step_ms": 1e3 / choice.chosen_rate, "curve_chosen": choice.workers}
    elif not loader_bound:
        chosen, needed, basis = workers, workers, "kept"
    elif raw is not None:
        needed = max(math.ceil(ESTIMATE_FACTOR * produce / compute - 1e-9), raw)
        chosen = min(needed, worker_cap)
        basis, capped, spare = "estimate", raw > chosen, raw <= chosen < needed
    else:  # no compute time at all: nothing can keep up, so as many as the CPUs allow
        chosen, needed, basis = worker_cap, worker_cap, "estimate"
    cpus = max(cpus_for_workers(chosen, facts.gpus, facts.pin_memory), job.other_cpus,  # not fewer than had: starved
               facts.cpus if capped and basis == "tried" or basis in ("kept", "stream") and not facts.gpus else 0)
    return AdviceNumbers(**{**asdict(job), **measured, "num_workers": chosen, "cpus_per_task": cpus,
        "keeps_cpus": basis in ("kept", "stream") and not facts.gpus and cpus > chosen + 1,  # a CPU step's: u_4
        "loader_bound": loader_bound, "handoff_only": above_threshold and within_handoff,
        "capped": capped, "spare_dropped": spare, "batches": loop.batches, "starts": (trials or {}).get("starts", 0),
        "wait_ms": 1e3 * wait, "compute_ms": 1e3 * compute, "produce_ms": 1e3 * produce,
        "wait_pct": 100 * wait_fraction if above_threshold else math.floor(1e3 * wait_fraction) / 10,  # never "5.0%"
        "raw_workers": raw, "needed_workers": needed, "loop_where": f"{loop.file}:{loop.header_line}", "basis": basis,
        "estimate_high": needed if basis == "estimate" else None, "never_keeps_up": never,
        "curve_short": short, "curve_cpus": curve.cpus if curve is not None else None,
        "curve_max_workers": max(p.workers for p in curve.points) if short else measured.get("curve_max_workers"),
        "traced_step_ms": 1e3 * (traced["seconds"] / traced["steps"] if traced.get("steps", 0) >= MIN_TIMED
                                 else loop.wait_per_batch + loop.compute_per_batch),
        "untraced_step_ms": None if own is None else 1e3 * sum(own),
        "traced_batches": (trials or {}).get("traced_batches"), "fallback": "" if untraced or not trials else status})


RULES: tuple[Rule, ...] = (
    Rule("no_loader_loop", "advice", lambda n: not n.loop_found,
         "No `for ... in <loader>` loop was found in the profiled functions, so there is no data wait to "
         "measure and no num_workers advice. Where your script iterates a DataLoader in a module of its own, name "
         "it: `run --module NAME` (or put @profile on the function that holds it)."),
    Rule("workers_unknown", "warning", lambda n: n.loop_found and not n.workers_known,
         "The profiled run's num_workers is not recorded; the advice assumes {current_workers}. "
         "Pass --num-workers N (the value the run used) for exact advice."),
    Rule("step_needs_cpus", "advice", lambda n: n.basis == "tried" and n.step_needs_cpus,
         "The loader kept up, but held to the {held_cpus} CPUs of {current_workers} worker(s) your step computed "
         "for {compute_ms:.1f} ms a batch, against {traced_compute_ms:.1f} ms traced on all the job's {cpus} CPUs: "
         "the step itself needs CPUs (work on the CPU in the main process, which workers compete with), so each "
         "worker count was tried on the CPUs it would be given."),
    Rule("waited_untraced", "advice", lambda n: n.basis == "tried" and not n.step_needs_cpus
         and (n.num_workers != n.current_workers or n.capped),
         "Your loop waited {wait_pct:.0f}% of each step for data (timed untraced, with {current_workers} "
         "worker(s)), so other counts were tried."),  # not "the loader holds it back", then fewer workers (ab_3)
    Rule("waited_own_best", "advice", lambda n: n.basis == "tried" and not n.step_needs_cpus
         and n.num_workers == n.current_workers and not n.capped,
         "Your loop waited {wait_pct:.0f}% of each step for data with its own {current_workers} worker(s) (timed "
         "untraced), and no other count tried was {tolerance_pct:g}% faster: keep it."),
    Rule("workers_tried", "advice", lambda n: n.basis == "tried", "Measured in your run: {tried_text}."),
    Rule("capped_in_run", "advice", lambda n: n.basis == "tried" and n.capped and not n.zero_untried,
         "At every count tried on the {tried_cpus} CPU(s) your run had, your loop waited {tried_wait_pct:.0f}% of "
         "each step or more ({least_wait_at} worker(s) waited least): the loader stays the bottleneck. Ask for "
         "more CPUs and profile again."),
    Rule("capped_zero_untried", "advice", lambda n: n.basis == "tried" and n.capped and n.zero_untried,
         "At every count tried on the {tried_cpus} CPU(s) your run had, your loop "
         "waited {tried_wait_pct:.0f}% of each step or more. 0 workers was not among the counts tried: on a "
         "CPU-only job the main process alone can be the fastest where a batch costs little to build, as it leaves "
         "the workers' CPUs to the step. Time it too (`python -m profiling run --try-workers {zero_untried} -- "
         "SCRIPT ARGS`), or ask for more CPUs and profile again."),
    Rule("other_loader", "advice", lambda n: n.loop_found and n.other_loader is not None
         and n.cpus_per_task == n.other_cpus,
         "--cpus-per-task={other_cpus} keeps CPUs for the DataLoader at {other_loader}, which runs more workers than "
         "the training loop's in the same job (its count is its own: nothing was tried or edited there)."),
    Rule("fewest_within", "advice", lambda n: n.basis == "tried" and len(n.tried or ()) > 1,
         "{num_workers} is the fewest workers whose step is within {tolerance_pct:g}% of the best measured; each "
         "count was timed untraced in turns of your own loop, warm-up batches left out."),
    Rule("not_sure", "note", lambda n: n.basis == "tried" and len(n.tried or ()) > 1 and n.behind_pct is not None
         and n.behind_noise_pct is not None and abs(n.behind_pct + 100 * TOLERANCE * (
             1 if (n.behind_workers or 0) > (n.num_workers or 0) else -1)) < n.behind_noise_pct,  # up: 5 % ahead?
         "How sure: {behind_workers} worker(s) measured {behind_pct:.1f}% behind the fastest, give or take "
         "{behind_noise_pct:.1f}% (two standard errors), so this run cannot say which is the fewest count within 5%. "
         "More epochs give each count more turns and a surer answer."),
    Rule("workers_changed", "note", lambda n: n.starts > 0,  # (x_1: its own count, timed in the profiler's loader)
         "Counts were timed in DataLoaders of the profiler's own, so your loader's num_workers reads as it was; their "
         "workers built some batches: per-worker random augmentation, and so the losses, may differ from a plain "
         "run's; the sampler's order and the batches of each epoch do not."),
    Rule("zero_not_tried", "note", lambda n: n.zero_untried and not n.capped,
         "0 workers was not among the counts tried. On a CPU-only job the main process alone, building each "
         "batch itself, can be the fastest where a batch costs little to build: it leaves the workers' CPUs to the "
         "step. To time it too: `python -m profiling run --try-workers {zero_untried} -- SCRIPT ARGS`."),
    Rule("few_turns", "note", lambda n: n.basis == "tried" and len(n.tried or ()) > 1
         and n.tried_turns in range(TURNS_FOR_SPREAD),
         "How sure: the run had time for {tried_turns} turn(s) of each count, too few to see how much one count's "
         "turns vary, so counts a few % apart may rank otherwise in another run. More epochs give a surer answer."),
    Rule("slow_starts", "note", lambda n: n.turn_s > 0,
         "Starting each count's workers took {start_total_s:.0f} s in {starts} turns (a `spawn` or `forkserver` loader "
         "starts Python in every worker): each turn was timed for at least {turn_s:.1f} s, twice a start."),
    Rule("loader_bound", "advice", lambda n: n.loader_bound and n.basis != "tried",
         "The loader holds your loop back: the main process waited {wait_ms:.2f} ms per batch for data and "
         "computed for {compute_ms:.2f} ms, so {wait_pct:.0f}% of each step was spent waiting "
         "(line {loop_where}, {batches} batches)."),
    Rule("many_small_files", "advice", lambda n: n.loader_bound and n.reads_dominate,
         "Many small files: group them or stage them. The loader's workers spent {read_ms:.1f} ms per batch "
         "opening and reading files and {decode_ms:.1f} ms decoding ({read_pct:.0f}% reads), so more workers "
         "mostly queue more file requests. Group the files into shards (`python -m small_files shard`) or "
         "copy them to node-local disk at the start of the job (jobs/templates/small-files-staged.sbatch)."),
    Rule("decode_on_gpu", "advice", lambda n: n.loader_bound and n.io_known and not n.reads_dominate,
         "Decoding, not reading, is the workers' work: {decode_ms:.1f} ms per batch decoding and transforming "
         "images against {read_ms:.1f} ms opening and reading files ({read_pct:.0f}% reads). On a GPU node the "
         "next step is to decode there: with `--decode gpu` (small_files/train.py) the workers hand over the "
         "JPEG bytes only and each batch is decoded with nvJPEG and cropped in one call. nvJPEG pays per image: "
         "tile small images into sheets (`shard --tile 8`), or let the workers decode and the GPU crop "
         "(`--gpu-decode-share 0`); see lesson 09 (many small files), lessons/09-small-files.md, section 7."),
    Rule("workers_from_main_process", "advice", lambda n: n.basis == "estimate" and n.current_workers == 0
         and n.raw_workers is not None and not n.reads_dominate,
         "With num_workers=0 the main process builds every batch itself: about {produce_ms:.2f} ms each. "
         "Workers building batches in parallel keep up when ceil({produce_ms:.2f} / {compute_ms:.2f}) = "
         "{raw_workers} run at once on average; the estimate is {factor} times that, {estimate_high}."),
    Rule("workers_from_starved_loop", "advice", lambda n: n.basis == "estimate" and n.current_workers > 0
         and n.raw_workers is not None and not n.reads_dominate,
         "{current_workers} worker(s) delivered one batch per {wait_ms:.2f} + {compute_ms:.2f} ms, so one "
         "worker needs about {produce_ms:.2f} ms per batch. To deliver a batch every {compute_ms:.2f} ms "
         "takes ceil({produce_ms:.2f} / {compute_ms:.2f}) = {raw_workers} workers on average; the estimate "
         "is {factor} times that, {estimate_high}, because workers hand batches over in a fixed order and "
         "one slow batch stalls the loop."),
    Rule("estimate", "advice", lambda n: n.basis == "estimate" and not n.fallback.startswith("worker counts not"),
         "This num_workers is an ESTIMATE from the profile alone, somewhere between {raw_workers} (the average "
         "need) and {estimate_high}. For a measured number, profile two epochs or more with {curve_command}: it "
         "times your loop untraced while worker counts take turns in it."),
    Rule("estimate_untriable", "advice", lambda n: n.basis == "estimate" and n.fallback.startswith("worker counts not"),
         "This num_workers is an ESTIMATE from the profile alone, somewhere between {raw_workers} (the average "
         "need) and {estimate_high}: counts cannot be tried in this loop (the first line says why), and no loader "
         "curve was measured at its end (its log says why). `python -m profiling sweep -- SCRIPT ARGS` times each "
         "count in a run of its own."),
    Rule("own_count_faster", "advice", lambda n: n.basis == "own",
         "Measured in your run: your {current_workers} workers {untraced_step_ms:.2f} ms a step, untraced; the "
         "curve, timed up to {curve_max_workers} worker(s) on {cpus} CPU(s), gives {curve_chosen} worker(s) "
         "{curve_step_ms:.2f} ms a step. Keep {num_workers}."),
    Rule("curve_too_short", "advice", lambda n: n.curve_short,
         "The loader curve was measured on {curve_cpus} CPU(s), up to {curve_max_workers} worker(s), and does not "
         "reach the loop's rate there, so it cannot say how many of the {worker_cap} workers {cpu_ceiling} "
         "CPU(s) hold are needed; the advice falls back to the estimate. Measure it with the CPUs you will ask for."),
    Rule("workers_from_paced_curve", "advice",
         lambda n: n.basis == "measured" and not n.capped and not n.never_keeps_up and (n.num_workers or 0) >= 1,
         "Measured: the loop consumes a batch every {compute_ms:.2f} ms. With each batch held {curve_hold_ms:g} ms, "
         "as a loop with that step holds it, {curve_fed_workers} worker(s) on {cpus} CPU(s): the fewest that keep "
         "such a loop fed ({curve_fed_rate:.0f} batches/s) by one of three tests: the curve levels off there (within "
         "{level_pct}% of the median of its points from there up), passes the {target_rate:.0f} that feed it "
         "{fed_pct}% of the time, or left the loop asleep for batches under {starve_pct}% of each held step (on a busy "
         "core the hand-over waits for the CPU, which no worker fixes). The advice adds {curve_slack}, {num_workers} "
         "in all: the hold is the loop's step as the hook timed it, traced in part, and longer than the real one."),
    Rule("no_workers_needed", "advice",
         lambda n: n.basis == "measured" and not n.capped and not n.never_keeps_up and n.num_workers == 0,
         "Measured: with each batch held {curve_hold_ms:g} ms, as your loop holds it, the main process alone "
         "(num_workers=0) kept the loop fed, so no workers are needed and their CPUs are saved."),
    Rule("capped_by_cpus", "advice",
         lambda n: n.capped and n.basis != "tried" and (n.loader_bound or n.basis == "measured"),
         "Keeping up needs more workers than {cpu_ceiling} CPU(s) can run beside the main process, so "
         "num_workers is capped at {num_workers}. The loader will stay the bottleneck: make batches cheaper "
         "to build (simpler transforms; on a GPU node, data kept there) or plan for more CPUs with --cpus N."),
    Rule("never_feeds_held_loop", "advice", lambda n: n.never_keeps_up,
         "The loader cannot keep the loop fed at any number of workers: with each batch held {curve_hold_ms:g} ms, "
         "it levels off at {curve_best_rate:.0f} batches/s from {curve_best_workers} worker(s), below the "
         "{target_rate:.0f} batches/s that keep such a loop fed {fed_pct}% of the time, so workers past "
         "{num_workers} only take CPUs. Make batches cheaper to build (lighter transforms, one file per many samples "
         "instead of many small files) or, on a GPU node, keep the data there."),
    Rule("no_room_for_spare", "advice", lambda n: n.loader_bound and n.spare_dropped,
         "The estimate, {estimate_high}, does not fit in {cpu_ceiling} CPU(s) beside the main process, so "
         "num_workers is {num_workers}: at least the average need, with less room for slow batches."),
    Rule("handoff_only", "advice", lambda n: n.handoff_only,
         "The {wait_ms:.2f} ms per batch still spent on the loader line is within the {handoff_ms} ms a main "
         "process needs to take a finished batch from its workers, which more workers do not remove."),
    Rule("stream_kept", "advice", lambda n: n.basis == "stream" and n.loader_bound,
         "Keep num_workers={num_workers}: your DataLoader reads an IterableDataset, whose workers each iterate a copy "
         "of it made when they start, so another count changes the data your loop sees (every item once a worker, "
         "unless the dataset splits the stream by get_worker_info()). No other count was tried or is advised."),
    Rule("compute_bound", "advice", lambda n: n.loop_found and not n.loader_bound and not n.capped
         and not n.never_keeps_up and n.basis != "tried",
         "The loader is not the bottleneck, {compute_kind} compute is: data wait is {wait_ms:.2f} ms "
         "per batch, {wait_pct:.1f}% of a step, so more workers will not help. "
         "To go faster, make the step cheaper: larger batches, mixed precision and, on a GPU, data kept there."),
    Rule("keep_workers", "advice", lambda n: n.loop_found and not n.loader_bound and not n.capped
         and not n.never_keeps_up and n.num_workers == n.current_workers, "Keep num_workers={num_workers}."),
    Rule("fewer_workers", "advice", lambda n: n.loop_found and not n.loader_bound and not n.capped
         and not n.never_keeps_up and n.num_workers is not None and n.num_workers < n.current_workers,
         "Use num_workers={num_workers} instead of {current_workers}: the loader keeps up without more, "
         "and {cpu_ceiling} CPU(s) hold at most {worker_cap} beside the main process."),
    Rule("main_process_cpus", "advice", lambda n: n.loop_found and (n.num_workers or 0) >= 1 and n.main_cpus > 1,
         "--cpus-per-task={cpus_per_task} is num_workers={num_workers} plus {main_cpus} for the main process: "
         "on a GPU with pinned memory it runs the training loop and a pin-memory thread, and its CUDA waits "
         "spin on a core, so with only one CPU of its own it takes time from the workers."),
    Rule("cpu_step_keeps_cpus", "advice", lambda n: n.keeps_cpus,
         "--cpus-per-task={cpus_per_task} keeps the CPUs the run had: with no GPU the step computes on them with "
         "PyTorch's threads, and it was not timed on fewer."),
    Rule("main_process_one_cpu", "advice", lambda n: n.loop_found and (n.num_workers or 0) >= 1 and n.main_cpus == 1
         and not n.keeps_cpus,
         "--cpus-per-task={cpus_per_task} is num_workers={num_workers} plus one CPU for the main process, which "
         "runs the training loop and takes each batch the workers finish."),
    Rule("too_many_workers", "warning", lambda n: n.workers_known and n.current_workers > max(n.cpus - n.main_cpus, 0),
         "The run used num_workers={current_workers}, more than its {cpus} CPU(s) can run beside the main "
         "process; the workers and the main process then share cores."),
    Rule("too_many_cpus", "warning", lambda n: n.loop_found and n.requested and n.gpus >= 1
         and n.cpus > (n.cpus_per_task or 0) + 1,
         "Too many CPUs requested for this profile: the job has {cpus} CPUs but keeps about "
         "{cpus_per_task} busy (num_workers={num_workers} plus the main process). Idle cores count "
         "against your allocation and can leave a node's other GPUs without cores."),
    Rule("pin_memory", "note", lambda n: n.loop_found and n.gpus >= 1 and (n.num_workers or 0) >= 1
         and n.pin_memory is not True,
         "Keep pin_memory=True in the DataLoader: batches then arrive in page-locked memory and "
         "`.to(device, non_blocking=True)` can overlap the copy with compute."),
    Rule("persistent_workers", "note", lambda n: n.loop_found and (n.num_workers or 0) >= 1
         and n.persistent_workers is None and n.basis != "stream",
         "Add persistent_workers=True to the DataLoader: otherwise its workers are started again at "
         "every epoch, and the first batches of each epoch wait for them. Their seeds are then drawn once, not every "
         "epoch, so a shuffled run's later epochs draw other orders and its losses move a little."),
    Rule("cpu_only", "warning", lambda n: n.loop_found and n.gpus == 0 and n.basis != "tried",
         "This run had no GPU: DataLoader workers compete with PyTorch's compute threads for the same "
         "{cpus} CPU(s), which the advice's model leaves out. Check the advice with `python -m profiling sweep`."),
    Rule("tried_on_fewer_cpus", "warning", lambda n: n.basis == "tried" and (n.tried_cpus or n.cpus) < n.cpus,
         "Worker counts were tried on the {tried_cpus} CPU(s) the script's process had, not the job's {cpus}: a "
         "script that narrows its own CPUs (os.sched_setaffinity, taskset) keeps them whatever --cpus-per-task says; "
         "else profile inside the job to try the counts its CPUs hold."),
    Rule("few_batches", "warning", lambda n: n.loop_found and n.basis != "tried" and (n.batches or 0) < FEW_BATCHES,
         "Only {batches} batches were profiled, so start-up (the first batch, starting workers) weighs "
         "heavily in these averages; profile a few hundred steps for firmer advice."),
)

# The terminal's "Why" lines: each reason in a few plain words; the full message goes to the Markdown, HTML and JSON.
BRIEF: dict[str, str] = {
    "waited_untraced": "Your loop waited {wait_pct:.0f}% of each step for data with {current_workers} worker(s).",
    "waited_own_best": "Your loop waited {wait_pct:.0f}% of each step with its own {current_workers} worker(s); no "
                       "count was {tolerance_pct:g}% faster.",
    "step_needs_cpus": "Your step computed {compute_ms:.0f} ms a batch on {held_cpus} CPUs, {traced_compute_ms:.0f} ms "
                       "on {cpus}: it needs CPUs.",
    "capped_in_run": "Your loop waited {tried_wait_pct:.0f}% of each step or more at every count on {tried_cpus} "
                     "CPU(s) ({least_wait_at} worker(s) waited least): ask for more CPUs.",
    "capped_zero_untried": "Your loop waited {tried_wait_pct:.0f}% or more at every count tried on {tried_cpus} "
                           "CPU(s): time 0 workers too (--try-workers {zero_untried}), or add CPUs.",
    "fewest_within": "{num_workers} is the fewest workers within {tolerance_pct:g}% of the fastest.",
    "other_loader": "{other_cpus} CPUs: the DataLoader at {other_loader} runs more workers in this job.",
    "loader_bound": "Your loop waited {wait_pct:.0f}% of each step for data ({wait_ms:.2f} ms a batch).",
    "many_small_files": "The workers mostly open and read small files ({read_pct:.0f}% of their time): "
                        "group them into shards or stage them.",
    "decode_on_gpu": "The workers mostly decode images: on a GPU node, decode there (lesson 09, many small files).",
    "workers_from_main_process": "Without workers the main process builds each batch itself ({produce_ms:.2f} ms).",
    "workers_from_starved_loop": "One worker needs about {produce_ms:.2f} ms a batch; the loop takes one "
                                 "every {compute_ms:.2f} ms.",
    "estimate": "This is an ESTIMATE from the profile alone: {curve_command} over two epochs or more measures it.",
    "estimate_untriable": "This is an ESTIMATE from the profile alone: `python -m profiling sweep` times each count.",
    "curve_too_short": "The loader curve did not reach the loop's pace on {curve_cpus} CPU(s): estimated instead.",
    "workers_from_paced_curve": "Timed with each batch held {curve_hold_ms:.1f} ms (the loop's step), the loader "
                                "keeps up from {curve_fed_workers} worker(s).",
    "no_workers_needed": "The main process alone kept the held loop fed: no workers needed.",
    "capped_by_cpus": "Keeping up needs more workers than {cpu_ceiling} CPU(s) hold: the loader stays the bottleneck.",
    "never_feeds_held_loop": "No number of workers keeps the loop fed: make batches cheaper to build.",
    "handoff_only": "The {wait_ms:.2f} ms left is the hand-over of a finished batch, which workers do not remove.",
    "compute_bound": "The loader is not the bottleneck: the loop waited {wait_pct:.1f}% of a step for data.",
    "fewer_workers": "The loader keeps up with {num_workers} worker(s), fewer than the {current_workers} used.",
    "main_process_cpus": "Plus {main_cpus} CPUs for the main process (loop, pin-memory thread, CUDA waits).",
    "main_process_one_cpu": "Plus 1 CPU for the main process, which runs the training loop.",
    "stream_kept": "Keep {num_workers} worker(s): an IterableDataset's workers copy it, so another count changes data.",
    "cpu_step_keeps_cpus": "Keep the {cpus_per_task} CPUs the run had: with no GPU, the step computes on them.",
}

# Where the job's CPUs cap the count, the cap's own line says what these say; as "Why" lines beside a capped count
# they read as asking for more workers than advised ("one worker needs 17.83 ms a batch", then 1 worker: unseen k_4).
SAID_BY_THE_CAP = ("waited_untraced", "workers_from_main_process", "workers_from_starved_loop")

# The lesson script's flags for a rule's remedy, kept apart: `run` profiles any script, only mnist_classify.py has them.
LESSON_SCRIPT_HINTS: dict[str, str] = {
    "capped_by_cpus": "(mnist_classify.py: --gpu-resident keeps the data on the GPU.)",
    "never_feeds_held_loop": "(mnist_classify.py: --gpu-resident.)",
    "compute_bound": "(mnist_classify.py: --batch-size, --amp, --gpu-resident.)",
    "pin_memory": "(mnist_classify.py: on by default with CUDA, off with --no-pin-memory.)",
    "persistent_workers": "(mnist_classify.py: --persistent-workers.)",
}


def advise(loop: LoopSummary | None, facts: JobFacts, curve: LoaderCurve | None = None,
           trials: dict | None = None) -> Advice:
    """Evaluate the rule table; return the advice, its reasons, warnings and notes, and the exact edits."""
    numbers = model_numbers(loop, facts, curve, trials)
    fired = [rule for rule in RULES if rule.when(numbers)]
    edits = [] if numbers.num_workers is None else [f"#SBATCH --cpus-per-task={numbers.cpus_per_task}",
                                                     *script_edits(numbers, facts)]

    def texts(level: Level) -> list[str]:
        return [rule.text(numbers, facts.kit_script) for rule in fired if rule.level == level]

    return Advice(num_workers=numbers.num_workers, cpus_per_task=numbers.cpus_per_task,
                  reasons=texts("advice"), briefs=[rule.brief(numbers) for rule in fired if rule.level == "advice"
                                                   and not (numbers.capped and rule.name in SAID_BY_THE_CAP)],
                  warnings=texts("warning"), notes=texts("note"), edits=edits,
                  fired_rules=[rule.name for rule in fired], numbers=numbers)
