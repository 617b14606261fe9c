"""Property test: whatever the numbers, the advice's sentences agree with each other.

Generated over the typed record of the rules' numbers (`AdviceNumbers`), every combination, even
ones the model would not produce, and over real model outputs (`model_numbers` of any loop and job).
"""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from profiling.advice import RULES, model_numbers
from profiling.records import AdviceNumbers, CurvePoint, JobFacts, LoaderCurve, LoopSummary
from profiling.turns import LOADER_BOUND, STREAM

small = st.integers(min_value=0, max_value=40)
# 0, or at least a microsecond: a subnormal compute time overflows ceil(produce / compute) (left to the model)
ms = st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=500.0))
maybe = st.sampled_from([None, True, False])


@st.composite
def advice_numbers(draw) -> AdviceNumbers:
    cpus, main = draw(st.integers(1, 64)), draw(st.integers(1, 2))
    ceiling = cpus + draw(st.integers(0, 32))
    job = dict(loop_found=draw(st.booleans()), cpus=cpus, gpus=draw(st.integers(0, 8)),
               current_workers=draw(small), workers_known=draw(st.booleans()), requested=draw(st.booleans()),
               cpu_ceiling=ceiling, main_cpus=main, worker_cap=max(ceiling - main, 0), pin_memory=draw(maybe),
               persistent_workers=draw(maybe), compute_kind=draw(st.sampled_from(["GPU", "CPU"])))
    if not job["loop_found"]:
        return AdviceNumbers(**job)
    workers = draw(small)
    return AdviceNumbers(**job, num_workers=workers, cpus_per_task=workers + main, loader_bound=draw(st.booleans()),
                         handoff_only=draw(st.booleans()), capped=draw(st.booleans()),
                         spare_dropped=draw(st.booleans()), batches=draw(st.integers(1, 10_000)), wait_ms=draw(ms),
                         compute_ms=draw(ms), produce_ms=draw(ms), wait_pct=draw(st.floats(0, 100)),
                         raw_workers=draw(small), needed_workers=draw(small), loop_where="train.py:57")


def check(numbers: AdviceNumbers) -> None:
    fired = {rule.name: rule.text(numbers, kit_script=True) for rule in RULES if rule.when(numbers)}
    text = " ".join(fired.values())
    assert not ("stay the bottleneck" in text and "not the bottleneck" in text), text
    assert not ("The loader holds your loop back" in text and "not the bottleneck" in text), text
    assert not ("The loader holds your loop back" in text and "no_workers_needed" in fired), text
    if "compute_bound" in fired and numbers.workers_known:  # a loop that did not wait is never given more workers
        assert numbers.num_workers is None or numbers.num_workers <= numbers.current_workers or numbers.basis in (
            "estimate", "tried", "none") or not numbers.loop_found, numbers
    if numbers.basis == "tried":  # the measured path: the advice is a measured count, fewest within tolerance
        steps = numbers.tried
        assert numbers.num_workers in steps and "compute_bound" not in fired
        waited = "waited_untraced" in fired or "waited_own_best" in fired  # or kept: none was faster
        assert waited != ("step_needs_cpus" in fired)  # one reason, never both
        assert not ("waited_own_best" in fired and "waited_untraced" in fired), text  # "tried others", "keep it"
        assert "The loader holds your loop back" not in text  # then fewer workers, or none (unseen ab_3, ab_4)
        assert ("waited_own_best" in fired) <= (numbers.num_workers == numbers.current_workers)
        line = (1 + numbers.tolerance_pct / 100) * min(steps.values())  # within the stated tolerance of the fastest
        assert numbers.tolerance_pct == 5 and steps[numbers.num_workers] <= line  # the goal's own line, no wider
        assert all(steps[k] > line for k in steps if k < numbers.num_workers)
    if "capped_in_run" in fired or "capped_zero_untried" in fired:  # more CPUs: only where the most workers waited
        fewest_fast = numbers.tried[min(numbers.tried)] <= line  # where fewer workers were slower, 0 is not named
        assert ("capped_zero_untried" in fired) == (numbers.gpus == 0 and 0 not in numbers.tried and fewest_fast)
        assert numbers.loader_bound and max(numbers.tried) >= numbers.cpus - numbers.main_cpus
        assert numbers.tried_wait_pct >= 5
    if "capped_by_cpus" in fired or "no_room_for_spare" in fired:
        assert numbers.loader_bound
    if numbers.workers_known and numbers.current_workers > max(numbers.cpus - numbers.main_cpus, 0):
        assert "too_many_workers" in fired  # more workers than the CPUs run: always a warning
    if "keep_workers" in fired:
        assert numbers.num_workers == numbers.current_workers
    assert not ("keep_workers" in fired and "fewer_workers" in fired)
    assert "{" not in text
    briefs = [rule.brief(numbers) for rule in RULES if rule.when(numbers) and rule.level == "advice"]
    brief_text = " ".join(briefs)  # the terminal's "Why": short, plain and as consistent as the full text
    assert all(len(brief) <= 120 and "{" not in brief for brief in briefs if brief not in fired.values()), briefs
    assert not ("not the bottleneck" in brief_text and ("stays the bottleneck" in brief_text
                                                         or "No number of workers" in brief_text)), brief_text


