"""The two registries — verdict rules (models.verdicts.registry) and binding limits
(models.bindings) — and everything that reads them instead of keeping its own list: the
options and words of models.options, the plan's kind → limit mapping, the card's labels, the
alert rules, the CLI help and the tables of docs/advisor.md."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from models.advisor import BINDING_LIMITS, KINDS, Kind, advise
from models.bindings import CEILING_LIMITS, limits
from models.bindings import registry as bindings_registry
from models.bindings.registry import BindingLimit, Option, contention_limit, register
from models.measurements import QueueSnapshot
from models.verdicts import registry

DOC = (Path(__file__).resolve().parents[2] / "docs" / "advisor.md").read_text()


def _table_rows(heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after ``heading``."""
    rest = DOC[DOC.index(heading):]
    lines = rest.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def _codes(text: str) -> list[str]:
    return re.findall(r"`([a-z_]+)`", text)


# --- the verdict rules --------------------------------------------------------------------


def test_every_kind_has_one_rule_and_kinds_are_in_the_order_of_impact() -> None:
    assert sorted(r.kind for r in registry.RULES) == sorted(Kind)
    assert tuple(Kind) == KINDS
    impacts = [registry.rule(k).impact for k in KINDS]
    assert impacts == sorted(impacts)
    # the order the old if-chain gave, written out: stuck first, healthy last
    assert KINDS[0] == "stuck_workers"
    assert KINDS[-1] == "healthy"
    assert KINDS.index(Kind.BACKLOG_GROWING) < KINDS.index(Kind.CONTENTION) \
        < KINDS.index(Kind.ADD_WORKERS)


def test_a_rule_before_the_rules_it_reads_is_refused() -> None:
    hot = registry.rule(Kind.HOT_KEY)
    contention = registry.rule(Kind.CONTENTION)
    with pytest.raises(ValueError, match="evaluated after it"):
        registry._registry(hot, contention)
    with pytest.raises(ValueError, match="two rules"):
        registry._registry(contention, contention)
    with pytest.raises(ValueError, match="without a rule"):
        registry._registry(contention)


def test_the_suppressions_are_declared() -> None:
    assert set(registry.rule(Kind.ADD_WORKERS).suppressed_by) == {
        Kind.RETRY_STORM, Kind.CONTENTION, Kind.HOT_KEY, Kind.STUCK_WORKERS}
    assert set(registry.rule(Kind.OVER_PROVISIONED).suppressed_by) == {
        Kind.HOT_KEY, Kind.STUCK_WORKERS, Kind.LONG_PASSES, Kind.BACKLOG_GROWING,
        Kind.ADD_WORKERS}
    assert registry.rule(Kind.HOT_KEY).reads == (Kind.CONTENTION,)
    assert Kind.CONTENTION in registry.rule(Kind.BACKLOG_GROWING).reads


# One worker at 90 % busy: add_workers on its own; with half the passes failing, a retry storm.
_SATURATED = {"queue": "q", "arrival_rate_per_s": 9.0, "throughput_per_s": 9.0,
              "service_mean_s": 0.1, "busy_workers": 0.9, "workers": 1.0, "errors_per_s": 0.0}


