"""The regime matrix: controllers whose bottleneck is known by construction, simulated by
mechanism (``models.simulate``), scraped as a controller-runtime process would be, and put
into a real Prometheus for ``queuelens advise`` to judge.

Each regime names the verdicts that must be there (any one of ``expect``) and those that
must never be (``never``). No regime's numbers come from the advisor's formulas: the
simulator runs the mechanism (a lock, a token bucket, per-key serialisation, failures with
client-go's rate-limited retries), and the advisor sees only the scraped series.

Every regime runs under three load shapes (constant, a sine with two periods over the
range, a step up halfway), at 15 s and 30 s scrape intervals, with two seeds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.load import PiecewiseRate, RateProfile, SineRate, WorkerSchedule

START = 1704067200  # 2024-01-01T00:00:00Z, a multiple of 7200: one backfill block
DURATION_S = 7200.0
RANGE = "2h"
SERVICE_S = 0.1


@dataclass(frozen=True)
class Regime:
    name: str
    what: str
    """The mechanism, in words (for the docs table)."""
    mean_rate_per_s: float
    sim: dict[str, Any]
    expect: frozenset[str]
    never: frozenset[str]
    label: str = field(default="")
    """What the right answer is, in words."""
    binding: str | None = None
    """For a contention regime: the ``binding_limit`` the verdict must name."""
    undecidable: frozenset[str] = frozenset()
    """Load shapes under which the metrics cannot reliably tell this regime from its
    look-alike: there, instead of the expected verdict, the advice may say so — every verdict
    then states that a shared resource could not be ruled out (``caveats`` of add_workers,
    ``rules_not_evaluated`` of healthy)."""
    ceiling_per_s: float | None = None
    """The mechanism's throughput ceiling (items/s), where it has one: the plan's must be
    within 10 % of it."""
    plan_binding: str | None = None
    """The binding limit the capacity plan must name whatever verdict leads (a retry storm's
    cause)."""


REGIMES: tuple[Regime, ...] = (
    Regime(
        "independent", "c=2, exponential 0.1 s passes, nothing shared; peaks above 2/0.1 s",
        18.0, {"workers": 2},
        frozenset({"add_workers", "backlog_growing"}),
        frozenset({"contention", "hot_key", "over_provisioned"}),
        "more workers help"),
    Regime(
        "serial_section", "c=4, 60 % of every pass under one process-wide lock "
        "(ceiling 1/0.06 s ≈ 16.7/s)",
        14.0, {"workers": 4, "lock_fraction": 0.6},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the lock)", "shared_resource", frozenset({"constant"}),
        ceiling_per_s=1 / 0.06),
    Regime(
        "retrograde", "c=12, coherency σ=0.05, κ=0.02 (USL peak at N*≈6.9)",
        26.0, {"workers": 12, "coherence": (0.05, 0.02)},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        # constant: 26/s is 79 % of the USL's peak X(N*) ≈ 32.8/s and the busy workers stay
        # under 9 of 12 — the queue keeps up, the peak cannot be measured from a load this
        # steady: the plan says the pass times rise with load and gives no ceiling (issue 35)
        "contention, with a peak N*", undecidable=frozenset({"constant"})),
    Regime(
        "api_ceiling", "c=8, 2 API calls per pass through one 20 QPS token bucket "
        "(ceiling 10/s)",
        9.0, {"workers": 8, "service_mean_s": 0.05, "api_calls": 2, "api_qps": 20.0,
              "api_burst": 20, "api_latency_s": 0.01},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the API client limiter)", "client_limiter", ceiling_per_s=10.0),
    Regime(
        "hot_key", "c=8, 80 % of notifications on one key (it needs 12 passes/s, "
        "serial at 10/s)",
        15.0, {"workers": 8, "hot_key_share": 0.8, "keys": 1000},
        frozenset({"hot_key"}), frozenset({"add_workers", "contention"}),
        "hot key"),
    Regime(
        "hot_key_busy", "c=4, 60 % of notifications on one key (12 passes/s needed, 10/s "
        "serial) in a queue 45 % busy",
        20.0, {"workers": 4, "hot_key_share": 0.6, "keys": 1000},
        frozenset({"hot_key"}), frozenset({"add_workers", "contention"}),
        "hot key"),
    Regime(
        "failures_40", "c=4, 40 % of passes fail, nothing shared, controller-runtime "
        "retries (5 ms → 1000 s per key)",
        16.0, {"workers": 4, "fail_prob": 0.4, "keys": 5000},
        frozenset({"retry_storm"}), frozenset({"contention"}),
        "retry storm"),
    Regime(
        "failures_60", "c=4, 60 % of passes fail, nothing shared",
        12.0, {"workers": 4, "fail_prob": 0.6, "keys": 5000},
        frozenset({"retry_storm"}), frozenset({"contention"}),
        "retry storm"),
    Regime(
        "over_provisioned", "c=16 for 0.8 busy workers",
        8.0, {"workers": 16},
        frozenset({"over_provisioned"}),
        frozenset({"add_workers", "contention", "hot_key", "retry_storm", "backlog_growing"}),
        "over-provisioned"),
    Regime(
        "apf_saturated", "c=8, 0.2 s passes with 2 API calls (1 write), each holding one of 4 "
        "seats of the API server's workload-low level for 50 ms beside 35 requests/s of "
        "other clients (the level's ceiling leaves 22.5 passes/s; queue limit 50, 429 "
        "with Retry-After beyond)",
        20.0, {"workers": 8, "service_mean_s": 0.2, "api_calls": 2, "api_writes": 1,
               "api_latency_s": 0.05, "apf_seats": 4, "apf_background_rate_per_s": 35.0,
               "apf_background_latency_s": 0.05},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the API server's priority level)", "api_server",
        ceiling_per_s=22.5),
    Regime(
        "webhook_bound", "c=8, 50 ms passes with 1 write through a validating webhook of 2 "
        "slots × 100 ms (ceiling 20 writes/s)",
        16.0, {"workers": 8, "service_mean_s": 0.05, "api_calls": 1, "api_writes": 1,
               "api_latency_s": 0.01, "webhook_latency_s": 0.1, "webhook_concurrency": 2},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the admission webhook)", "admission_webhook",
        ceiling_per_s=20.0),
    Regime(
        "apf_roomy", "c=2, 0.1 s passes with 1 API call into a workload-low level of 20 seats "
        "that other clients keep 25 % busy (the look-alike of apf_saturated: the API server "
        "is busy, the workers bind); peaks above 2/0.11 s",
        17.0, {"workers": 2, "api_calls": 1, "api_latency_s": 0.01, "apf_seats": 20,
               "apf_background_rate_per_s": 100.0, "apf_background_latency_s": 0.05},
        frozenset({"add_workers", "backlog_growing"}),
        frozenset({"contention", "hot_key", "over_provisioned"}),
        "more workers help"),
    Regime(
        "webhook_slow", "c=2, 50 ms passes with 1 write through a webhook of 50 ms that scales "
        "(no slot limit: the look-alike of webhook_bound, its latency does not rise with "
        "load); peaks above 2/0.11 s",
        17.0, {"workers": 2, "service_mean_s": 0.05, "api_calls": 1, "api_writes": 1,
               "api_latency_s": 0.01, "webhook_latency_s": 0.05},
        frozenset({"add_workers", "backlog_growing"}),
        frozenset({"contention", "hot_key", "over_provisioned"}),
        "more workers help"),
    Regime(
        "conflict_storm", "c=8, 0.1 s passes over 5000 keys that all write one of 4 shared "
        "objects (optimistic concurrency: a write after another pass's write of the same "
        "object gets 409 and the pass fails)",
        16.0, {"workers": 8, "keys": 5000, "api_calls": 1, "api_writes": 1,
               "api_latency_s": 0.01, "conflict_objects": 4},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (write conflicts)", "write_conflicts"),
    Regime(
        "conflict_retry", "c=8, 0.1 s passes over 5000 keys that all write one of 2 shared "
        "objects: about half the passes end in a 409 Conflict on their write and are retried",
        16.0, {"workers": 8, "keys": 5000, "api_calls": 1, "api_writes": 1,
               "api_latency_s": 0.01, "conflict_objects": 2},
        frozenset({"retry_storm", "contention"}), frozenset({"add_workers", "hot_key"}),
        "fix the writes (409 conflicts)", plan_binding="write_conflicts"),
    Regime(
        "cpu_bound", "c=8, 0.1 s passes of which 80 % is CPU work on one core (GOMAXPROCS=1: "
        "ceiling 1/0.08 s = 12.5/s)",
        11.5, {"workers": 8, "cpu_cores": 1, "cpu_fraction": 0.8},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the CPU)", "cpu", ceiling_per_s=12.5),
    Regime(
        "cpu_roomy", "c=2, 0.1 s passes of which 80 % is CPU work on 8 cores (the look-alike "
        "of cpu_bound: the process uses under a fifth of its cores, the workers bind); peaks "
        "above 2/0.1 s",
        17.0, {"workers": 2, "cpu_cores": 8, "cpu_fraction": 0.8},
        frozenset({"add_workers", "backlog_growing"}),
        frozenset({"contention", "hot_key", "over_provisioned"}),
        "more workers help"),
    Regime(
        "healthy", "c=4, 40 % busy at the mean, nothing shared",
        16.0, {"workers": 4},
        frozenset({"healthy"}),
        frozenset({"add_workers", "contention", "hot_key", "retry_storm", "backlog_growing"}),
        "healthy"),
)

STEPS = WorkerSchedule((0.0, DURATION_S / 3, 2 * DURATION_S / 3), (1, 2, 3))
"""The worker-count history of the step regimes: 1, then 2, then 3 workers, 40 min each."""

PROBE_WORKERS = 8
"""A worker count the step regimes' history never ran: the plan's row there is checked
against the mechanism simulated at that count."""

STEP_REGIMES: tuple[Regime, ...] = (
    Regime(
        "step_lock", "1 → 2 → 3 workers, 0.1 s passes, 60 % of each under one lock (ceiling "
        "16.7/s), offered 25/s",
        25.0, {"workers": STEPS, "lock_fraction": 0.6},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the lock)", "shared_resource", ceiling_per_s=1 / 0.06),
    Regime(
        "step_external", "1 → 2 → 3 workers, 0.1 s passes, each waiting for a token of an "
        "external service's 12/s rate limit (no API-client metric sees it), offered 20/s",
        20.0, {"workers": STEPS, "dependency_qps": 12.0, "dependency_burst": 1},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (an invisible rate limit)", "shared_resource", ceiling_per_s=12.0),
    Regime(
        "step_pool", "1 → 2 → 3 workers, 50 ms passes holding one of 2 connections of a pool "
        "for 90 % of the pass (ceiling 2 / 45 ms ≈ 44/s), offered 60/s",
        60.0, {"workers": STEPS, "service_mean_s": 0.05, "pool_size": 2,
               "pool_fraction": 0.9},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the pool)", "shared_resource", ceiling_per_s=2 / 0.045),
    Regime(
        "step_api", "1 → 2 → 3 workers, 50 ms passes with 2 API calls through one 20 QPS "
        "token bucket (ceiling 10/s), offered 16/s",
        16.0, {"workers": STEPS, "service_mean_s": 0.05, "api_calls": 2, "api_qps": 20.0,
               "api_burst": 20, "api_latency_s": 0.01},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the API client limiter)", "client_limiter", ceiling_per_s=10.0),
    Regime(
        "step_cpu", "1 → 2 → 3 workers, 50 ms passes of which 80 % is CPU work on one core "
        "(ceiling 1 / 40 ms = 25/s), offered 40/s",
        40.0, {"workers": STEPS, "service_mean_s": 0.05, "cpu_cores": 1,
               "cpu_fraction": 0.8},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the CPU)", "cpu", ceiling_per_s=25.0),
    Regime(
        "step_webhook", "1 → 2 → 3 workers, 50 ms passes with 1 write through a validating "
        "webhook of 1 slot × 60 ms (ceiling 16.7 writes/s), offered 30/s",
        30.0, {"workers": STEPS, "service_mean_s": 0.05, "api_calls": 1, "api_writes": 1,
               "api_latency_s": 0.01, "webhook_latency_s": 0.06, "webhook_concurrency": 1},
        frozenset({"contention"}), frozenset({"add_workers", "hot_key"}),
        "contention (the admission webhook)", "admission_webhook", ceiling_per_s=1 / 0.06),
    Regime(
        "step_independent", "1 → 2 → 3 workers, 0.1 s passes, nothing shared, offered 40/s "
        "(the look-alike: throughput follows the count)",
        40.0, {"workers": STEPS},
        frozenset({"add_workers", "backlog_growing"}),
        frozenset({"contention", "hot_key", "over_provisioned"}),
        "more workers help"),
)
"""Worker-count steps under saturating load: the history that tells a shared limit from the
worker count best (a count that rose while the throughput did not follow)."""

STEP_SEEDS = (1, 2)


@dataclass(frozen=True)
class NearRegime:
    """A queue that keeps up on average with a limit near (issue 35 §4): under a constant
    load its mean is 70–85 % of the limit's ceiling and nothing binds; under the sine (±30 %)
    and step (0.7× → 1.3×) loads its peaks go over the ceiling and the limit binds there."""

    regime: Regime
    binds_at_constant: bool = False
    """The limit binds even at the constant load (none of these: each keeps up there)."""


NEAR_REGIMES: tuple[NearRegime, ...] = tuple(NearRegime(r, b) for r, b in (
    (Regime("near_lock", "c=4, 0.1 s passes, 60 % under one lock (ceiling 16.7/s), mean "
            "12.5/s (75 %)", 12.5, {"workers": 4, "lock_fraction": 0.6},
            frozenset({"contention", "healthy"}), frozenset({"add_workers", "hot_key"}),
            "healthy at 75 %, contention at peaks over the lock", "shared_resource",
            ceiling_per_s=1 / 0.06), False),
    (Regime("near_pool", "c=6, 50 ms passes holding one of 2 connections for 90 % (ceiling "
            "44.4/s), mean 35/s (79 %)", 35.0,
            {"workers": 6, "service_mean_s": 0.05, "pool_size": 2, "pool_fraction": 0.9},
            frozenset({"contention", "healthy"}), frozenset({"add_workers", "hot_key"}),
            "healthy at 79 %, contention at peaks over the pool", "shared_resource",
            ceiling_per_s=2 / 0.045), False),
    (Regime("near_external", "c=4, 0.1 s passes, each waiting for a token of an external "
            "12/s limit, mean 9.5/s (79 %)", 9.5,
            {"workers": 4, "dependency_qps": 12.0, "dependency_burst": 1},
            frozenset({"contention", "healthy"}), frozenset({"add_workers", "hot_key"}),
            "healthy at 79 %, contention at peaks over the limit", "shared_resource",
            ceiling_per_s=12.0), False),
    (Regime("near_cpu", "c=8, 0.1 s passes, 80 % CPU on one core (ceiling 12.5/s), mean "
            "10/s: 0.8 core on average, over one core at the peaks", 10.0,
            {"workers": 8, "cpu_cores": 1, "cpu_fraction": 0.8},
            frozenset({"contention", "healthy"}), frozenset({"add_workers", "hot_key"}),
            "healthy with the CPU's headroom, contention at peaks over a core", "cpu",
            ceiling_per_s=12.5), False),
    (Regime("near_api", "c=8, 50 ms passes with 2 API calls through one 20 QPS token bucket "
            "(ceiling 10/s), mean 8/s (80 %)", 8.0,
            {"workers": 8, "service_mean_s": 0.05, "api_calls": 2, "api_qps": 20.0,
             "api_burst": 20, "api_latency_s": 0.01},
            frozenset({"contention", "healthy", "over_provisioned"}),
            frozenset({"add_workers", "hot_key"}),
            "no contention at 80 %, contention at peaks over the bucket", "client_limiter",
            ceiling_per_s=10.0), False),
))
NEAR_SEEDS = (1, 2, 3)
"""The seeds CI runs; ``benchmarks/bench_near_limit.py`` runs held-out ones."""
NEAR_HEADROOM_TOLERANCE = 0.15
"""A stated headroom within 15 % of the mechanism's ceiling ÷ the plan's design demand."""


def near_cases(seeds: tuple[int, ...] = NEAR_SEEDS) -> Iterator[tuple[NearRegime, Case]]:
    for near in NEAR_REGIMES:
        for load in LOADS:
            for seed in seeds:
                yield near, Case(near.regime, load, 15.0, seed)


def near_misses(near: NearRegime, case: Case, queue: dict[str, Any]) -> list[str]:
    """What the advice of a near-limit case got wrong (empty: right). Where the load's peaks
    go over the ceiling (sine, step) or the limit binds at any load: contention naming the
    limit, its ceiling within :data:`CEILING_TOLERANCE`. At the constant load below it: no
    contention unless the measured p95 wait broke the SLO, and where the limit's ceiling is
    measured, the headroom names it within :data:`NEAR_HEADROOM_TOLERANCE` of the
    mechanism's. Never more workers."""
    r = case.regime
    kinds = {str(v["kind"]) for v in queue["verdicts"]}
    plan = queue["plan"]
    out: list[str] = []
    if kinds & r.never:
        out.append(f"verdicts {sorted(kinds)}")
    if plan["recommended_workers"] is not None and plan["workers_now"] is not None \
            and plan["recommended_workers"] > plan["workers_now"]:
        out.append(f"recommends {plan['workers_now']} → {plan['recommended_workers']}")
    assert r.ceiling_per_s is not None
    if case.load != "constant" or near.binds_at_constant:
        if "contention" not in kinds or plan["binding_limit"] != r.binding:
            out.append(f"{sorted(kinds)} binding {plan['binding_limit']} at its peaks")
        got = plan["ceiling_per_s"]
        if got is not None and abs(got / r.ceiling_per_s - 1) > CEILING_TOLERANCE:
            out.append(f"ceiling {got:.3g} vs {r.ceiling_per_s:.3g}")
        return out
    broke_slo = any(v["evidence"].get("observed_wait_p95_vs_slo") == "above"
                    for v in queue["verdicts"])
    if "contention" in kinds and not broke_slo:
        # below the ceiling a queue that keeps up is not contended — unless its measured
        # wait broke the SLO (then it does not keep up, and "healthy" would be wrong)
        out.append(f"contention ({plan['binding_limit']}) below the ceiling")
    own = next((h for h in plan["headroom"] if h["limit"] == r.binding), None)
    if own is not None:
        truth = r.ceiling_per_s / own["demand_per_s"]
        if abs(own["ratio"] / truth - 1) > NEAR_HEADROOM_TOLERANCE:
            out.append(f"headroom {own['ratio']:.3g}× vs {truth:.3g}×")
        if plan["headroom_limit"] != r.binding:
            out.append(f"least headroom names {plan['headroom_limit']}")
    return out


