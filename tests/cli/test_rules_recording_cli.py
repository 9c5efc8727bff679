"""`queuelens rules --recording`: the read group next to the usual ones, promtool- and
vmalert-clean, named as the collectors look for it, and bad input (exit 2, one line)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from collectors.config import load_config
from collectors.profile import RECORDED_AGGREGATE_BY, Profile
from dashboard.rules import GROUP_ALERTS, GROUP_READ, GROUP_RECORDING
from models.settings import DEFAULT_AGGREGATE_BY
from tests.conftest import require_binary
from tests.support import prometheus, victoria
from tests.support.cli import run_main
from tests.support.recorded import write_rules


def _groups(path: Path) -> dict[str, dict[str, object]]:
    return {g["name"]: g for g in yaml.safe_load(path.read_text())["groups"]}


def test_the_read_group_records_every_rate_at_both_windows(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "rules.yaml")
    groups = _groups(rules)
    assert list(groups) == [GROUP_RECORDING, GROUP_ALERTS, GROUP_READ]
    # evaluated every step of the range read (2 h: 60 s)
    assert groups[GROUP_READ]["interval"] == groups[GROUP_RECORDING]["interval"] == "1m"
    recorded = [r["record"] for g in groups.values() for r in g["rules"]  # type: ignore[attr-defined]
                if "record" in r]
    assert len(recorded) == len(set(recorded))  # the recording group's four are not repeated
    # what the reads look for: every rate of the profile at the snapshot's 5m and the range
    # read's 1m15s (60 s step + 15 s scrape interval), all of them in the file
    profile = Profile()
    wanted = {profile.recorded_name(r, w) for rates in profile.read_rates().values()
              for r in rates for w in (300.0, 75.0)}
    assert wanted <= set(recorded)
    assert profile.recorded_windows(recorded) == {"1m15s": 12, "5m": 12}
    pattern = re.compile(profile.recorded_presence_regex() or "")
    assert all(pattern.fullmatch(n) for n in wanted)
    text = rules.read_text()
    assert "Evaluate it every 1m" in text
    assert "--recording" in text.splitlines()[0]


def test_the_file_passes_promtool_check_rules(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "rules.yaml", "--range", "6h", "--scrape-interval", "30s",
                        "--by", "namespace,name")
    promtool = require_binary("promtool", prometheus.HINT)
    done = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    read = _groups(rules)[GROUP_READ]
    # a 6 h range is a 180 s step: window max(180 + 30, 4 × 30) = 210 s, every step
    assert read["interval"] == "3m"
    names = [r["record"] for r in read["rules"]]  # type: ignore[attr-defined]
    assert "namespace_name:workqueue_adds:rate3m30s" in names
    assert "namespace_job_instance_pod:rest_client_requests:rate3m30s" in names


def test_vmalert_parses_the_file(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "rules.yaml")
    vmalert = require_binary("vmalert", victoria.HINT)
    done = subprocess.run([vmalert, "-dryRun", f"-rule={rules}"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_reads_look_for_the_labels_the_rules_kept(tmp_path: Path) -> None:
    assert RECORDED_AGGREGATE_BY == DEFAULT_AGGREGATE_BY
    cfg = tmp_path / "q.yaml"
    cfg.write_text("analysis:\n  aggregate_by: [namespace, name]\n")
    profile = load_config(cfg).profile
    assert profile.recorded_by == ("namespace", "name")
    rules = write_rules(tmp_path / "rules.yaml", "--config", str(cfg))
    names = {r["record"] for r in _groups(rules)[GROUP_READ]["rules"]}  # type: ignore[attr-defined]
    assert profile.recorded_windows(names) == {"1m15s": 12, "5m": 8}  # 4 in the recording group


def test_a_selector_on_a_label_the_rules_sum_away_reads_raw() -> None:
    from collectors.profile import parse_selector

    profile = Profile(selector=parse_selector('{pod="x"}'))
    assert profile.recorded_presence_query() is None
    assert "pod" in (profile.recorded_unusable() or "")
    names = {n for n, _ in Profile().recording_rules([75.0])}
    assert not any(":rate" in q.promql for q in profile.queries(75.0, recorded=names))
    kept = Profile(selector=parse_selector('{namespace="x", name=~"a.*"}'))
    assert kept.recorded_unusable() is None
    adds = next(q for q in kept.queries(75.0, recorded=names)
                if q.signal == "arrival_rate_per_s")
    assert adds.promql == ('sum by (name) (cluster_namespace_job_name:workqueue_adds:rate1m15s'
                           '{namespace="x", name=~"a.*"})')


@pytest.mark.parametrize(("argv", "message"), [
    (["rules", "--scrape-interval", "30s"], "--scrape-interval sizes the read group"),
    (["rules", "--range", "6h"], "--range sizes the read group"),
    (["rules", "--recording", "--scrape-interval", "2h"], "--scrape-interval must be between"),
])
def test_bad_input_is_one_line(argv: list[str], message: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(argv, capsys)
    assert code == 2
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_recorded_rules_key_is_one_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "q.yaml"
    cfg.write_text("profile:\n  recorded_rules: maybe\n")
    code, _, err = run_main(["rules", "--config", str(cfg)], capsys)
    assert code == 2
    assert "recorded_rules: expected true or false" in err
    assert len(err.strip().splitlines()) == 1
