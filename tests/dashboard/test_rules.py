"""`queuelens rules`: the YAML passes promtool, and a real Prometheus evaluates it correctly.

Prometheus evaluates rules at wall-clock time, so the scenario of
:mod:`tests.support.workqueue_om` is backfilled with its last sample at "now" (not at its
usual 2024 timestamps). Its counters are linear, so rate() over a window that ends g seconds
after the last sample lies in [truth·(1 − g/W), truth] (Prometheus extrapolates at most to the
window end and at least half a step past the last sample); ratios of two rates are exact.
"""

from __future__ import annotations

import math
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import requests
import yaml

from collectors.config import parse_config
from collectors.profile import Profile
from dashboard.cli import main as cli_main
from dashboard.rules import (
    DEFAULT_RUNBOOK_URL,
    build_rule_groups,
    group_labels,
    prometheus_duration,
    recorded_names,
    render_yaml,
    widen_grouping,
)
from tests.conftest import require_binary
from tests.support.prometheus import HINT, PrometheusProcess, backfill, start_prometheus
from tests.support.workqueue_om import (
    TRUTH,
    WEIRD,
    WEIRD_WORKERS_FROM_CONFIG,
    QueueSpec,
    generate,
    main_scenario,
)

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "deploy" / "queuelens-rules.yaml"
WINDOW_S = 300.0
STEP_S = 5
DURATION_S = 900  # > the stuck alert's 600 s longest-running threshold
STORM = "secrets"
# A retry storm: 90 % of reconciles fail, 9 of every 10 adds are rate-limited retries.
STORM_SPEC = QueueSpec(
    STORM, adds=10, done=10, work_mean=0.1, wait_mean=0.5,
    work_shares={7: 1.0}, wait_shares={8: 1.0}, depth={"0": 1}, retries=9,
    results={"success": 1, "error": 9, "requeue": 0, "requeue_after": 0}, errors=9, workers=4,
)
# One queue in two clusters, told apart by `cluster` alone (same name, job and instance): the
# rules must keep two series with each cluster's own numbers, not their sum.
TWIN = "twin"
TWIN_SPECS = tuple(QueueSpec(
    TWIN, adds=adds, done=adds, work_mean=0.1, wait_mean=0.2, work_shares={7: 1.0},
    wait_shares={8: 1.0}, depth={"0": 1}, retries=0.0, errors=errors,
    results={"success": adds - errors, "error": errors, "requeue": 0, "requeue_after": 0},
    workers=4, extra={"cluster": cluster})
    for cluster, adds, errors in (("east", 3.0, 0.3), ("west", 5.0, 0.0)))
TWIN_TRUTH = {"east": {"arrival_rate_per_s": 3.0, "throughput_per_s": 3.0, "busy_workers": 0.3,
                       "utilization": 0.3 / 4, "queue_wait_mean_s": 0.2, "error_ratio": 0.1},
              "west": {"arrival_rate_per_s": 5.0, "throughput_per_s": 5.0, "busy_workers": 0.5,
                       "utilization": 0.5 / 4, "queue_wait_mean_s": 0.2, "error_ratio": 0.0}}
CONFIG = {"profile": {"workers": {WEIRD: WEIRD_WORKERS_FROM_CONFIG}}}
CONFIG_YAML = yaml.safe_dump(CONFIG)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(args)
    out, err = capsys.readouterr()
    return code, out, err


# --- the file itself ----------------------------------------------------------------------


def test_committed_rules_file_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["rules"], capsys)
    assert code == 0
    assert COMMITTED.read_text() == out, (
        "deploy/queuelens-rules.yaml is stale: run `queuelens rules -o deploy/queuelens-rules.yaml`"
    )