def answer_of(queue: dict[str, Any]) -> tuple[str, str]:
    """What a user acts on: the limit the plan names and what it says of the worker count
    (more, fewer, keep) — a backlog that grows beside the contention is the same answer."""
    plan = queue["plan"]
    now, rec = plan["workers_now"], plan["recommended_workers"]
    move = ("no count" if now is None or rec is None else
            "more" if rec > now else "fewer" if rec < now else "keep")
    return str(plan["binding_limit"]), move

LOADS = ("constant", "sine", "step")
SCRAPE_INTERVALS_S = (15.0, 30.0)
SEEDS = (1, 2)


def load_profile(shape: str, mean: float) -> float | RateProfile:
    """The arrival rate: constant; a sine ±30 % with a 1 h period; 0.7× then 1.3× the mean."""
    if shape == "constant":
        return mean
    if shape == "sine":
        return SineRate(mean, 0.3, DURATION_S / 2)
    if shape == "step":
        return PiecewiseRate((0.0, DURATION_S / 2), (0.7 * mean, 1.3 * mean))
    raise ValueError(shape)


@dataclass(frozen=True)
class Case:
    regime: Regime
    load: str
    scrape_interval_s: float
    seed: int

    @property
    def queue(self) -> str:
        return f"{self.regime.name}-{self.load}-{self.scrape_interval_s:g}s-{self.seed}"

    def sim_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"keys": 1_000_000, "service_mean_s": SERVICE_S}
        kw.update(self.regime.sim)
        kw.update(arrival_rate_per_s=load_profile(self.load, self.regime.mean_rate_per_s),
                  duration_s=DURATION_S, seed=self.seed,
                  scrape_interval_s=self.scrape_interval_s)
        return kw


