"""advise_many (the fleet advisor with its queueing figures computed in a few vectorized calls)
against advise called queue by queue: same verdicts, same numbers, same errors."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from collectors.demo import DemoSource
from dashboard.advice import histories_from_range, process_key, process_totals
from dashboard.cliutil import jsonable
from models import fleet as fl
from models.advisor import (
    AdviceRequest,
    AdvisorThresholds,
    ProcessTotals,
    QueueHistory,
    Verdict,
    advise,
    advise_many,
)
from models.errors import ModelInputError
from models.measurements import QueueSnapshot

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600


def as_json(verdicts: tuple[Verdict, ...]) -> str:
    """Every field of every verdict, exact floats (repr round-trips), in a comparable form."""
    return json.dumps(jsonable(list(verdicts)), sort_keys=True)


def synthetic_requests(n: int, seed: int) -> list[AdviceRequest]:
    """Queues spread over every rule: idle, light, busy and overloaded loads, failures,
    requeues, API throttling and conflicts, stuck passes, missing fields, key counts, process
    totals, short and long histories with gaps."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        c = int(rng.choice([1, 2, 4, 8, 50, 300]))
        svc = float(10 ** rng.uniform(-3, 0.5))
        rho = float(rng.choice([0.05, 0.2, 0.6, 0.85, 0.97, 1.3])) * float(rng.uniform(0.9, 1.1))
        lam = 0.0 if i % 17 == 0 else rho * c / svc
        busy = min(lam * svc, c)

        def maybe(v: float, p: float = 0.08) -> float | None:
            return None if rng.random() < p else v

        calls = float(rng.choice([0.0, 10.0])) * max(lam, 0.1)
        q = QueueSnapshot(
            queue=f"q{i}",
            arrival_rate_per_s=maybe(lam, 0.03), throughput_per_s=maybe(min(lam, c / svc)),
            service_mean_s=maybe(svc, 0.03), busy_workers=maybe(busy),
            workers=maybe(float(c), 0.03), depth_mean=maybe(float(rng.exponential(3))),
            depth_current=maybe(float(rng.exponential(3))),
            queue_wait_mean_s=maybe(float(rng.exponential(0.5))),
            queue_wait_p95_s=maybe(float(rng.exponential(2))),
            work_p50_s=maybe(svc * 0.7), work_p99_s=maybe(svc * float(rng.choice([4, 30]))),
            retries_per_s=maybe(lam * float(rng.choice([0.0, 0.6]))),
            errors_per_s=maybe(lam * float(rng.choice([0.0, 0.7]))),
            reconcile_results_per_s={} if i % 2 else {
                "success": lam * 0.5, "requeue_after": lam * float(rng.choice([0.0, 0.6]))},
            api_calls_per_s=maybe(calls),
            api_calls_by_class_per_s={"409": calls * float(rng.choice([0.0, 0.1])),
                                      "429": calls * float(rng.choice([0.0, 0.05]))},
            throttle_s_per_s=maybe(float(rng.choice([0.0, 0.5]))),
            unfinished_work_growth=maybe(float(rng.choice([0.0, 1.0]))),
            longest_running_s=maybe(float(rng.choice([0.5, 1000.0]))),
        )
        history = None
        if i % 3:
            t = np.arange(int(rng.choice([4, 8, 25]))) * 30.0
            # busy workers within a factor < 2: no USL fit (slow, and not what is tested here)
            nb = np.clip(busy * rng.uniform(0.7, 1.3, t.size), 0.01, None)
            arrivals = lam * rng.uniform(0.5, 1.5, t.size)
            if i % 5 == 0:
                arrivals[rng.random(t.size) < 0.3] = np.nan  # gaps: fewer usable points
            history = QueueHistory.from_columns(
                t, arrival_rate_per_s=arrivals, busy_workers=nb,
                throughput_per_s=nb / svc, service_mean_s=np.full(t.size, svc),
                longest_running_s=np.cumsum(rng.uniform(0, 60, t.size)))
        keys = int(rng.choice([3, 40])) if i % 7 == 0 else None
        process = ProcessTotals(lam * 3, busy * 2, lam * 3, 3) if i % 4 == 0 else None
        out.append(AdviceRequest(q, history, keys=keys, process=process))
    return out


