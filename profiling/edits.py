"""The exact edits of the advice, in the script's own terms: its worker option, the line that sets the count (a
config's, a dataclass's, a call's keyword), else its DataLoader's line; never a setting it already has.

Pure: read from `JobFacts` (what `profiling.precheck` found in the source) and the advice's numbers.
"""
from __future__ import annotations

from profiling.records import AdviceNumbers, JobFacts


def script_edits(numbers: AdviceNumbers, facts: JobFacts) -> list[str]:
    """The edits in the script's own terms: its worker flag, else its DataLoader's line; nothing it does already."""
    workers = numbers.num_workers or 0
    changed = numbers.num_workers != numbers.current_workers or not numbers.workers_known or facts.by_cpu_count
    elsewhere = facts.workers_flag or facts.workers_set_at or facts.workers_from_slurm  # set there, not on the line
    kept = facts.workers_given if (elsewhere or not changed) and not facts.by_cpu_count else None
    # a count the user sets elsewhere (a flag, a config, a global: unseen k_5, k_6) may be set to 0 later, which
    # persistent_workers=True would make an error
    extras = [f"persistent_workers={kept} > 0" if kept else "persistent_workers=True"] \
        if workers >= 1 and facts.persistent_workers is None and numbers.basis != "stream" else []
    extras += ["pin_memory=True"] if workers >= 1 and facts.gpus >= 1 and facts.pin_memory is not True else []
    edits = [f"{facts.workers_flag}{' ' * (facts.workers_flag[-1] != '=')}{workers}"] if facts.workers_flag else []
    edits += [facts.workers_set_at.replace("{n}", str(workers))] if facts.workers_set_at and changed else []
    if facts.kit_script:  # its own flags cover the rest (the notes' hints)
        return edits
    settings = ([f"num_workers={workers}"] if changed and not elsewhere else []) + extras
    where, by = f"{facts.loader_at}  " if facts.loader_at else "the script's ", facts.loader_built_by
    if settings and by == "transformers":  # Hugging Face's Trainer builds it from TrainingArguments' dataloader_*
        edits.append(f"{where}the Trainer's TrainingArguments(..., {', '.join('dataloader_' + s for s in settings)})")
    elif settings and by:  # another framework's own DataLoader: set it through that framework
        edits.append(f"{where}{by} builds the DataLoader from this line: give it {', '.join(settings)} where {by} "
                     "takes its DataLoader options")
    elif settings and facts.loader_kwargs:  # `**train_kwargs` holding num_workers: a keyword beside it would clash
        edits.append(f"{where}before this line: {facts.loader_kwargs}.update({', '.join(settings)})")
    elif settings:
        edits.append(f"{where}{facts.loader_call}(..., {', '.join(settings)})")
    return edits