def cases() -> Iterator[Case]:
    for regime in REGIMES:
        for load in LOADS:
            for step in SCRAPE_INTERVALS_S:
                for seed in SEEDS:
                    yield Case(regime, load, step, seed)


def step_cases() -> Iterator[Case]:
    for regime in STEP_REGIMES:
        for seed in STEP_SEEDS:
            yield Case(regime, "constant", 15.0, seed)


def probe_kwargs(case: Case, workers: int = PROBE_WORKERS) -> dict[str, Any]:
    """The case's mechanism at a fixed worker count the history never ran, without a scrape:
    the truth a plan's row at that count is checked against."""
    kw = case.sim_kwargs()
    kw.update(workers=workers, scrape_interval_s=None, warmup_s=600.0, seed=case.seed + 100)
    return kw


def simulate_case(case: Case) -> Any:
    """The scraped metrics of one case (``models.scrape.ScrapedMetrics``)."""
    from models.simulate import simulate

    return simulate(**case.sim_kwargs()).metrics


CONFIG = "profile:\n  apiserver:\n    cluster_labels: [cluster]\n"
"""The profile the matrix is judged with: each controller has its own API server, joined on
``cluster`` (:func:`write_openmetrics`)."""


def advise_argv(url: str, step: float, config: Path) -> list[str]:
    """``queuelens advise`` for the controllers scraped every ``step`` s (a selector on the
    pod), at the end of the run over its whole range, with :data:`CONFIG` in ``config``."""
    if not config.exists():
        config.write_text(CONFIG)
    return ["advise", "--prometheus", url, "--config", str(config),
            "--selector", f'{{pod=~".*-{step:g}s-.*"}}',
            "--at", str(START + int(DURATION_S)), "--range", RANGE, "--format", "json"]