def test_rules_read_the_profile_expressions() -> None:
    """One source of PromQL: every recorded expression is the profile's own expression —
    exactly, when the rules keep only the queue label; with its groupings widened otherwise."""
    profile = Profile()
    expected = {s.signal: s.promql for s in (*profile.queries(120), *profile.derived_queries(120))}
    names = recorded_names(profile, 120, by=("name",))
    rules = {r.record: r.expr for r in build_rule_groups(profile, 120, by=("name",))[0].rules}  # type: ignore[union-attr]
    assert names["arrival_rate_per_s"] == "name:workqueue_adds:rate2m"
    for signal, name in names.items():
        assert rules[name] == expected[signal]
    assert "[120s]" in rules[names["utilization"]]
    wide = {r.record: r.expr for r in build_rule_groups(profile, 120)[0].rules}  # type: ignore[union-attr]
    wide_names = recorded_names(profile, 120)
    assert wide_names["arrival_rate_per_s"] == "cluster_namespace_job_name:workqueue_adds:rate2m"
    for signal, name in wide_names.items():
        assert wide[name] == widen_grouping(expected[signal], "name", "controller",
                                            ("cluster", "namespace", "job", "name"))
        assert "by (name)" not in wide[name]
        assert "by (controller)" not in wide[name]


def test_widen_grouping_leaves_strings_and_other_labels() -> None:
    labels = ("cluster", "name")
    assert widen_grouping('sum by (name, le) (rate(x{job="by (name)"}[5m]))', "name",
                          "controller", labels) == \
        'sum by (cluster, name, le) (rate(x{job="by (name)"}[5m]))'
    assert widen_grouping("a / on (name) max by (controller) (b)", "name", "controller",
                          labels) == "a / on (cluster, name) max by (cluster, controller) (b)"
    assert widen_grouping("sum by (job) (x) and sum without (name) (y)", "name", "controller",
                          labels) == "sum by (job) (x) and sum without (name) (y)"


def test_group_labels_always_keep_the_queue_label() -> None:
    queue_profile = replace(Profile(), queue_label="queue")
    assert group_labels(Profile()) == ("cluster", "namespace", "job", "name")
    assert group_labels(Profile(), ("cluster",)) == ("cluster", "name")
    assert group_labels(queue_profile, ("name", "cluster")) == ("name", "cluster", "queue")
    assert recorded_names(Profile(), 300, ("namespace",))["busy_workers"] == \
        "namespace_name:workqueue_work_duration_seconds_sum:rate5m"


def test_by_flag_and_config_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "q.yaml"
    cfg.write_text("analysis:\n  aggregate_by: [region, name]\n")
    code, out, err = run_cli(["rules", "--config", str(cfg)], capsys)
    assert code == 0, err
    assert "record: region_name:workqueue_adds:rate5m" in out
    assert "sum by (region, name) (rate(workqueue_adds_total[300s]))" in out
    code, out, err = run_cli(["rules", "--config", str(cfg), "--by", "zone"], capsys)
    assert code == 0, err
    assert "record: zone_name:workqueue_adds:rate5m" in out  # the flag wins over the config
    assert "--by zone" in out.splitlines()[0]
    for bad, needle in (("1x", "not a valid Prometheus label name"),
                        ("__name__", "reserved label name"), ("a,a", "listed twice"),
                        ("a-b", "not a valid Prometheus label name"),
                        (",".join(f"l{i}" for i in range(17)), "1 to 16 label names")):
        with pytest.raises(SystemExit) as stop:
            cli_main(["rules", "--by", bad])
        err = capsys.readouterr().err
        assert stop.value.code == 2
        assert err.count("\n") == 1, err
        assert needle in err, err
        assert "--by" in err, err
    cfg.write_text("analysis:\n  aggregate_by: [ok, 'no good']\n")
    code, _, err = run_cli(["rules", "--config", str(cfg)], capsys)
    assert code == 2
    assert "analysis.aggregate_by" in err
    assert "'no good'" in err
    assert err.count("\n") == 1


