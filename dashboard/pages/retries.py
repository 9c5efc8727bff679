"""Retry storm (`/retries`): N keys fail together against one dependency — what does the
retry policy do to the dependency, to the failing keys and to the healthy keys?

Inputs: failing keys N, outage length, per-key exponential backoff (base, cap), jitter mode,
a global token bucket (on/off, qps, burst), the dependency's request limit, the horizon, and
the healthy traffic sharing the queue (rate, workers, reconcile time).

Every number comes from :mod:`models.retry` — :func:`~models.retry.retry_storm` for each of
the four variants of :func:`~models.retry.policy_variants` (± jitter × ± global bucket around
the chosen policy) and :func:`~models.retry.healthy_impact` for the healthy keys — exactly as
``queuelens retries`` computes them. "Your policy" is the variant that matches the jitter and
bucket inputs; with jitter "none" the jittered comparison uses full jitter. This module only
checks the inputs, picks the numbers and formats them; the callback calls
:func:`retries_view`, which tests call directly.

The work of one computation is bounded (issue 12: 8 simulations of up to 5e8 events each took
108 s and 2 GB). Before anything runs, :func:`simulation_events` estimates from above the
eight healthy-key simulations' events (their raw arrivals λ·T are known; the failing keys'
retries follow from the backoff schedule, :func:`expected_failures_per_key`); above
:data:`models.limits.RETRIES_PAGE_MAX_EVENTS` the page says so and runs nothing. The four storms
share a hard step limit, :data:`models.limits.RETRIES_PAGE_MAX_STORM_STEPS`
(:func:`models.retry.retry_storm`'s ``max_steps``): a storm that needs more stops and the page
says so. The simulator keeps one wait per pass, so the event budget also bounds its memory (8
bytes an event). Delays are limited to :data:`MIN_DELAY_S` … :data:`MAX_DELAY_S`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import dash
from dash import Input, Output, dcc, html

from dashboard.context import AppContext, register_page
from dashboard.figures import (
    backoff_penalty_figure,
    healthy_wait_figure,
    retry_lag_figure,
    retry_rate_figure,
)
from dashboard.forms import parse_number
from dashboard.numbers import number_text, sig
from models.errors import ModelInputError
from models.limits import RETRIES_PAGE_MAX_EVENTS, RETRIES_PAGE_MAX_STORM_STEPS
from models.ratelimit import (
    CLIENT_GO_BASE_S,
    CLIENT_GO_BURST,
    CLIENT_GO_CAP_S,
    CLIENT_GO_QPS,
    JITTERS,
    ItemExponential,
    RetryPolicy,
    failures_to_cap,
)
from models.retry import (
    HealthyImpact,
    StormBudgetExceeded,
    StormResult,
    default_horizon_s,
    healthy_impact,
    policy_variants,
    retry_storm,
    seconds_over_limit,
)

PATH = "/retries"
MAX_KEYS = 5000
"""The page recomputes on every change; bigger storms belong in `queuelens retries`."""
ATTEMPT_S = 0.05
"""Duration of one failing attempt (the CLI's default)."""
MIN_DELAY_S = 1e-9
"""Smallest base or maximum delay: client-go's delays are time.Duration, whole nanoseconds."""
MAX_DELAY_S = 1e9
"""Largest base or maximum delay (about 32 years; time.Duration ends at about 292 years)."""
MAX_EVENTS = RETRIES_PAGE_MAX_EVENTS
"""The simulations' event budget of one page computation (see the module docstring)."""
MAX_STORM_STEPS = RETRIES_PAGE_MAX_STORM_STEPS
"""The four storms' step budget of one page computation."""

DEFAULTS: dict[str, Any] = {
    "keys": 1000, "outage_s": 60.0, "base_s": CLIENT_GO_BASE_S, "cap_s": CLIENT_GO_CAP_S,
    "jitter": "none", "bucket": False, "qps": CLIENT_GO_QPS, "burst": CLIENT_GO_BURST,
    "dependency_limit_per_s": 100.0, "horizon_s": default_horizon_s(60.0),
    "healthy_rate_per_s": 20.0,
    "workers": 2, "service_mean_s": 0.05,
}


@dataclass(frozen=True)
class RetriesInputs:
    keys: int
    outage_s: float
    base_s: float
    cap_s: float
    jitter: str
    bucket: bool
    qps: float
    burst: int
    dependency_limit_per_s: float | None
    horizon_s: float
    healthy_rate_per_s: float
    workers: int
    service_mean_s: float


@dataclass(frozen=True)
class Variant:
    name: str
    policy: RetryPolicy
    storm: StormResult
    healthy: HealthyImpact


@dataclass(frozen=True)
class RetriesView:
    inputs: RetriesInputs
    variants: tuple[Variant, ...]
    chosen: int
    """Index of the variant matching the jitter and bucket inputs."""

    @property
    def mine(self) -> Variant:
        return self.variants[self.chosen]


# --- pure computation ------------------------------------------------------------------------

def _whole(label: str, value: object, low: int, high: int) -> int:
    number = parse_number(label, value, positive=True)
    if number != int(number) or not low <= number <= high:
        raise ModelInputError(f"The {label} must be a whole number from {low:,} to {high:,}, "
                              f"got {value!r}.")
    return int(number)


def _delay(label: str, value: object) -> float:
    number = parse_number(label, value, positive=True)
    if not MIN_DELAY_S <= number <= MAX_DELAY_S:
        raise ModelInputError(f"The {label} must be from {MIN_DELAY_S:g} s (one nanosecond) to "
                              f"{MAX_DELAY_S:g} s, got {number:g} s.")
    return number


def parse_inputs(
    keys: object, outage: object, base: object, cap: object, jitter: object, bucket: object,
    qps: object, burst: object, dependency: object, horizon: object, healthy_rate: object,
    workers: object, service: object,
) -> RetriesInputs:
    """Check the raw form values; a bad one raises ModelInputError with a sentence."""
    if jitter not in JITTERS:
        raise ModelInputError(f"Pick a jitter mode: {', '.join(JITTERS)}.")
    dep = (None if dependency in (None, "")
           else parse_number("dependency limit", dependency, positive=True))
    return RetriesInputs(
        keys=_whole("number of failing keys", keys, 1, MAX_KEYS),
        outage_s=parse_number("outage length", outage, positive=True),
        base_s=_delay("base delay", base),
        cap_s=_delay("maximum delay", cap),
        jitter=str(jitter),
        bucket=bool(bucket),
        qps=parse_number("bucket rate (qps)", qps, positive=True),
        burst=_whole("bucket burst", burst, 1, 1_000_000),
        dependency_limit_per_s=dep,
        horizon_s=parse_number("horizon", horizon, positive=True),
        healthy_rate_per_s=parse_number("healthy key rate", healthy_rate, positive=True),
        workers=_whole("number of workers", workers, 1, 1000),
        service_mean_s=parse_number("reconcile time", service, positive=True),
    )


def expected_failures_per_key(policy: RetryPolicy, outage_s: float, pass_s: float) -> float:
    """Estimated failures of one failing key in the healthy-key simulation: the key is added at
    t = 0, and its n-th attempt (n = 0, 1, …) starts after n cycles of one pass (mean
    ``pass_s``) and one retry delay, failing while it starts within the outage: the number of
    n with Σ_{i<n} (pass_s + e_i) < outage, e_i the i-th delay expected.

    e_i = min(cap, base·2^i) without jitter, half that with full jitter and ¾ with equal
    jitter (the means of U(0, d) and d/2 + U(0, d/2)). Decorrelated jitter,
    d' = min(cap, U(base, 3·d)), is a random walk in log d with drift E[log 3U] = log 3 − 1
    ≈ 0.1 per failure that settles below the cap — by simulation of the chain, at a mean of
    0.97 × cap for cap/base = 1.5 down to 0.30 × cap for cap/base = 1e9; so
    e_i = max(base, min(0.25·cap, base·1.1^i)) here, shorter than its mean (more failures).
    A global bucket only lengthens delays (MaxOf), and queueing behind other keys lengthens
    cycles: an estimate from above, apart from chance. Once e_i stops changing, the rest of
    the outage is divided by the constant cycle, so the loop runs at most 4,096 times."""
    base, cap = policy.base_s, policy.cap_s
    schedule = ItemExponential(base, cap)
    factor = {"full": 0.5, "equal": 0.75}.get(policy.jitter, 1.0)
    t, count, e = 0.0, 0.0, 0.0
    for i in range(4096):
        if policy.jitter == "decorrelated":
            nxt = max(base, min(0.25 * cap, base * 1.1 ** min(i, 1000)))
        else:
            nxt = factor * schedule.unjittered(i)
        if i > 0 and nxt == e:  # constant cycles from here on
            break
        e = nxt
        if t >= outage_s:
            return count
        count += 1.0
        t += pass_s + e
    return count + max(0.0, math.ceil((outage_s - t) / (pass_s + e)))


def simulation_events(inputs: RetriesInputs,
                      variants: tuple[tuple[str, RetryPolicy], ...]) -> float:
    """Estimated events of the healthy-key simulations (two per variant), T the outage (the
    simulated duration): a run with the storm has λ·T raw arrivals, the N keys' first adds,
    a completion per pass (λ·T + N + R) and a retry popping per retry R; the baseline run has
    λ·T arrivals and λ·T completions. R = N · :func:`expected_failures_per_key` + 6 standard
    deviations, but at most the passes c workers can complete in T: a Poisson count of mean
    c·T/E[S] while all are busy, taken at its mean + 6 standard deviations, + c."""
    lam_t = inputs.healthy_rate_per_s * inputs.outage_s
    n = inputs.keys
    passes = inputs.workers * inputs.outage_s / inputs.service_mean_s
    most = passes + 6.0 * math.sqrt(passes) + inputs.workers
    total = 0.0
    for _, pol in variants:
        expected = n * expected_failures_per_key(pol, inputs.outage_s, inputs.service_mean_s)
        # + 6 standard deviations: a key's count of cycles of mean m and deviation σ ≤ m (an
        # exponential pass, a uniform jitter) over T has variance about count·σ²/m² ≤ count
        retries_n = min(expected + 6.0 * math.sqrt(expected), most)
        total += (2 * lam_t + n + 2 * retries_n) + 2 * lam_t
    return total


def _over_budget(what: str) -> ModelInputError:
    return ModelInputError(
        f"{what} for one change. Use fewer keys, a shorter outage, a lower healthy key rate or "
        "a longer base delay, or `queuelens retries` for bigger storms."
    )


def retries_view(inputs: RetriesInputs, *, seed: int = 0) -> RetriesView:
    """Run the four variants through models.retry (the same calls as `queuelens retries`),
    within the budgets :data:`MAX_EVENTS` and :data:`MAX_STORM_STEPS` (module docstring)."""
    if inputs.horizon_s <= inputs.outage_s:
        raise ModelInputError(f"The horizon ({number_text(inputs.horizon_s, 's')}) must be longer "
                              f"than the outage ({number_text(inputs.outage_s, 's')}).")
    policy = RetryPolicy(kind="exp", base_s=inputs.base_s, cap_s=inputs.cap_s,
                         jitter=inputs.jitter,  # type: ignore[arg-type]  # checked in parse
                         global_qps=inputs.qps, burst=inputs.burst)
    pairs = policy_variants(policy)
    sims = simulation_events(inputs, pairs)
    if not sims <= MAX_EVENTS:
        raise _over_budget(f"The healthy-key comparison would simulate about {sims:,.0f} events "
                           f"(eight runs over the outage): more than the page's budget of "
                           f"{MAX_EVENTS:,}")
    left = MAX_STORM_STEPS
    storms = []
    for _, pol in pairs:
        try:
            storm = retry_storm(inputs.keys, pol, inputs.outage_s, attempt_s=ATTEMPT_S,
                                horizon_s=inputs.horizon_s, seed=seed, max_steps=max(1, left))
        except StormBudgetExceeded:
            raise _over_budget(f"The four storms need more than the page's budget of "
                               f"{MAX_STORM_STEPS:,} failures and retries") from None
        left -= storm.attempts + storm.failed_attempts
        storms.append(storm)
    variants = []
    for (name, pol), storm in zip(pairs, storms, strict=True):
        impact = healthy_impact(inputs.keys, pol, inputs.outage_s,
                                healthy_rate_per_s=inputs.healthy_rate_per_s,
                                workers=inputs.workers, service_mean_s=inputs.service_mean_s,
                                seed=seed)
        variants.append(Variant(name, pol, storm, impact))
    # policy_variants order: plain, jitter, bucket, jitter + bucket
    chosen = (1 if inputs.jitter != "none" else 0) + (2 if inputs.bucket else 0)
    return RetriesView(inputs, tuple(variants), chosen)


def figures_of(view: RetriesView) -> tuple[Any, Any, Any, Any]:
    """(request rate, recovery lag, penalty schedule, healthy wait) figures."""
    names = [v.name for v in view.variants]
    first = view.variants[0].storm
    t_s = [first.bin_s * i for i in range(len(first.request_rate_per_s))]
    rate = retry_rate_figure(
        t_s, [(v.name, v.storm.request_rate_per_s) for v in view.variants],
        outage_s=view.inputs.outage_s,
        dependency_limit_per_s=view.inputs.dependency_limit_per_s,
        highlight=view.mine.name,
    )
    lag = retry_lag_figure(names, [v.storm.recovery_lag_p50_s for v in view.variants],
                           [v.storm.recovery_lag_p99_s for v in view.variants],
                           [v.storm.recovery_lag_max_s for v in view.variants])
    schedule = ItemExponential(view.inputs.base_s, view.inputs.cap_s)
    n_max = failures_to_cap(view.inputs.base_s, view.inputs.cap_s) + 2
    top = max([n_max] + [int(v.storm.failures_per_key_median) + 1 for v in view.variants])
    # the schedule is flat (the cap) from n_max on: its end point is enough for the step line
    ns = list(range(n_max + 1)) + ([top] if top > n_max else [])
    marks = [(v.name, int(v.storm.failures_per_key_median), v.storm.penalty_without_forget_s)
             for v in view.variants if v.storm.penalty_without_forget_s is not None]
    penalty = backoff_penalty_figure(
        ns, [schedule.unjittered(n) for n in ns],
        [(name, n, float(d)) for name, n, d in marks if d is not None],
        base_s=view.inputs.base_s,
    )
    base = view.variants[0].healthy
    healthy = healthy_wait_figure(
        names, [v.healthy.healthy_wait_mean_s for v in view.variants],
        [v.healthy.healthy_wait_p99_s for v in view.variants],
        baseline_mean_s=base.baseline_wait_mean_s, baseline_p99_s=base.baseline_wait_p99_s,
    )
    return rate, lag, penalty, healthy


def _dur(value: float | None) -> str:
    return number_text(value, "s")


def headlines(view: RetriesView) -> list[tuple[str, str, str]]:
    """(id suffix, value, label) for the headline numbers of the chosen policy."""
    v = view.mine
    storm, healthy = v.storm, v.healthy
    limit = view.inputs.dependency_limit_per_s
    peak = sig(storm.peak_rate_per_s) + " req/s"
    peak_label = f"peak retry rate on the dependency (per {number_text(storm.bin_s, 's')} bin)"
    if limit is not None:
        peak_label += f"; {sig(storm.peak_rate_per_s / limit)}× its limit"
    over = seconds_over_limit(storm, limit)
    base = storm.penalty_with_forget_s
    return [
        ("peak", peak, peak_label),
        ("over", _dur(over), "time the retries exceed the dependency limit"
         if limit is not None else "no dependency limit given"),
        ("retries", f"{storm.failed_attempts:,}",
         f"retries sent by {view.inputs.keys:,} keys within {number_text(storm.horizon_s, 's')}"),
        ("lag", f"{_dur(storm.recovery_lag_p50_s)} / {_dur(storm.recovery_lag_max_s)}",
         "from recovery to the next attempt: median key / last key"),
        ("penalty", _dur(storm.penalty_without_forget_s),
         "next unrelated failure's delay without Forget "
         f"({sig(storm.failures_per_key_median)} failures remembered, kept until "
         f"Forget); with Forget: {_dur(base)}"),
        ("healthy", f"{_dur(healthy.healthy_wait_mean_s)} (p99 {_dur(healthy.healthy_wait_p99_s)})",
         f"healthy keys' mean queue wait during the outage; without the storm "
         f"{_dur(healthy.baseline_wait_mean_s)}"),
    ]


def comparison_sentence(view: RetriesView) -> str:
    """How jitter and the bucket change the peak and the last key's lag, in words."""
    plain, jit, bucket = view.variants[0].storm, view.variants[1].storm, view.variants[2].storm
    jname = view.variants[1].name.split(",")[0]
    return (
        f"Peak retry rate: {sig(plain.peak_rate_per_s)} req/s with neither; "
        f"{jname}: {sig(jit.peak_rate_per_s)} req/s; global bucket "
        f"({sig(view.inputs.qps)} qps, burst {view.inputs.burst}): "
        f"{sig(bucket.peak_rate_per_s)} req/s. Last key retried "
        f"{_dur(plain.recovery_lag_max_s)} / {_dur(jit.recovery_lag_max_s)} / "
        f"{_dur(bucket.recovery_lag_max_s)} after recovery."
    )


def retries_render(
    keys: object, outage: object, base: object, cap: object, jitter: object, bucket: object,
    qps: object, burst: object, dependency: object, horizon: object, healthy_rate: object,
    workers: object, service: object,
) -> tuple[Any, Any, Any, Any, Any, Any, str]:
    """(rate, lag, penalty, healthy figures, summary, policy sentence, error). A bad input
    leaves the charts as they were and returns the sentence."""
    try:
        inputs = parse_inputs(keys, outage, base, cap, jitter, bucket, qps, burst, dependency,
                              horizon, healthy_rate, workers, service)
        view = retries_view(inputs)
    except ModelInputError as exc:
        keep = dash.no_update
        return keep, keep, keep, keep, keep, keep, str(exc)
    rate, lag, penalty, healthy = figures_of(view)
    summary = html.Div(
        [html.Div([html.Div(value, id=f"retries-{key}", className="ql-headline-value"),
                   html.Div(label, className="ql-headline-label")], className="ql-headline")
         for key, value, label in headlines(view)],
        className="ql-headlines",
    )
    policy = f"Your policy: {view.mine.policy.describe()}. " + comparison_sentence(view)
    return rate, lag, penalty, healthy, summary, policy, ""


# --- layout and Dash wiring ------------------------------------------------------------------

def _field(label: str, input_id: str, value: float | None, step: float | str,
           minimum: float = 0) -> html.Div:
    return html.Div(
        [html.Label(label, htmlFor=input_id),
         dcc.Input(id=input_id, type="number", value=value, min=minimum, step=step,
                   debounce=True)],
        className="ql-field",
    )


_INPUT_IDS = ("retries-keys", "retries-outage", "retries-base", "retries-cap", "retries-jitter",
              "retries-bucket", "retries-qps", "retries-burst", "retries-dependency",
              "retries-horizon", "retries-healthy-rate", "retries-workers", "retries-service")


def layout(**_kwargs: object) -> html.Div:
    d = DEFAULTS
    graph_style = {"height": "440px"}
    return html.Div(
        [
            html.H1("Retry storm: what do N keys failing together do to the dependency?"),
            html.P(
                "At t = 0 a dependency goes down and N keys that need it fail together; each "
                "failure calls AddRateLimited. Compare the policy with and without jitter and "
                "with and without a global token bucket (client-go's default controller "
                "limiter is exponential 5 ms → 1000 s max'd with a 10 qps / burst 100 bucket; "
                "controller-runtime's newer default has no bucket).",
                className="ql-muted",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            _field("failing keys N", "retries-keys", d["keys"], 1, 1),
                            _field("outage: dependency down for (s)", "retries-outage",
                                   d["outage_s"], "any"),
                            _field("base delay (s)", "retries-base", d["base_s"], "any"),
                            _field("maximum delay (s)", "retries-cap", d["cap_s"], "any"),
                            html.Div(
                                [html.Label("jitter", htmlFor="retries-jitter"),
                                 dcc.RadioItems(id="retries-jitter", options=list(JITTERS),
                                                value=d["jitter"], inline=True,
                                                className="ql-radio")],
                                className="ql-field",
                            ),
                            dcc.Checklist(
                                id="retries-bucket",
                                options=[{"label": "global token bucket (MaxOf, as client-go)",
                                          "value": "on"}],
                                value=["on"] if d["bucket"] else [], className="ql-radio",
                            ),
                            _field("bucket rate (retries/s)", "retries-qps", d["qps"], "any"),
                            _field("bucket burst (tokens)", "retries-burst", d["burst"], 1, 1),
                            _field("dependency limit (requests/s; empty = none)",
                                   "retries-dependency", d["dependency_limit_per_s"], "any"),
                            _field("horizon (s)", "retries-horizon", d["horizon_s"], "any"),
                            html.H2("Healthy keys on the same queue"),
                            _field("healthy key rate (keys/s)", "retries-healthy-rate",
                                   d["healthy_rate_per_s"], "any"),
                            _field("workers", "retries-workers", d["workers"], 1, 1),
                            _field("reconcile time (s)", "retries-service",
                                   d["service_mean_s"], "any"),
                            html.Div(id="retries-error", className="ql-error", role="alert"),
                            html.P(
                                f"Failing attempts take {ATTEMPT_S:g} s; rates leave out the N "
                                "first attempts at t = 0 (the same under every policy). Healthy "
                                "waits are simulated over the outage with exponential "
                                f"reconcile times. Up to {MAX_KEYS:,} keys, "
                                f"{MAX_STORM_STEPS:,} storm steps and {MAX_EVENTS:,} "
                                "simulated events per change here (delays from "
                                f"{MIN_DELAY_S:g} s to {MAX_DELAY_S:g} s); use "
                                "`queuelens retries` for more.",
                                className="ql-note",
                            ),
                        ],
                        className="ql-col ql-panel",
                    ),
                    html.Div(
                        [
                            dcc.Loading(html.Div(id="retries-summary", className="ql-card"),
                                        type="dot"),
                            html.P(id="retries-policy", className="ql-note"),
                            html.Div(dcc.Graph(id="retries-chart", config={"displaylogo": False},
                                               style=graph_style), className="ql-card"),
                            html.Div(dcc.Graph(id="retries-lag-chart",
                                               config={"displaylogo": False}, style=graph_style),
                                     className="ql-card"),
                            html.Div(dcc.Graph(id="retries-penalty-chart",
                                               config={"displaylogo": False}, style=graph_style),
                                     className="ql-card"),
                            html.Div(dcc.Graph(id="retries-healthy-chart",
                                               config={"displaylogo": False}, style=graph_style),
                                     className="ql-card"),
                        ],
                        className="ql-col-wide",
                    ),
                ],
                className="ql-row",
            ),
        ]
    )


def register(app: dash.Dash, ctx: AppContext) -> None:
    """Register the page (path ``/retries``) and its callback on ``app``."""
    del ctx  # the what-if needs no data source
    register_page(__name__, path=PATH, name="Retry storm", title="Retry storm · queuelens",
                  order=5, layout=layout)

    @app.callback(
        Output("retries-chart", "figure"),
        Output("retries-lag-chart", "figure"),
        Output("retries-penalty-chart", "figure"),
        Output("retries-healthy-chart", "figure"),
        Output("retries-summary", "children"),
        Output("retries-policy", "children"),
        Output("retries-error", "children"),
        *[Input(i, "value") for i in _INPUT_IDS],
    )
    def _render(
        keys: object, outage: object, base: object, cap: object, jitter: object,
        bucket: list[str] | None, qps: object, burst: object, dependency: object,
        horizon: object, healthy_rate: object, workers: object, service: object,
    ) -> tuple[Any, Any, Any, Any, Any, Any, str]:
        # the checklist sends a list of its ticked values; a forged one (True, 5) is "off"
        bucket_on = isinstance(bucket, list) and "on" in bucket
        return retries_render(keys, outage, base, cap, jitter, bucket_on, qps,
                              burst, dependency, horizon, healthy_rate, workers, service)