def judged_right(case: Case, verdicts: list[dict[str, Any]]) -> bool:
    """The case's verdicts include one of ``expect``, none of ``never``, and a contention
    verdict names the regime's binding limit."""
    kinds = {str(v["kind"]) for v in verdicts}
    if not kinds & case.regime.expect or kinds & case.regime.never:
        return False
    if case.regime.binding is None:
        return True
    return any(v["kind"] == "contention"
               and v["evidence"].get("binding_limit") == case.regime.binding for v in verdicts)


def write_openmetrics(all_cases: list[Case], path: Path) -> None:
    """Every case as its own controller in its own process (pod), as OpenMetrics text for
    ``promtool tsdb create-blocks-from openmetrics``."""
    from collectors.openmetrics import simulated_families, write_families

    ctl = [(c.queue, f"pod-{c.queue}", simulate_case(c)) for c in all_cases]
    with path.open("w") as out:
        # each controller with its own API server: a cluster each, joined on `cluster`
        write_families(out, simulated_families(ctl, float(START), cluster_label="cluster"))


ROW_TOLERANCE = 0.15
"""The plan's throughput and mean wait at :data:`PROBE_WORKERS` must be within 15 % of the
mechanism simulated there (issue 20 §4)."""

CEILING_TOLERANCE = 0.10
"""The plan's ceiling must be within 10 % of the mechanism's."""