def test_every_alert_links_its_runbook(capsys: pytest.CaptureFixture[str]) -> None:
    """Each alert's runbook_url is an anchor that the docs page has: GitHub's anchor of a
    heading is its text lower-cased, spaces to '-', punctuation other than '-'/'_' dropped."""
    docs = (REPO / "docs" / "operations.md").read_text()
    anchors = {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
               for line in docs.splitlines() if line.startswith("#")}
    code, out, _ = run_cli(["rules"], capsys)
    assert code == 0
    alerts = list(yaml.safe_load(out)["groups"][1]["rules"])
    assert len(alerts) == 4
    for rule in alerts:
        url = rule["annotations"]["runbook_url"]
        page, _, anchor = url.partition("#")
        assert page == DEFAULT_RUNBOOK_URL
        assert page.endswith("/docs/operations.md")
        assert anchor == rule["alert"].lower()
        assert anchor in anchors, (url, sorted(anchors))
    code, out, _ = run_cli(["rules", "--runbook-url", "https://wiki.example.com/q"], capsys)
    assert code == 0
    urls = [r["annotations"]["runbook_url"] for r in yaml.safe_load(out)["groups"][1]["rules"]]
    assert urls[0] == "https://wiki.example.com/q#workqueuesaturated"
    for bad in ("ftp://x/y", "https://x/y#top", "https://x/{{ $labels.name }}", "not a url",
                "https://x/" + "a" * 3000):
        with pytest.raises(SystemExit) as stop:
            cli_main(["rules", "--runbook-url", bad])
        err = capsys.readouterr().err
        assert stop.value.code == 2
        assert err.count("\n") == 1, err
        assert "--runbook-url" in err, err