def test_a_declared_suppression_is_what_keeps_a_rule_from_running(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calm = advise(QueueSnapshot(**_SATURATED))  # type: ignore[arg-type]
    assert [v.kind for v in calm] == ["add_workers"]
    storm = QueueSnapshot(**{**_SATURATED, "errors_per_s": 4.5})  # type: ignore[arg-type]
    assert [v.kind for v in advise(storm)] == ["retry_storm"]
    # The same rules with add_workers' suppressions taken out of the registry: it is given.
    unsuppressed = tuple(dataclasses.replace(r, suppressed_by=()) if r.kind == Kind.ADD_WORKERS
                         else r for r in registry.RULES)
    monkeypatch.setattr(registry, "RULES", unsuppressed)
    kinds = [v.kind for v in advise(storm)]
    assert kinds == ["add_workers", "retry_storm"]  # critical before warning


def test_long_passes_suppress_over_provisioned() -> None:
    idle = {"queue": "q", "arrival_rate_per_s": 1.0, "throughput_per_s": 1.0,
            "service_mean_s": 0.1, "busy_workers": 0.1, "workers": 8.0, "errors_per_s": 0.0}
    assert [v.kind for v in advise(QueueSnapshot(**idle))] == [  # type: ignore[arg-type]
        "over_provisioned"]
    # p99 = 30 × p50 and the mean 3 × p50: long passes, and then no over-provisioned verdict
    tail = {**idle, "service_mean_s": 0.3, "busy_workers": 0.3, "work_p50_s": 0.1,
            "work_p99_s": 3.0}
    assert [v.kind for v in advise(QueueSnapshot(**tail))] == [  # type: ignore[arg-type]
        "long_passes"]


def test_every_verdict_headline_comes_from_its_rule() -> None:
    v = advise(QueueSnapshot(**_SATURATED))[0]  # type: ignore[arg-type]
    assert v.headline == registry.headline(v.kind, v.evidence, v.recommendation)
    assert v.headline == f"More workers will help: 1 → {v.recommendation['workers']}"


# --- the binding limits -------------------------------------------------------------------


def test_the_views_list_every_registered_limit() -> None:
    from dashboard.plan_words import BINDING_LABELS
    from models.options import BINDING_WORDS, OPTIONS
    from models.plan import _KIND_LIMIT

    names = set(limits())
    assert set(BINDING_WORDS) == set(OPTIONS) == set(BINDING_LABELS) == names
    assert {"workers", "shared_resource", "client_limiter", "api_server", "admission_webhook",
            "write_conflicts", "cpu", "coherency", "hot_key", "retry_policy", "stuck_worker",
            "none", "unknown"} <= names
    assert all(OPTIONS[n] for n in names)  # every limit says what to do
    # every verdict kind but contention (which names its limit in its evidence) names one
    assert set(_KIND_LIMIT) == set(Kind) - {Kind.CONTENTION}
    assert set(_KIND_LIMIT.values()) <= names
    assert CEILING_LIMITS["client_limiter"] == 0.0  # an evenly spaced token bucket
    assert all(limits()[n].rows == "ceiling" for n in CEILING_LIMITS)


def test_the_contention_limits_by_precedence() -> None:
    assert list(BINDING_LIMITS) == ["client_limiter", "api_server", "admission_webhook",
                                    "write_conflicts", "cpu", "coherency", "shared_resource"]
    peak = {"usl_peak_workers": 3.0}
    cases = [
        ({"limiter", "api_429", "webhook"}, {}, 8, "client_limiter"),
        ({"apf", "webhook", "api_409"}, {}, 8, "api_server"),
        ({"webhook", "api_409", "usl"}, peak, 8, "admission_webhook"),
        ({"api_409", "usl"}, peak, 8, "write_conflicts"),
        ({"usl"}, peak, 8, "coherency"),
        ({"usl"}, {**peak, "step_scaling_efficiency": 0.2}, 8, "shared_resource"),  # plateau
        ({"usl"}, {**peak, "step_scaling_efficiency": -0.1}, 8, "coherency"),  # it fell
        ({"usl"}, {"usl_peak_workers": 12.0}, 8, "shared_resource"),  # peak past c
        ({"usl"}, peak, None, "shared_resource"),
        ({"duration_rise", "worker_steps"}, {}, 8, "shared_resource"),
    ]
    for codes, evidence, c, expected in cases:
        assert contention_limit(dict.fromkeys(codes, ""), evidence, c) == expected, codes


def test_a_new_limit_is_one_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a limit module does (``register``) is all the contention verdict needs to name it:
    here a limit between the client limiter and the API server."""
    limit = BindingLimit(
        name="cpu_test", words="the controller's cores", label="CPU",
        options=(Option("give it more cores", "cost"),), rows="ceiling", ceiling_cv2=1.0,
        headline="the CPU binds", reasons=frozenset({"cpu_test"}), precedence=15)
    monkeypatch.setattr(bindings_registry, "_LIMITS", dict(bindings_registry._LIMITS))
    register(limit)
    assert limits()["cpu_test"] is limit
    assert contention_limit({"cpu_test": "", "api_429": ""}, {}, 4) == "cpu_test"
    assert contention_limit({"cpu_test": "", "limiter": ""}, {}, 4) == "client_limiter"
    with pytest.raises(ValueError, match="registered twice"):
        register(limit)


def test_a_limit_is_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="ceiling"):
        BindingLimit(name="x", words="x", label="x", options=(), rows="ceiling")
    with pytest.raises(ValueError, match="headline"):
        BindingLimit(name="x", words="x", label="x", options=(), reasons=frozenset({"r"}))
    with pytest.raises(ValueError, match="names both"):
        register(BindingLimit(name="x", words="x", label="x", options=(),
                              kinds=(Kind.HOT_KEY,)))


# --- the readers --------------------------------------------------------------------------


def test_the_docs_verdict_table_follows_the_registry() -> None:
    kinds = [_codes(row[0])[0] for row in _table_rows("### Verdicts")]
    assert kinds == list(KINDS)
    contention = next(r for r in _table_rows("### Verdicts") if r[0] == "`contention`")
    named = contention[-1][contention[-1].index("naming the"):]
    assert _codes(named)[1:1 + len(BINDING_LIMITS)] == list(BINDING_LIMITS)


def test_the_docs_name_every_binding_limit_and_its_rows_model() -> None:
    plan = next(r for r in _table_rows("### The capacity plan") if "`binding_limit`" in r[0])
    assert set(_codes(plan[1])) >= set(limits())
    rows = {r[1]: _codes(r[0]) for r in _table_rows("### The rows follow the binding limit")}
    by_model = {m: [n for n, lim in limits().items() if lim.rows == m]
                for m in ("queueing", "usl", "ceiling")}
    ceiling_row = next(v for k, v in rows.items() if "shared ceiling" in k)
    assert set(by_model["ceiling"]) <= set(ceiling_row)
    assert by_model["usl"] == next(v for k, v in rows.items() if "USL" in k)
    assert "workers" in by_model["queueing"]
    assert ["workers"] in rows.values()


def test_the_alerts_name_their_verdict_and_share_its_thresholds() -> None:
    from collectors.profile import Profile
    from dashboard.rules import AlertingRule, AlertThresholds, build_rule_groups
    from models.advisor import AdvisorThresholds

    alerts = [r for r in build_rule_groups(Profile(), 300.0)[1].rules
              if isinstance(r, AlertingRule)]
    named = {a.alert: a.verdict for a in alerts}
    assert named["WorkqueueRetryStorm"] == Kind.RETRY_STORM
    assert named["WorkqueueStuckWorkers"] == Kind.STUCK_WORKERS
    assert named["WorkqueueBacklogGrowing"] == Kind.BACKLOG_GROWING
    th, at = AdvisorThresholds(), AlertThresholds()
    assert at.error_ratio == th.error_share_storm
    assert at.stuck_growth == th.stuck_growth_min


def test_the_cli_help_lists_every_kind() -> None:
    import argparse

    from dashboard.commands import advise as advise_cmd

    parser = argparse.ArgumentParser()
    advise_cmd.register(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = " ".join(sub.choices["advise"].description.split())
    for kind in KINDS:
        assert kind.value in text
    assert text.index("stuck_workers") < text.index("healthy")