def step_misses(case: Case, queue: dict[str, Any], row: dict[str, Any], probe: Any,
                demand: float) -> list[str]:
    """What a step case got wrong, in words (empty: right): the verdicts, the binding limit,
    never more workers under a limit, the ceiling, and the row at the probe count against the
    simulated mechanism ``probe`` (a ``SimResult`` offered ``demand``)."""
    out: list[str] = []
    kinds = {str(v["kind"]) for v in queue["verdicts"]}
    if not kinds & case.regime.expect or kinds & case.regime.never:
        out.append(f"verdicts {sorted(kinds)}")
    plan = queue["plan"]
    if case.regime.binding is not None:
        if plan["binding_limit"] != case.regime.binding:
            out.append(f"binding {plan['binding_limit']}")
        if plan["recommended_workers"] > plan["workers_now"]:
            out.append(f"recommends {plan['workers_now']} → {plan['recommended_workers']}")
    elif plan["recommended_workers"] <= plan["workers_now"]:
        out.append(f"keeps {plan['workers_now']} workers")
    want = case.regime.ceiling_per_s
    got = plan["ceiling_per_s"]
    if want is not None and (got is None or abs(got / want - 1) > CEILING_TOLERANCE):
        out.append(f"ceiling {got} vs {want:.3g}")
    if abs(row["throughput_per_s"] / probe.throughput_per_s - 1) > ROW_TOLERANCE:
        out.append(f"throughput at c={PROBE_WORKERS} {row['throughput_per_s']:.3g} vs "
                   f"{probe.throughput_per_s:.3g}")
    keeps_up = probe.throughput_per_s >= 0.97 * demand
    if bool(row["stable"]) != keeps_up:
        out.append(f"stable={row['stable']} but the mechanism "
                   + ("keeps up" if keeps_up else "falls behind"))
    elif keeps_up and (row["wait_mean_s"] is None
                       or abs(row["wait_mean_s"] / probe.wait_mean_s - 1) > ROW_TOLERANCE):
        out.append(f"wait at c={PROBE_WORKERS} {row['wait_mean_s']} vs {probe.wait_mean_s:.3g}")
    elif not keeps_up and row["wait_mean_s"] is not None:
        out.append("a finite wait where the backlog grows")
    return out