def test_promtool_accepts_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    promtool = require_binary("promtool", HINT)
    cfg = tmp_path / "queuelens.yaml"
    selector = '{namespace="prod", job=~"ctrl-.*"}'
    cfg.write_text(yaml.safe_dump({"profile": {**CONFIG["profile"], "selector": selector}}))
    for args in (["rules"], ["rules", "--window", "90s", "--config", str(cfg)]):
        out_file = tmp_path / "rules.yaml"
        code, _, err = run_cli([*args, "-o", str(out_file)], capsys)
        assert code == 0, err
        check = subprocess.run([promtool, "check", "rules", str(out_file)],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "SUCCESS: 14 rules found" in check.stdout
    text = out_file.read_text()
    assert 'namespace="prod"' in text
    assert "[90s]" in text
    assert ":rate1m30s" in text


def test_component_base_without_workers_drops_utilization(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    promtool = require_binary("promtool", HINT)
    cfg = tmp_path / "cb.yaml"
    cfg.write_text("profile:\n  base: component-base\n")
    out_file = tmp_path / "rules.yaml"
    code, _, err = run_cli(["rules", "--config", str(cfg), "-o", str(out_file)], capsys)
    assert code == 0
    assert "no utilization rule and no saturation alert" in err
    doc = yaml.safe_load(out_file.read_text())
    alerts = [r["alert"] for r in doc["groups"][1]["rules"]]
    assert alerts == ["WorkqueueBacklogGrowing", "WorkqueueRetryStorm", "WorkqueueStuckWorkers"]
    assert "controller_runtime" not in out_file.read_text()
    check = subprocess.run([promtool, "check", "rules", str(out_file)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["rules", "--window", "0.5s"], capsys)
    assert code == 2
    assert "--window must be between 1s and 1d" in err
    code, _, err = run_cli(["rules", "-o", str(tmp_path / "missing" / "r.yaml")], capsys)
    assert code == 2
    assert "cannot write" in err
    assert "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("profile:\n  selector: 'up'\n")
    code, _, err = run_cli(["rules", "--config", str(bad)], capsys)
    assert code == 2
    assert "selector" in err
    with pytest.raises(SystemExit):
        cli_main(["rules", "--window", "soon"])
    assert "not a duration" in capsys.readouterr().err


def test_prometheus_duration() -> None:
    assert [prometheus_duration(s) for s in (300, 5400, 90, 1.5, 86400 + 60)] == [
        "5m", "1h30m", "1m30s", "1s500ms", "1d1m"]
    with pytest.raises(ValueError, match="at least 1 ms"):
        prometheus_duration(0)


def test_escaped_queue_name_in_rules() -> None:
    """A configured queue name with a quote and a backslash stays one PromQL string literal."""
    profile = parse_config(CONFIG_YAML).profile
    text = render_yaml(build_rule_groups(profile, WINDOW_S))
    expr = next(r["expr"] for r in yaml.safe_load(text)["groups"][0]["rules"]
                if r["record"].endswith(":ratio_rate5m") and "busy" in r["record"])
    assert '{name="cfg\\"map\\\\sync"}' in expr


# --- a real Prometheus evaluating the rules -----------------------------------------------


@pytest.fixture(scope="module")
def ruled_prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[PrometheusProcess, float]]:
    """Prometheus with the scenario ending now, the generated rules, 1 s evaluation."""
    work = tmp_path_factory.mktemp("prom-rules")
    cfg = work / "queuelens.yaml"
    cfg.write_text(CONFIG_YAML)
    rules_file = work / "rules.yaml"
    assert cli_main(["rules", "--config", str(cfg), "-o", str(rules_file)]) == 0
    queues, processes = main_scenario()
    last = int(time.time())
    start = last - DURATION_S + STEP_S
    text = generate([*queues, STORM_SPEC, *TWIN_SPECS], processes, start=start,
                    duration_s=DURATION_S, step_s=STEP_S)
    tsdb = backfill(text, work)
    server = start_prometheus(work, tsdb=tsdb, rule_files=[rules_file])
    try:
        yield server, float(last)
    finally:
        server.stop()


def _query(url: str, promql: str) -> list[dict[str, object]]:
    resp = requests.get(f"{url}/api/v1/query", params={"query": promql}, timeout=10)
    resp.raise_for_status()
    result: list[dict[str, object]] = resp.json()["data"]["result"]
    return result


def _first_samples(url: str, record: str, wanted: set[str], deadline: float
                   ) -> dict[str, tuple[float, float]]:
    """queue -> (timestamp, value) of the earliest recorded sample, once every wanted queue has
    one (or the deadline passed)."""
    while True:
        out: dict[str, tuple[float, float]] = {}
        for series in _query(url, f"{record}[2m]"):
            labels = series["metric"]
            values = series["values"]
            assert isinstance(labels, dict)
            assert isinstance(values, list)
            t, v = values[0]
            if labels["name"] != TWIN:  # two series, checked by their own test
                out[labels["name"]] = (float(t), float(v))
        if wanted <= out.keys() or time.monotonic() > deadline:
            return out
        time.sleep(0.25)


@pytest.mark.prometheus
def test_recorded_series_match_ground_truth(
    ruled_prometheus: tuple[PrometheusProcess, float],
) -> None:
    server, last = ruled_prometheus
    names = recorded_names(Profile(), WINDOW_S)
    deadline = time.monotonic() + 30
    truth = {q: dict(v) for q, v in TRUTH.items()}
    truth[WEIRD]["utilization"] = 0.05 / WEIRD_WORKERS_FROM_CONFIG
    truth[STORM] = {"arrival_rate_per_s": 10.0, "throughput_per_s": 10.0, "busy_workers": 1.0,
                    "utilization": 0.25, "queue_wait_mean_s": 0.5, "retries_per_s": 9.0,
                    "error_ratio": 0.9}
    truth["deployment"]["error_ratio"] = 0.25 / 5
    truth["endpoints"]["error_ratio"] = 0.5 / 2
    truth["replicaset"]["depth_growth_per_s"] = 4.0
    truth["deployment"]["depth_growth_per_s"] = 0.0
    truth["deployment"]["unfinished_work_growth"] = 0.0
    truth["replicaset"]["unfinished_work_growth"] = 2.0
    rates = {"arrival_rate_per_s", "throughput_per_s", "busy_workers", "utilization",
             "retries_per_s"}
    exact = {"queue_wait_mean_s", "error_ratio", "depth_growth_per_s", "unfinished_work_growth"}
    checked = 0
    for signal in sorted(rates | exact):
        wanted = {q for q, by_signal in truth.items() if signal in by_signal}
        samples = _first_samples(server.url, names[signal], wanted, deadline)
        for queue, expected_by_signal in truth.items():
            expected = expected_by_signal.get(signal)
            if expected is None:
                continue
            assert queue in samples, (signal, queue, sorted(samples), server.log_tail())
            t, value = samples[queue]
            gap = t - last
            assert 0 < gap < WINDOW_S / 2, (signal, queue, gap)
            if signal in rates:
                lower = expected * (1 - gap / WINDOW_S)
                assert lower - 1e-9 <= value <= expected + 1e-9, (signal, queue, value, expected)
            else:
                assert value == pytest.approx(expected, rel=1e-9, abs=1e-9), (signal, queue)
            checked += 1
    assert checked >= 35
    # The longest-running item of the stuck queue started with the data: last sample's age.
    longest = _first_samples(server.url, names["longest_running_s"], {"replicaset", "deployment"},
                             deadline)
    assert longest["replicaset"][1] == pytest.approx(DURATION_S - STEP_S)
    assert longest["deployment"][1] == pytest.approx(0.6)


@pytest.mark.prometheus
def test_alerts_fire_for_the_right_queues(
    ruled_prometheus: tuple[PrometheusProcess, float],
) -> None:
    server, _ = ruled_prometheus
    expected = {
        ("WorkqueueSaturated", "replicaset"),
        ("WorkqueueBacklogGrowing", "replicaset"),
        ("WorkqueueStuckWorkers", "replicaset"),
        ("WorkqueueRetryStorm", STORM),
        # endpoints fails 0.5 of its 2 reconciles/s and 0.5 of its 2 adds/s are retries: a
        # quarter, the advisor's retry-storm share (error_share_storm)
        ("WorkqueueRetryStorm", "endpoints"),
    }
    deadline = time.monotonic() + 30
    seen: set[tuple[str, str]] = set()
    while time.monotonic() < deadline:
        active = _query(server.url, 'ALERTS{alertstate=~"pending|firing"}')
        seen = set()
        for series in active:
            labels = series["metric"]
            assert isinstance(labels, dict)
            seen.add((labels["alertname"], labels["name"]))
            assert labels["severity"] in ("warning", "critical")
        if seen >= expected:
            break
        time.sleep(0.25)
    assert seen == expected, (seen, server.log_tail())
    # Annotations are rendered by Prometheus with the queue's label and the alert's value.
    resp = requests.get(f"{server.url}/api/v1/alerts", timeout=10).json()
    backlog = next(a for a in resp["data"]["alerts"] if a["labels"]["alertname"]
                   == "WorkqueueBacklogGrowing")
    summary = backlog["annotations"]["summary"]
    assert summary.startswith("Backlog of work queue replicaset grows by ")
    growth = float(summary.split("grows by ")[1].split()[0])
    assert 3.5 <= growth <= 4.0 + 1e-9  # arrivals 20/s − completions 16/s
    assert not math.isnan(growth)


@pytest.mark.prometheus
def test_one_queue_in_two_clusters_stays_two_series(
    ruled_prometheus: tuple[PrometheusProcess, float],
) -> None:
    server, last = ruled_prometheus
    names = recorded_names(Profile(), WINDOW_S)
    deadline = time.monotonic() + 30
    for signal in TWIN_TRUTH["east"]:
        series: dict[str, tuple[dict[str, str], float, float]] = {}
        while time.monotonic() < deadline:
            series = {}
            for s in _query(server.url, f'{names[signal]}{{name="{TWIN}"}}[2m]'):
                labels, values = s["metric"], s["values"]
                assert isinstance(labels, dict)
                assert isinstance(values, list)
                t, v = values[0]
                series[labels.get("cluster", "")] = (labels, float(t), float(v))
            if len(series) == 2:
                break
            time.sleep(0.25)
        assert set(series) == {"east", "west"}, (signal, series, server.log_tail())
        for cluster, (labels, t, value) in series.items():
            assert set(labels) == {"__name__", "cluster", "job", "name"}, labels
            expected = TWIN_TRUTH[cluster][signal]
            gap = t - last
            assert 0 < gap < WINDOW_S / 2
            if signal in ("queue_wait_mean_s", "error_ratio"):  # ratios of two rates: exact
                assert value == pytest.approx(expected, rel=1e-9, abs=1e-9), (signal, cluster)
            else:
                assert expected * (1 - gap / WINDOW_S) - 1e-9 <= value <= expected + 1e-9, \
                    (signal, cluster, value, expected)


def test_thresholds_are_used() -> None:
    from dashboard.rules import AlertThresholds

    groups = build_rule_groups(Profile(), WINDOW_S, replace(AlertThresholds(), utilization=0.8,
                                                            stuck_for_s=120))
    alerts = {r.alert: r for r in groups[1].rules}  # type: ignore[union-attr]
    assert alerts["WorkqueueSaturated"].expr.endswith(">= 0.8")
    assert alerts["WorkqueueStuckWorkers"].as_dict()["for"] == "2m"
