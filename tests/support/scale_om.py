"""A fleet of controller-runtime queues with loads that change, as OpenMetrics text.

Queues ``q<lo>`` … ``q<hi-1>``, each in its own process (``job``/``instance`` of its own),
2 h of samples at 15 s from :data:`START`: the 39 series per queue that queuelens reads
(``workqueue_depth``, adds, retries, the queue/work duration histograms with client-go's 10
decade buckets + ``+Inf``, ``_sum``, ``_count``, unfinished work, longest running,
``controller_runtime_reconcile_total`` by result, reconcile errors,
``max_concurrent_reconciles`` and two ``rest_client_requests_total`` codes). The load is a
sine per queue (a 1 h period, a random phase from ``seed``), so a rate depends on where its
window lies: what the scale benchmark reads (``benchmarks/bench_scale.py``, in chunks of
queues) and what the recording-rule tests compare recorded and raw reads on."""

from __future__ import annotations

import math

import numpy as np

START = 1_704_067_200  # 2024-01-01T00:00:00Z, on a 2 h block boundary
DURATION_S = 7200
STEP_S = 15
BOUNDS = [1e-8 * 10**k for k in range(10)]  # client-go ExponentialBuckets(10e-9, 10, 10)


def fleet_text(lo: int, hi: int, seed: int = 0) -> str:
    """OpenMetrics text of queues [lo, hi): families contiguous, timestamps ascending."""
    rng = np.random.default_rng([seed, lo])
    n = hi - lo
    times = START + STEP_S * np.arange(DURATION_S // STEP_S)
    stamps = [str(int(t)) for t in times]
    tau = (times - START)[None, :]
    workers = rng.integers(1, 9, n)
    service = rng.uniform(0.01, 0.5, n)
    rho = rng.uniform(0.2, 0.95, n)
    lam = rho * workers / service
    phase = rng.uniform(0, 2 * math.pi, n)
    # Load over the day: λ(t) = λ (1 + 0.4 sin(2πt/1 h + φ)); counters are its integral.
    w = 2 * math.pi / 3600.0
    adds = lam[:, None] * (tau + 0.4 / w * (np.cos(phase[:, None]) - np.cos(w * tau
                                                                              + phase[:, None])))
    done = adds * 0.999
    wait_mean = service * rho / (1 - np.minimum(rho, 0.97)) / workers
    names = [f"q{i:05d}" for i in range(lo, hi)]
    heads = [f'name="{q}",controller="{q}",job="ctl-{q}",instance="10.0.{i // 250}.{i % 250}:8080"'
             for i, q in zip(range(lo, hi), names, strict=True)]
    crh = [f'controller="{q}",job="ctl-{q}",instance="10.0.{i // 250}.{i % 250}:8080"'
           for i, q in zip(range(lo, hi), names, strict=True)]
    out: list[str] = []

    def family(name: str, typ: str) -> None:
        out.append(f"# TYPE {name} {typ}")

    def series(sample: str, labels: str, values: np.ndarray, integer: bool = True) -> None:
        vals = np.floor(values).astype(np.int64).tolist() if integer else \
            np.round(values, 3).tolist()
        head = f"{sample}{{{labels}}} "
        out.append("\n".join([f"{head}{v} {ts}" for v, ts in zip(vals, stamps, strict=True)]))

    family("workqueue_depth", "gauge")
    for i in range(n):
        series("workqueue_depth", heads[i] + ',priority="0"',
               np.maximum(0, lam[i] * wait_mean[i] * (1 + 0.4 * np.sin(w * tau[0] + phase[i]))))
    family("workqueue_adds", "counter")
    for i in range(n):
        series("workqueue_adds_total", heads[i], adds[i])
    family("workqueue_retries", "counter")
    for i in range(n):
        series("workqueue_retries_total", heads[i], adds[i] * 0.02)
    for fam, mean in (("workqueue_queue_duration_seconds", wait_mean),
                      ("workqueue_work_duration_seconds", service)):
        family(fam, "histogram")
        for i in range(n):
            # exponential durations: share below a bound b is 1 − exp(−b / mean)
            for b in BOUNDS:
                series(fam + "_bucket", heads[i] + f',le="{b:.0e}"',
                       done[i] * (1 - math.exp(-b / mean[i])))
            series(fam + "_bucket", heads[i] + ',le="+Inf"', done[i])
            series(fam + "_sum", heads[i], done[i] * mean[i], integer=False)
            series(fam + "_count", heads[i], done[i])
    family("workqueue_unfinished_work_seconds", "gauge")
    for i in range(n):
        series("workqueue_unfinished_work_seconds", heads[i], np.zeros(len(stamps)),
               integer=False)
    family("workqueue_longest_running_processor_seconds", "gauge")
    for i in range(n):
        series("workqueue_longest_running_processor_seconds", heads[i],
               np.full(len(stamps), service[i]), integer=False)
    family("controller_runtime_reconcile", "counter")
    for i in range(n):
        for result, share in (("success", 0.97), ("error", 0.02), ("requeue", 0.0),
                              ("requeue_after", 0.01)):
            series("controller_runtime_reconcile_total", crh[i] + f',result="{result}"',
                   done[i] * share)
    family("controller_runtime_reconcile_errors", "counter")
    for i in range(n):
        series("controller_runtime_reconcile_errors_total", crh[i], done[i] * 0.02)
    family("controller_runtime_max_concurrent_reconciles", "gauge")
    for i in range(n):
        series("controller_runtime_max_concurrent_reconciles", crh[i],
               np.full(len(stamps), workers[i]))
    family("rest_client_requests", "counter")
    for i in range(n):
        proc = heads[i].split(",", 2)[2]
        series("rest_client_requests_total", proc + ',code="200",method="GET"', done[i] * 2)
        series("rest_client_requests_total", proc + ',code="409",method="PUT"', done[i] * 0.01)
    out.append("# EOF")
    return "\n".join(out) + "\n"