def matrix_row_misses(case: Case, queue: dict[str, Any], row: dict[str, Any], probe: Any,
                      demand: float) -> list[str]:
    """What the plan of a contention case with a known mechanism ceiling got wrong (empty:
    right): its ceiling within :data:`CEILING_TOLERANCE` of the mechanism's — or, where it
    gives none, the rows say why — and, with a ceiling, its row at twice the current count
    (``probe``: the mechanism simulated there, offered ``demand``) within
    :data:`ROW_TOLERANCE` in throughput, "the backlog grows" exactly where the simulated
    queue falls behind."""
    plan = queue["plan"]
    want = case.regime.ceiling_per_s
    assert want is not None
    got = plan["ceiling_per_s"]
    if got is None:
        return [] if "no ceiling could be measured" in plan["rows_basis"] else \
            ["no ceiling and no reason"]
    out: list[str] = []
    if abs(got / want - 1) > CEILING_TOLERANCE:
        out.append(f"ceiling {got:.3g} vs {want:.3g}")
    if abs(row["throughput_per_s"] / probe.throughput_per_s - 1) > ROW_TOLERANCE:
        out.append(f"throughput {row['throughput_per_s']:.3g} vs {probe.throughput_per_s:.3g}")
    keeps_up = probe.throughput_per_s >= 0.97 * demand
    if bool(row["stable"]) != keeps_up:
        out.append(f"stable={row['stable']} but the mechanism "
                   + ("keeps up" if keeps_up else "falls behind"))
    return out