@settings(max_examples=400, deadline=None)
@given(advice_numbers())
def test_any_numbers_give_sentences_that_agree(numbers):
    check(numbers)


@settings(max_examples=300, deadline=None)
@given(wait=ms, compute=ms, own=small, steps=st.dictionaries(small, st.floats(1e-4, 1.0), min_size=1, max_size=8),
       status=st.sampled_from(["tried", "compute-bound", "too short to try worker counts: x", STREAM]),
       untraced_wait=st.floats(0, 0.5), cpus=st.integers(1, 64),
       gpus=st.integers(0, 8), curve=st.booleans(), spread=st.floats(0, 0.5), squeezed=st.booleans(),
       traced=st.booleans())
def test_the_measured_path_gives_sentences_that_agree(wait, compute, own, steps, status, untraced_wait, cpus, gpus,
                                                      curve, spread, squeezed, traced):
    """Any trials record `run` may write (profiling.trials), with or without a fallback curve."""
    loop = LoopSummary("train.py", "train", 57, 100, wait * 0.1, compute * 0.1, 1)
    timed = {str(k): {"steps": 20, "seconds": 20 * t, "wait_seconds": 20 * min(untraced_wait, t),
                      "squares": 20 * t * t * (1 + spread)} for k, t in steps.items()}
    timed.setdefault(str(own), {"steps": 20, "seconds": 20 * 0.01, "wait_seconds": 20 * min(untraced_wait, 0.01)})
    trials = {"status": status, "own_workers": own, "traced_batches": 100, "settings": timed, "squeezed": squeezed,
              "untraced": {"steps": 50, "seconds": 0.5, "wait_seconds": 0.5 * min(untraced_wait, 0.01) / 0.01}}
    if traced:  # a record from before the traced part was kept has none
        trials["traced"] = {"steps": 100, "seconds": 100 * (wait + compute) / 1e3, "wait_seconds": 100 * wait / 1e3}
    points = tuple(CurvePoint(k, 100, 1.0, r) for k, r in ((0, 50.0), (1, 120.0), (4, 400.0), (8, 420.0)))
    loader_curve = LoaderCurve(points, cpus, 64, True, hold_ms=2.0) if curve else None
    numbers = model_numbers(loop, JobFacts(cpus=cpus, gpus=gpus, num_workers=own), loader_curve, trials=trials)
    check(numbers)
    assert (numbers.basis == "tried") == (status == "tried")
    assert bool(numbers.fallback) == (status not in ("tried", "compute-bound"))
    if numbers.basis == "tried":  # the counts were tried because the loader held the loop back, or the step needs CPUs
        assert numbers.loader_bound != bool(numbers.step_needs_cpus)
        # more CPUs asked for only where the most workers tried were within the line: not where 0 ran faster (n_5)
        assert not numbers.capped or numbers.tried[max(numbers.tried)] <= 1.05 * min(numbers.tried.values()), numbers


@settings(max_examples=300, deadline=None)
@given(wait=ms, compute=ms, batches=st.integers(1, 5000), workers=st.one_of(st.none(), small),
       cpus=st.integers(1, 64), gpus=st.integers(0, 8), cores=st.one_of(st.none(), st.integers(1, 64)),
       pin=maybe, persistent=maybe, found=st.booleans())
def test_the_model_gives_sentences_that_agree(wait, compute, batches, workers, cpus, gpus, cores, pin, persistent,
                                              found):
    loop = LoopSummary("train.py", "train", 57, batches, wait * batches / 1e3, compute * batches / 1e3, 1)
    facts = JobFacts(cpus=cpus, gpus=gpus, num_workers=workers, cores_per_gpu=cores, pin_memory=pin,
                     persistent_workers=persistent)
    numbers = model_numbers(loop if found else None, facts)
    check(numbers)
    for rule in RULES:  # a wait under the 5 % line never reads 5.0 % beside "not the bottleneck" (a hand-over's may)
        if rule.when(numbers) and not numbers.handoff_only and "not the bottleneck" in rule.text(numbers):
            shown = re.findall(r"(\d+\.?\d*)% of (?:a|each) step", rule.text(numbers) + " " + rule.brief(numbers))
            assert shown and all(float(p) < 100 * LOADER_BOUND for p in shown), (rule.name, shown, numbers.wait_pct)
