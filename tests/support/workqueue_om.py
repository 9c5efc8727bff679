"""Deterministic work-queue metrics as OpenMetrics text, with known ground truth.

Every counter grows linearly (per 15 s sample), so ``rate()`` over any window inside the data
is exact; histogram buckets grow with fixed shares, so quantiles have closed forms. The main
scenario (:func:`main_scenario`) contains:

* ``deployment``   healthy; depth split over two ``priority`` values (3 + 2);
* ``replicaset``   saturated: adds 20/s, completes 16/s, depth grows 4/s, 2 stuck workers;
* ``endpoints``    a counter reset (pod restart) at +3600 s and a scrape gap [+5400, +5700) s;
* ``cfg"map\\sync`` a component-base queue (only ``{name}``, 10 s top bucket, no
  ``controller_runtime_*`` series, hence no max_concurrent_reconciles) whose name holds a
  double quote and a backslash; 6 % of its waits exceed the top bucket;
* ``node.lease`` / ``nodeXlease``: names that an unescaped regex ``node.lease`` would mix up;
* ``rest_client_requests_total`` per job/instance with 2xx/409/429/5xx (and 404) codes and a
  client-side rate-limiter histogram for the component-base process only.

``le`` labels are built like Go's ``ExponentialBuckets(10e-9, 10, n)`` by repeated float
multiplication, so they include ``9.999999999999999e-06``.

The expected values in :data:`TRUTH` are written out as closed-form arithmetic from the scenario
description, not computed by queuelens code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

START = 1704067200  # 2024-01-01T00:00:00Z, a multiple of 7200 (one backfill block)
DURATION_S = 7200
STEP_S = 15
WINDOW_S = 300.0
AT = START + 3000  # everything steady
AT_RESET = START + 3600 + 150  # the 5 m window straddles the endpoints counter reset
AT_GAP = START + 5400 + 240  # inside the endpoints scrape gap
AT_AFTER_GAP = START + 5700 + 330  # window entirely after the gap
RESET_OFFSET = 3600
GAP = (5400, 5700)

WEIRD = 'cfg"map\\sync'
JOB_A, INSTANCE_A = "controller-a", "10.0.0.1:8080"
JOB_K, INSTANCE_K = "kube-controller-manager", "10.0.0.2:10257"


def go_exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    out = [start]
    for _ in range(count - 1):
        out.append(out[-1] * factor)
    return out


def go_float(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 64) for the values used here."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


CR_BUCKETS = go_exponential_buckets(10e-9, 10, 12)  # controller-runtime >= 0.17: 1e-8 .. 1000 s
CB_BUCKETS = go_exponential_buckets(10e-9, 10, 10)  # component-base: 1e-8 .. 10 s
INF = -1  # key for the share of observations above the top finite bucket


@dataclass(frozen=True)
class QueueSpec:
    name: str
    adds: float
    done: float
    work_mean: float
    wait_mean: float
    work_shares: dict[int, float]
    """bucket index -> share of observations in (bucket[i-1], bucket[i]]; INF for > top."""
    wait_shares: dict[int, float]
    depth: dict[str, float] = field(default_factory=dict)
    """priority -> constant depth ('' for component-base: no priority label)."""
    depth_growth: float = 0.0
    retries: float = 0.0
    results: dict[str, float] = field(default_factory=dict)
    errors: float = 0.0
    workers: int | None = None
    controller_runtime: bool = True
    unfinished: float = 0.0
    unfinished_slope: float = 0.0
    longest_cycle: tuple[float, ...] = (0.0,)
    longest_grows: bool = False
    job: str = JOB_A
    instance: str = INSTANCE_A
    reset: bool = False
    gap: bool = False
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProcessSpec:
    job: str | None
    instance: str | None
    requests: tuple[tuple[str, str, float], ...]
    """(code, method, rate)"""
    throttle_s_per_s: float | None = None
    extra: dict[str, str] = field(default_factory=dict)


def main_scenario() -> tuple[list[QueueSpec], list[ProcessSpec]]:
    queues = [
        QueueSpec("deployment", adds=5, done=5, work_mean=0.2, wait_mean=1.0,
                  work_shares={7: 0.5, 8: 0.5}, wait_shares={8: 0.6, 9: 0.4},
                  depth={"0": 3, "-100": 2}, retries=0.5,
                  results={"success": 4, "error": 0.25, "requeue": 0, "requeue_after": 0.75},
                  errors=0.25, workers=4, unfinished=0.5, longest_cycle=(0.3, 0.4, 0.5, 0.6)),
        QueueSpec("replicaset", adds=20, done=16, work_mean=0.5, wait_mean=30.0,
                  work_shares={7: 0.2, 8: 0.8}, wait_shares={9: 0.5, 10: 0.5},
                  depth={"0": 0}, depth_growth=4.0,
                  results={"success": 16, "error": 0, "requeue": 0, "requeue_after": 0},
                  workers=8, unfinished_slope=2.0, longest_grows=True),
        QueueSpec("endpoints", adds=2, done=2, work_mean=0.25, wait_mean=0.05,
                  work_shares={6: 0.5, 7: 0.5}, wait_shares={6: 0.5, 7: 0.5},
                  depth={"0": 1}, retries=0.5,
                  results={"success": 1.5, "error": 0.5, "requeue": 0, "requeue_after": 0},
                  errors=0.5, workers=2, reset=True, gap=True),
        QueueSpec(WEIRD, adds=1, done=1, work_mean=0.05, wait_mean=2.0,
                  work_shares={5: 0.5, 6: 0.5}, wait_shares={8: 0.9, 9: 0.04, INF: 0.06},
                  depth={"": 2}, retries=0.1, controller_runtime=False,
                  job=JOB_K, instance=INSTANCE_K),
        QueueSpec("node.lease", adds=3, done=3, work_mean=0.005, wait_mean=0.004,
                  work_shares={6: 1.0}, wait_shares={6: 1.0}, depth={"0": 0},
                  results={"success": 3, "error": 0, "requeue": 0, "requeue_after": 0},
                  workers=1),
        QueueSpec("nodeXlease", adds=7, done=7, work_mean=0.005, wait_mean=0.004,
                  work_shares={6: 1.0}, wait_shares={6: 1.0}, depth={"0": 0},
                  results={"success": 7, "error": 0, "requeue": 0, "requeue_after": 0},
                  workers=1),
    ]
    processes = [
        ProcessSpec(JOB_A, INSTANCE_A, (("200", "GET", 10.0), ("201", "POST", 2.0),
                                        ("409", "PUT", 0.5), ("429", "GET", 1.0),
                                        ("500", "GET", 0.2))),
        ProcessSpec(JOB_K, INSTANCE_K, (("200", "GET", 4.0), ("404", "GET", 0.5)),
                    throttle_s_per_s=0.3),
    ]
    return queues, processes


def scale_scenario(
    n_small: int = 3, n_large: int = 30
) -> tuple[list[QueueSpec], list[ProcessSpec]]:
    """Two fleets told apart by a ``fleet`` label; no job/instance labels anywhere (like
    backfilled data), so API calls are process-wide."""
    queues = []
    for fleet, n in (("small", n_small), ("large", n_large)):
        for i in range(n):
            queues.append(QueueSpec(
                f"{fleet}-q{i:02d}", adds=1 + i, done=1 + i, work_mean=0.1, wait_mean=0.2,
                work_shares={7: 1.0}, wait_shares={8: 1.0}, depth={"0": i},
                results={"success": 1 + i, "error": 0, "requeue": 0, "requeue_after": 0},
                workers=2, job="", instance="", extra={"fleet": fleet}))
    processes = [ProcessSpec(None, None, (("200", "GET", 5.0),), extra={"fleet": f})
                 for f in ("small", "large")]
    return queues, processes


# --- rendering ----------------------------------------------------------------------------


def _esc(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**kv: str) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in kv.items()) + "}"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(round(v, 9))


def generate(queues: list[QueueSpec], processes: list[ProcessSpec], *, start: int = START,
             duration_s: int = DURATION_S, step_s: int = STEP_S) -> str:
    """OpenMetrics text for promtool (seconds timestamps, ascending, ``# EOF`` last)."""
    times = [start + i * step_s for i in range(duration_s // step_s)]

    def elapsed(q: QueueSpec, t: int) -> float:
        e = t - start
        if q.reset and e >= RESET_OFFSET:
            # the process restarted right after the previous scrape: counters restart from 0
            return e - RESET_OFFSET + step_s
        return float(e)

    def present(q: QueueSpec, t: int) -> bool:
        return not (q.gap and GAP[0] <= t - start < GAP[1])

    def base(q: QueueSpec, controller: bool = True) -> dict[str, str]:
        out = {"name": q.name}
        if q.controller_runtime and controller:
            out["controller"] = q.name
        if q.job:
            out["job"] = q.job
        if q.instance:
            out["instance"] = q.instance
        return {**out, **q.extra}

    def cr_base(q: QueueSpec) -> dict[str, str]:
        out = {"controller": q.name}
        if q.job:
            out["job"] = q.job
        if q.instance:
            out["instance"] = q.instance
        return {**out, **q.extra}

    lines: list[str] = []
    Series = tuple[str, str, QueueSpec | None, Callable[[int], float]]

    def family(name: str, typ: str, series: list[Series]) -> None:
        lines.append(f"# TYPE {name} {typ}")
        for sample, labels, q, fn in series:
            for t in times:
                if q is None or present(q, t):
                    lines.append(f"{sample}{labels} {_num(fn(t))} {t}")

    def depth_fn(q: QueueSpec, v: float, grows: bool) -> Callable[[int], float]:
        return lambda t: v + (q.depth_growth * (t - start) if grows else 0.0)

    family("workqueue_depth", "gauge", [
        ("workqueue_depth", _labels(**base(q), **({"priority": p} if q.controller_runtime else {})),
         q, depth_fn(q, v, i == 0))
        for q in queues for i, (p, v) in enumerate(q.depth.items())])
    family("workqueue_adds", "counter", [
        ("workqueue_adds_total", _labels(**base(q)), q, lambda t, q=q: q.adds * elapsed(q, t))
        for q in queues])
    family("workqueue_retries", "counter", [
        ("workqueue_retries_total", _labels(**base(q)), q,
         lambda t, q=q: q.retries * elapsed(q, t)) for q in queues])
    for hist, fam in (("wait", "workqueue_queue_duration_seconds"),
                      ("work", "workqueue_work_duration_seconds")):
        series: list[Series] = []
        for q in queues:
            bounds = CR_BUCKETS if q.controller_runtime else CB_BUCKETS
            shares = q.wait_shares if hist == "wait" else q.work_shares
            mean = q.wait_mean if hist == "wait" else q.work_mean
            for idx, bound in enumerate([*bounds, float("inf")]):
                le = "+Inf" if idx == len(bounds) else go_float(bound)
                cum = sum(s for i, s in shares.items() if i != INF and i <= idx) + (
                    shares.get(INF, 0.0) if idx == len(bounds) else 0.0)
                series.append((fam + "_bucket", _labels(**base(q), le=le), q,
                               lambda t, q=q, c=cum: q.done * c * elapsed(q, t)))
            series.append((fam + "_sum", _labels(**base(q)), q,
                           lambda t, q=q, m=mean: q.done * m * elapsed(q, t)))
            series.append((fam + "_count", _labels(**base(q)), q,
                           lambda t, q=q: q.done * elapsed(q, t)))
        family(fam, "histogram", series)
    family("workqueue_unfinished_work_seconds", "gauge", [
        ("workqueue_unfinished_work_seconds", _labels(**base(q)), q,
         lambda t, q=q: q.unfinished + q.unfinished_slope * (t - start)) for q in queues])
    family("workqueue_longest_running_processor_seconds", "gauge", [
        ("workqueue_longest_running_processor_seconds", _labels(**base(q)), q,
         lambda t, q=q: float(t - start) if q.longest_grows else
         q.longest_cycle[((t - start) // step_s) % len(q.longest_cycle)]) for q in queues])

    cr = [q for q in queues if q.controller_runtime]
    family("controller_runtime_reconcile", "counter", [
        ("controller_runtime_reconcile_total", _labels(**cr_base(q), result=r), q,
         lambda t, q=q, v=v: v * elapsed(q, t)) for q in cr for r, v in q.results.items()])
    family("controller_runtime_reconcile_errors", "counter", [
        ("controller_runtime_reconcile_errors_total", _labels(**cr_base(q)), q,
         lambda t, q=q: q.errors * elapsed(q, t)) for q in cr])
    family("controller_runtime_max_concurrent_reconciles", "gauge", [
        ("controller_runtime_max_concurrent_reconciles", _labels(**cr_base(q)), q,
         lambda t, w=q.workers: float(w)) for q in cr if q.workers is not None])
    family("controller_runtime_active_workers", "gauge", [
        ("controller_runtime_active_workers", _labels(**cr_base(q)), q,
         lambda t, q=q: min(float(q.workers or 0), round(q.done * q.work_mean)))
        for q in cr if q.workers is not None])

    def plabels(p: ProcessSpec, **kv: str) -> str:
        base_kv = {k: v for k, v in (("job", p.job), ("instance", p.instance)) if v}
        return _labels(**base_kv, **p.extra, **kv)

    family("rest_client_requests", "counter", [
        ("rest_client_requests_total", plabels(p, code=c, host="10.96.0.1:443", method=m), None,
         lambda t, r=r: r * (t - start)) for p in processes for c, m, r in p.requests])
    throttled = [p for p in processes if p.throttle_s_per_s is not None]
    if throttled:
        series = []
        for p in throttled:
            rate = float(p.throttle_s_per_s or 0.0)
            for le in ("0.005", "0.025", "+Inf"):
                series.append(("rest_client_rate_limiter_duration_seconds_bucket",
                               plabels(p, verb="GET", le=le), None,
                               lambda t, le=le: (0 if le == "0.005" else 20) * (t - start)))
            series.append(("rest_client_rate_limiter_duration_seconds_sum",
                           plabels(p, verb="GET"), None, lambda t, r=rate: r * (t - start)))
            series.append(("rest_client_rate_limiter_duration_seconds_count",
                           plabels(p, verb="GET"), None, lambda t: 20 * (t - start)))
        family("rest_client_rate_limiter_duration_seconds", "histogram", series)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def main_text() -> str:
    return generate(*main_scenario())


def scale_text() -> str:
    return generate(*scale_scenario(), duration_s=3600)


# --- ground truth (closed forms from the scenario description above) ----------------------

def _interp(lo: float, hi: float, rank: float, below: float, inside: float) -> float:
    """Linear interpolation inside a bucket (lo, hi]: the histogram_quantile rule."""
    return lo + (hi - lo) * (rank - below) / inside


TRUTH: dict[str, dict[str, float | None]] = {
    "deployment": {
        "arrival_rate_per_s": 5.0, "throughput_per_s": 5.0, "busy_workers": 5 * 0.2,
        "service_mean_s": 0.2, "workers": 4.0, "utilization": 5 * 0.2 / 4,
        "depth_mean": 5.0, "depth_current": 5.0, "queue_wait_mean_s": 1.0,
        "queue_wait_p50_s": _interp(0.1, 1, 0.5, 0, 0.6),
        "queue_wait_p95_s": _interp(1, 10, 0.95, 0.6, 0.4),
        "queue_wait_p99_s": _interp(1, 10, 0.99, 0.6, 0.4),
        "work_p50_s": _interp(0.01, 0.1, 0.5, 0, 0.5),
        "work_p95_s": _interp(0.1, 1, 0.95, 0.5, 0.5),
        "work_p99_s": _interp(0.1, 1, 0.99, 0.5, 0.5),
        "retries_per_s": 0.5, "errors_per_s": 0.25, "unfinished_work_s": 0.5,
        "unfinished_work_growth": 0.0, "longest_running_s": 0.6,
        "littles_law_ratio": 5.0 / (5.0 * 1.0),
        "api_calls_per_s": 10 + 2 + 0.5 + 1 + 0.2,
    },
    "replicaset": {
        "arrival_rate_per_s": 20.0, "throughput_per_s": 16.0, "busy_workers": 16 * 0.5,
        "service_mean_s": 0.5, "workers": 8.0, "utilization": 1.0,
        "depth_current": 4.0 * (AT - START), "queue_wait_mean_s": 30.0,
        "queue_wait_p50_s": _interp(1, 10, 0.5, 0, 0.5),
        "work_p95_s": _interp(0.1, 1, 0.95, 0.2, 0.8),
        "retries_per_s": 0.0, "errors_per_s": 0.0, "unfinished_work_growth": 2.0,
        "longest_running_s": float(AT - START),
    },
    "endpoints": {
        "arrival_rate_per_s": 2.0, "throughput_per_s": 2.0, "busy_workers": 2 * 0.25,
        "service_mean_s": 0.25, "workers": 2.0, "utilization": 0.25, "depth_current": 1.0,
        "queue_wait_mean_s": 0.05, "retries_per_s": 0.5, "errors_per_s": 0.5,
        "work_p50_s": _interp(0.001, 0.01, 0.5, 0, 0.5),
    },
    WEIRD: {
        "arrival_rate_per_s": 1.0, "throughput_per_s": 1.0, "busy_workers": 0.05,
        "service_mean_s": 0.05, "depth_current": 2.0, "queue_wait_mean_s": 2.0,
        "queue_wait_p50_s": _interp(0.1, 1, 0.5, 0, 0.9),
        "queue_wait_p95_s": 10.0,  # lower bound: 6 % of waits are above the 10 s top bucket
        "queue_wait_p99_s": 10.0,  # lower bound
        "retries_per_s": 0.1, "api_calls_per_s": 4.5, "throttle_s_per_s": 0.3,
    },
    "node.lease": {"arrival_rate_per_s": 3.0},
    "nodeXlease": {"arrival_rate_per_s": 7.0},
}
API_CLASSES_A = {"2xx": 12.0, "409": 0.5, "429": 1.0, "5xx": 0.2}
API_CLASSES_K = {"2xx": 4.0, "4xx": 0.5}
WEIRD_WORKERS_FROM_CONFIG = 3.0


def iter_queue_names() -> Iterator[str]:
    return (q.name for q in main_scenario()[0])
