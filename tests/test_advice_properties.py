"""Property test: whatever the numbers, the advice's sentences agree with each other.

Generated over the typed record of the rules' numbers (`AdviceNumbers`), every combination, even
ones the model would not produce, and over real model outputs (`model_numbers` of any loop and job).
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from profiling.advice import RULES, model_numbers
from profiling.records import AdviceNumbers, JobFacts, LoopSummary

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
    assert not ("The loader is the bottleneck" in text and "not the bottleneck" in text), text
    if "capped_by_cpus" in fired or "no_room_for_spare" in fired:
        assert numbers.loader_bound
    if numbers.workers_known and numbers.current_workers > max(numbers.cpus - numbers.main_cpus, 0):
        assert "too_many_workers" in fired  # more workers than the CPUs run: always a warning
    if "keep_workers" in fired:
        assert numbers.num_workers == numbers.current_workers
    assert not ("keep_workers" in fired and "fewer_workers" in fired)
    assert "{" not in text


@settings(max_examples=400, deadline=None)
@given(advice_numbers())
def test_any_numbers_give_sentences_that_agree(numbers):
    check(numbers)


@settings(max_examples=300, deadline=None)
@given(wait=ms, compute=ms, batches=st.integers(1, 5000), workers=st.one_of(st.none(), small),
       cpus=st.integers(1, 64), gpus=st.integers(0, 8), cores=st.one_of(st.none(), st.integers(1, 64)),
       pin=maybe, persistent=maybe, found=st.booleans())
def test_the_model_gives_sentences_that_agree(wait, compute, batches, workers, cpus, gpus, cores, pin, persistent,
                                              found):
    loop = LoopSummary("train.py", "train", 57, batches, wait * batches / 1e3, compute * batches / 1e3, 1)
    facts = JobFacts(cpus=cpus, gpus=gpus, num_workers=workers, cores_per_gpu=cores, pin_memory=pin,
                     persistent_workers=persistent)
    check(model_numbers(loop if found else None, facts))
