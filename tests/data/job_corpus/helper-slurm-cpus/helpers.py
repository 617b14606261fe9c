"""Small utilities shared by the segmentation scripts (written for this corpus)."""
import os


def cpus_for_loader():
    """Use every CPU Slurm gave the task; on a laptop, the machine's."""
    try:
        return int(os.environ["SLURM_CPUS_PER_TASK"])
    except KeyError:
        return os.cpu_count()


def seed_everything(seed):
    import random

    random.seed(seed)
