"""The one analysis settings object: step policy, wording, overrides, config file, CLI flags."""

from __future__ import annotations

import json

import pytest

from collectors.config import parse_config
from collectors.errors import ConfigError
from dashboard.cli import main
from models import fleet as fl
from models.errors import ModelInputError
from models.settings import AnalysisSettings

AT = fl.EPOCH_S + 40 * 86400 + 14 * 3600


@pytest.mark.parametrize(("range_s", "step_s"), [(7200.0, 60.0), (900.0, 15.0),
                                                 (86400.0, 720.0), (600.0, 15.0)])
def test_step_is_a_120th_of_the_range_never_under_15s(range_s: float, step_s: float) -> None:
    assert AnalysisSettings(range_s=range_s).step_s == step_s


def test_describe_states_range_step_window_and_objective() -> None:
    assert AnalysisSettings().describe() == (
        "last 2 h (a point every 60 s), rates over 5 min, p95 wait ≤ 1 s")
    s = AnalysisSettings(range_s=86400.0, window_s=120.0, slo_wait_s=0.25).with_overrides(
        slo_quantile=0.99)
    assert s.describe() == ("last 24 h (a point every 12 min), rates over 2 min, "
                            "p99 wait ≤ 0.25 s")


def test_overrides_keep_what_is_not_given() -> None:
    base = AnalysisSettings(range_s=3600.0)
    s = base.with_overrides(thresholds={"util_target": "0.6"})
    assert s.range_s == 3600.0
    assert s.thresholds.util_target == 0.6
    assert s.thresholds.util_high == base.thresholds.util_high


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"thresholds": {"no_such": 1}}, "unknown threshold 'no_such'"),
    ({"thresholds": {"util_target": "lots"}}, "expected a number"),
    ({"thresholds": {"util_target": 1.5}}, "between 0 and 1"),
    ({"range_s": 0.0}, "the range must be a positive duration"),
    ({"range_s": 400 * 86400.0}, "and 90 days"),
    ({"range_s": 1e-300}, "between 15 s and 90 days"),
    ({"slo_wait_s": float("nan")}, "the wait SLO must be a positive duration"),
])
def test_bad_settings_are_one_sentence(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ModelInputError, match=needle):
        AnalysisSettings().with_overrides(**kwargs)  # type: ignore[arg-type]


def test_config_file_analysis_section() -> None:
    cfg = parse_config("analysis:\n  window: 2m\n  range: 6h\n  slo: 250ms\n"
                       "  slo_quantile: 0.99\n  thresholds:\n    util_target: 0.6\n")
    s = cfg.analysis
    assert (s.window_s, s.range_s, s.slo_wait_s, s.slo_quantile) == (120.0, 21600.0, 0.25,
                                                                     0.99)
    assert s.thresholds.util_target == 0.6
    assert parse_config("{}").analysis == AnalysisSettings()


@pytest.mark.parametrize(("text", "needle"), [
    ("analysis:\n  windw: 5m\n", "windw"),
    ("analysis:\n  range: soon\n", "analysis.range"),
    ("analysis:\n  thresholds:\n    nope: 1\n", "unknown threshold 'nope'"),
    ("analysis:\n  slo_quantile: high\n", "slo_quantile"),
])
def test_config_file_errors_name_the_key(text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_config(text)


def test_config_then_flags_reach_the_advisor(tmp_path: object, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    from pathlib import Path

    cfg = Path(str(tmp_path)) / "q.yaml"
    cfg.write_text("analysis:\n  range: 1h\n  thresholds:\n    util_target: 0.5\n")
    args = ["advise", "--demo", "--at", str(AT), "--queue", "replicaset", "--config", str(cfg),
            "--format", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["range_s"] == 3600.0
    assert out["settings"]["thresholds"]["util_target"] == 0.5
    plan = out["queues"][0]["plan"]
    lam, svc = plan["demand_per_s"], plan["service_mean_s"]
    # the tighter cap chose the count: the fewest c with λ·E[S]/c ≤ 0.5
    assert plan["recommended_workers"] == min(c for c in range(1, 99) if lam * svc / c <= 0.5)
    assert main([*args, "--range", "2h", "--threshold", "util_target=0.7"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["settings"]["range_s"] == 7200.0  # the flag wins over the file
    assert again["settings"]["thresholds"]["util_target"] == 0.7


@pytest.mark.parametrize(("argv", "needle"), [
    (["--threshold", "util_target"], "--threshold expects NAME=VALUE"),
    (["--threshold", "nope=1"], "--threshold: unknown threshold 'nope'"),
    (["--threshold", "util_target=2"], "between 0 and 1"),
])
def test_bad_flags_exit_2_with_one_line(argv: list[str], needle: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--demo", "--at", str(AT), *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_bad_quantile_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["advise", "--demo", "--slo-quantile", "1.5"])
    assert exc.value.code == 2
    assert "between 0 and 1" in capsys.readouterr().err
