"""Stage 4: turn the loop's numbers into `num_workers` / `--cpus-per-task` advice, with reasons.

The arithmetic is one function (`model_numbers`, into a typed `AdviceNumbers`); the advice is a
table of rules, each a name, a level, a condition on those numbers and a message filled from them,
in the spirit of Princeton's `jobstats` notes. Adding a rule means adding a row, not another `if`.
Messages are generic, because `run` profiles any script; hints that name the lesson script's own
flags (`mnist_classify.py --gpu-resident`, ...) are a separate table, `LESSON_SCRIPT_HINTS`.

The model (docs/profiling-model.md explains it at length):
  W = data wait per batch (time on the `for ... in loader` header)
  C = compute per batch (every other line of the loop body, summed: copy, forward, loss,
      backward, step, logging; the split among them is never used, because asynchronous CUDA
      work is charged to whichever line synchronises)
  k = num_workers of the profiled run
One worker builds a batch in P seconds. With k = 0 the main process builds it: P = W. With
k >= 1 and the loop starved, the k workers together deliver one batch per (W + C), so
P = k (W + C). Keeping up with the loop needs P / C workers on average; the advice sizes the
pool at HEADROOM times that, ceil(2 P / C), because workers hand batches over in a fixed order
(one slow batch stalls the loop however far the others are ahead) and run slower on a job's few
CPUs than on the profiled node. Below a data-wait share of 5 % the loader is not the bottleneck and k is kept; with
workers, a wait under HANDOFF_MS per batch is the cost of receiving a batch, not starvation.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from profiling.records import Advice, AdviceNumbers, JobFacts, Level, LoopSummary

LOADER_BOUND = 0.05   # data-wait share of a step above which the loader is the bottleneck
# Workers needed = ceil(HEADROOM x P / C), i.e. keep the workers about half busy. With only the average
# need (or need + 1) the loop still waited: on an H100 the profile at 1 worker implied 3 workers,
# yet 4 ran 1.2x slower than the best of a sweep while 6 to 8 were within 6 % (docs/profiling-model.md).
HEADROOM = 2.0
FEW_BATCHES = 20      # below this, start-up (first batch, worker start) dominates the averages
ASSUMED_WORKERS = 1   # the DataLoader default of the lesson script (and pytorch/examples on GPU)
# With workers, the main process always waits a little per batch even when the workers are far
# ahead: it takes the finished batch off a queue (and off the pin-memory thread). That floor is
# not starvation, and counting it as such would ask for more workers after every re-profile.
# benchmarks/loader_handoff.py measures the real floor on a GPU node.
HANDOFF_MS = 0.5
# CPUs the main process keeps busy besides the workers. On a GPU with pinned memory it runs two
# threads: the training loop (whose CUDA waits spin on a core) and the pin-memory thread that
# page-locks every batch. On an H100 (16 cores) one worker held to 2 CPUs needed 12.3 ms a step but
# 9.5 ms with the node free, so `workers + 1` CPUs starved the workers (docs/profiling-model.md).
MAIN_CPUS_GPU_PINNED = 2
MAIN_CPUS_OTHERWISE = 1
CONSTANTS = {"handoff_ms": HANDOFF_MS}  # module constants a message may name, besides the numbers


@dataclass(frozen=True)
class Rule:
    """One row of the advice table: when `when(numbers)` holds, `message` is formatted with them."""

    name: str
    level: Level
    when: Callable[[AdviceNumbers], bool]
    message: str

    def text(self, numbers: AdviceNumbers, kit_script: bool = False) -> str:
        """The message filled in, followed by the lesson script's hint for this rule when it is the kit's script."""
        hint = LESSON_SCRIPT_HINTS.get(self.name) if kit_script else None
        return " ".join(part.format(**asdict(numbers), **CONSTANTS) for part in (self.message, hint) if part)


def main_process_cpus(gpus: int, pin_memory: bool | None) -> int:
    """CPUs the training process itself keeps busy besides its DataLoader workers (see above)."""
    return MAIN_CPUS_GPU_PINNED if gpus >= 1 and pin_memory is not False else MAIN_CPUS_OTHERWISE


def model_numbers(loop: LoopSummary | None, facts: JobFacts) -> AdviceNumbers:
    """Every number the rules and the messages use, computed once."""
    workers = facts.num_workers if facts.num_workers is not None else ASSUMED_WORKERS
    # The CPUs the next run may have: this job's, or the node's share per GPU if that is larger.
    ceiling = facts.cpus
    if facts.gpus >= 1 and facts.cores_per_gpu:
        ceiling = max(facts.cpus, facts.cores_per_gpu)
    main_cpus = main_process_cpus(facts.gpus, facts.pin_memory)
    worker_cap = max(ceiling - main_cpus, 0)
    job = AdviceNumbers(
        loop_found=loop is not None, cpus=facts.cpus, gpus=facts.gpus, current_workers=workers,
        workers_known=facts.num_workers is not None, requested=facts.requested, cpu_ceiling=ceiling,
        main_cpus=main_cpus, worker_cap=worker_cap, pin_memory=facts.pin_memory,
        persistent_workers=facts.persistent_workers, compute_kind="GPU" if facts.gpus >= 1 else "CPU")
    if loop is None:
        return job
    wait, compute = loop.wait_per_batch, loop.compute_per_batch
    produce = wait if workers == 0 else workers * (wait + compute)
    above_threshold = loop.wait_fraction >= LOADER_BOUND
    within_handoff = workers >= 1 and 1e3 * wait <= HANDOFF_MS  # the wait no worker can remove
    loader_bound = above_threshold and not within_handoff
    if not loader_bound:
        raw = needed = workers
    elif compute > 0:
        raw = math.ceil(produce / compute - 1e-9)
        needed = max(math.ceil(HEADROOM * produce / compute - 1e-9), raw + 1)
    else:  # no compute time at all: nothing can keep up, so as many as the CPUs allow
        raw = needed = worker_cap
    chosen = min(needed, worker_cap)
    return AdviceNumbers(**{
        **asdict(job), "num_workers": chosen, "cpus_per_task": chosen + (main_cpus if chosen >= 1 else 1),
        "loader_bound": loader_bound, "handoff_only": above_threshold and within_handoff,
        "capped": raw > chosen, "spare_dropped": raw <= chosen < needed, "batches": loop.batches,
        "wait_ms": 1e3 * wait, "compute_ms": 1e3 * compute, "produce_ms": 1e3 * produce,
        "wait_pct": 100 * loop.wait_fraction, "raw_workers": raw, "needed_workers": needed,
        "loop_where": f"{loop.file}:{loop.header_line}"})


RULES: tuple[Rule, ...] = (
    Rule("no_loader_loop", "advice", lambda n: not n.loop_found,
         "No `for ... in <loader>` loop was found in the profiled functions, so there is no data wait to "
         "measure and no num_workers advice. If the loop is in a module of your own, name it: "
         "`run --module NAME` (or put @profile on the function that holds it)."),
    Rule("workers_unknown", "warning", lambda n: n.loop_found and not n.workers_known,
         "The profiled run's num_workers is not recorded; the advice assumes {current_workers}. "
         "Pass --num-workers N (the value the run used) for exact advice."),
    Rule("loader_bound", "advice", lambda n: n.loader_bound,
         "The loader is the bottleneck: the main process waited {wait_ms:.2f} ms per batch for data and "
         "computed for {compute_ms:.2f} ms, so {wait_pct:.0f}% of each step was spent waiting "
         "(line {loop_where}, {batches} batches)."),
    Rule("workers_from_main_process", "advice", lambda n: n.loader_bound and n.current_workers == 0,
         "With num_workers=0 the main process builds every batch itself: about {produce_ms:.2f} ms each. "
         "Workers building batches in parallel keep up when ceil({produce_ms:.2f} / {compute_ms:.2f}) = "
         "{raw_workers} run at once on average; with room for slow batches (twice the average) that is "
         "{needed_workers}."),
    Rule("workers_from_starved_loop", "advice", lambda n: n.loader_bound and n.current_workers > 0,
         "{current_workers} worker(s) delivered one batch per {wait_ms:.2f} + {compute_ms:.2f} ms, so one "
         "worker needs about {produce_ms:.2f} ms per batch. To deliver a batch every {compute_ms:.2f} ms "
         "takes ceil({produce_ms:.2f} / {compute_ms:.2f}) = {raw_workers} workers on average. Workers hand "
         "batches over in a fixed order, so one slow batch stalls the loop: size the pool at twice that, "
         "{needed_workers}."),
    Rule("capped_by_cpus", "advice", lambda n: n.loader_bound and n.capped,
         "Keeping up needs {raw_workers} workers on average, more than {cpu_ceiling} CPU(s) can run beside "
         "the main process, so num_workers is capped at {num_workers}. The loader will stay the bottleneck: "
         "make batches cheaper to build (simpler transforms, data already on the GPU) or plan for more "
         "CPUs with --cpus N."),
    Rule("no_room_for_spare", "advice", lambda n: n.loader_bound and n.spare_dropped,
         "Twice the average need does not fit in {cpu_ceiling} CPU(s) beside the main process, so num_workers "
         "is {num_workers}: enough on average, with less room for slow batches."),
    Rule("handoff_only", "advice", lambda n: n.handoff_only,
         "The {wait_ms:.2f} ms per batch still spent on the loader line is within the {handoff_ms} ms a main "
         "process needs to take a finished batch from its workers, which more workers do not remove."),
    Rule("compute_bound", "advice", lambda n: n.loop_found and not n.loader_bound,
         "The loader is not the bottleneck, {compute_kind} compute is: data wait is {wait_ms:.2f} ms "
         "per batch, {wait_pct:.1f}% of a step, so more workers will not help. "
         "To go faster, use larger batches, mixed precision and data kept on the GPU."),
    Rule("keep_workers", "advice", lambda n: n.loop_found and not n.loader_bound
         and n.num_workers == n.current_workers, "Keep num_workers={num_workers}."),
    Rule("fewer_workers", "advice", lambda n: n.loop_found and not n.loader_bound
         and n.num_workers is not None and n.num_workers < n.current_workers,
         "Use num_workers={num_workers} instead of {current_workers}: that is as many as {cpu_ceiling} CPU(s) "
         "run beside the main process, and the loader keeps up without more."),
    Rule("main_process_cpus", "advice",
         lambda n: n.loop_found and (n.num_workers or 0) >= 1 and n.main_cpus > 1,
         "--cpus-per-task={cpus_per_task} is num_workers={num_workers} plus {main_cpus} for the main process: "
         "on a GPU with pinned memory it runs the training loop and a pin-memory thread, and its CUDA waits "
         "spin on a core, so with only one CPU of its own it takes time from the workers."),
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
         and n.persistent_workers is not True,
         "Add persistent_workers=True to the DataLoader: otherwise the {num_workers} worker(s) are "
         "started again at every epoch, and the first batches of each epoch wait for them."),
    Rule("cpu_only", "warning", lambda n: n.loop_found and n.gpus == 0,
         "This run had no GPU: DataLoader workers compete with PyTorch's compute threads for the same "
         "{cpus} CPU(s), which the model ignores. Check the advice with `dlprof sweep`."),
    Rule("few_batches", "warning", lambda n: n.loop_found and (n.batches or 0) < FEW_BATCHES,
         "Only {batches} batches were profiled, so start-up (the first batch, starting workers) weighs "
         "heavily in these averages; profile a few hundred steps for firmer advice."),
)

# The lesson script's own flags for a rule's remedy, appended to its message. Kept apart from the
# generic messages, because `run` profiles any script and only mnist_classify.py has these flags.
LESSON_SCRIPT_HINTS: dict[str, str] = {
    "capped_by_cpus": "(mnist_classify.py: --gpu-resident keeps the data on the GPU.)",
    "compute_bound": "(mnist_classify.py: --batch-size, --amp, --gpu-resident.)",
    "pin_memory": "(mnist_classify.py: on by default with CUDA, off with --no-pin-memory.)",
    "persistent_workers": "(mnist_classify.py: --persistent-workers.)",
}


def script_edits(numbers: AdviceNumbers, facts: JobFacts) -> list[str]:
    """The edits in the training script's own terms: its worker flag when it has one, else its
    DataLoader's own line (`profiling.capture`); nothing the loader already does."""
    workers = numbers.num_workers or 0
    changed = numbers.num_workers != numbers.current_workers or not numbers.workers_known
    extras = ["persistent_workers=True"] if workers >= 1 and facts.persistent_workers is not True else []
    if workers >= 1 and facts.gpus >= 1 and facts.pin_memory is not True:
        extras.append("pin_memory=True")
    edits = [f"{facts.workers_flag} {workers}"] if facts.workers_flag else []
    if facts.kit_script:  # its own flags cover the rest (the notes' hints)
        return edits
    settings = ([f"num_workers={workers}"] if changed and not facts.workers_flag else []) + extras
    if settings:
        where = f"{facts.loader_at}  " if facts.loader_at else "the script's "
        edits.append(f"{where}DataLoader(..., {', '.join(settings)})")
    return edits


def advise(loop: LoopSummary | None, facts: JobFacts, rules: tuple[Rule, ...] = RULES) -> Advice:
    """Evaluate the rule table; return the advice, its reasons, warnings and notes, and the exact edits."""
    numbers = model_numbers(loop, facts)
    fired = [rule for rule in rules if rule.when(numbers)]
    edits: list[str] = []
    if numbers.num_workers is not None:
        edits = [f"#SBATCH --cpus-per-task={numbers.cpus_per_task}", *script_edits(numbers, facts)]

    def texts(level: Level) -> list[str]:
        return [rule.text(numbers, facts.kit_script) for rule in fired if rule.level == level]

    return Advice(num_workers=numbers.num_workers, cpus_per_task=numbers.cpus_per_task,
                  reasons=texts("advice"), warnings=texts("warning"), notes=texts("note"), edits=edits,
                  fired_rules=[rule.name for rule in fired], numbers=numbers)