def one_by_one(requests: list[AdviceRequest], **options: Any) -> list[tuple[Verdict, ...]]:
    return [advise(r.signals, r.history, keys=r.keys, process=r.process, **options)
            for r in requests]


@pytest.mark.parametrize("options", [
    {"slo_wait_s": 1.0},
    {"slo_wait_s": 0.05, "client_qps": 50.0,
     "thresholds": AdvisorThresholds(util_high=0.6, util_target=0.5, min_workers=1,
                                     slo_quantile=0.99)},
])
def test_same_verdicts_as_advise_on_varied_queues(options: dict[str, Any]) -> None:
    requests = synthetic_requests(90, seed=7)
    batch = advise_many(requests, **options)
    single = one_by_one(requests, **options)
    assert [as_json(v) for v in batch] == [as_json(v) for v in single]
    kinds = {v.kind for vs in single for v in vs}
    # The capacity rules that use the batched queueing figures were all reached.
    assert {"add_workers", "backlog_growing", "hot_key", "insufficient_data"} <= kinds


def test_same_verdicts_as_advise_on_the_demo_fleet() -> None:
    src = DemoSource(seed=0, queues=120)
    snap = src.snapshot(AT, 300.0)
    histories = histories_from_range(src.range(AT - 3600, AT, 150.0, None))
    totals = process_totals(snap.queues)
    requests = []
    for q in snap.queues:
        pk = process_key(q)
        requests.append(AdviceRequest(q, histories.get(q.queue),
                                      process=totals.get(pk) if pk is not None else None))
    batch = advise_many(requests, slo_wait_s=1.0)
    single = one_by_one(requests, slo_wait_s=1.0)
    assert [as_json(v) for v in batch] == [as_json(v) for v in single]
    kinds = {v.kind for vs in single for v in vs}
    assert {"add_workers", "over_provisioned", "hot_key"} <= kinds


def test_one_queues_bad_figures_are_that_queues_alone() -> None:
    """Issue 23 item 13: a negative arrival rate (or figures the models cannot compute with)
    of one queue once stopped the whole batch with an error naming no queue; now that queue
    is flagged by name and the others get the verdicts they get alone. A wrong option of the
    caller (a key count of 0) is still the caller's error."""
    good = AdviceRequest(QueueSnapshot(queue="ok", arrival_rate_per_s=1.0, service_mean_s=0.1,
                                       workers=2.0))
    negative = AdviceRequest(QueueSnapshot(queue="neg", arrival_rate_per_s=-1.0))
    bad_keys = AdviceRequest(QueueSnapshot(queue="k"), keys=0)
    alone = advise(good.signals)
    (neg,) = advise(negative.signals)
    assert neg.kind == "insufficient_data"
    assert "arrival_rate_per_s is -1" in neg.summary
    batch = advise_many([good, negative])
    assert as_json(batch[0]) == as_json(alone)
    assert as_json(batch[1]) == as_json((neg,))
    with pytest.raises(ModelInputError, match="key count"):
        advise_many([good, bad_keys, negative])
    # Absurd but finite figures: advise (one queue) fails; the batch flags that queue alone.
    for lam, svc in ((1e308, 10.0), (5.0, 1e-310)):
        odd = QueueSnapshot(queue="odd", arrival_rate_per_s=lam, service_mean_s=svc,
                            workers=2.0, depth_mean=1.0, queue_wait_mean_s=1.0)
        with pytest.raises((ModelInputError, OverflowError)) as one:
            advise(odd)
        good_out, odd_out = advise_many([good, AdviceRequest(odd)])
        assert as_json(good_out) == as_json(alone)
        assert [v.kind for v in odd_out] == ["insufficient_data"]
        assert str(one.value).rstrip(".") in odd_out[0].summary
    with pytest.raises(ModelInputError, match="SLO"):
        advise_many([good], slo_wait_s=0.0)
    assert advise_many([]) == []