@contextlib.contextmanager
def serving(all_cases: list[Case], work: Path) -> Iterator[Any]:
    """A real Prometheus on 127.0.0.1 holding every case (simulated, written as OpenMetrics,
    backfilled with promtool into ``work``), stopped on exit."""
    from tests.support.prometheus import backfill_file, start_prometheus

    om = work / "cases.om"
    write_openmetrics(all_cases, om)
    tsdb = backfill_file(om, work)
    om.unlink()
    server = start_prometheus(work / "prom", tsdb=tsdb)
    try:
        yield server
    finally:
        server.stop()


def probe_row(case: Case, plan: dict[str, Any], url: str, config: Path
              ) -> tuple[dict[str, Any], Any, float]:
    """The plan's row at twice the current count (``whatif --queue`` on the Prometheus at
    ``url``), the case's mechanism simulated there offered the plan's design demand, and that
    demand: what :func:`matrix_row_misses` judges."""
    import io
    import json

    from dashboard.cli import main
    from models.simulate import simulate

    probe = 2 * int(plan["workers_now"])
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(["whatif", "--prometheus", url, "--config", str(config), "--queue",
                     case.queue, "--at", str(START + int(DURATION_S)), "--range", RANGE,
                     "--workers", f"1-{probe}", "--format", "json"])
    if code != 0:
        raise RuntimeError(f"whatif --queue {case.queue} exited {code}")
    row = next(r for r in json.loads(text.getvalue())["rows"] if r["workers"] == probe)
    kw = probe_kwargs(case, probe)
    kw["arrival_rate_per_s"] = plan["demand_per_s"]
    return row, simulate(**kw), float(plan["demand_per_s"])
