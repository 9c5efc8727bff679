"""Reading each series of an HA pair once (issue 23 §3): the PromQL and the config."""

from __future__ import annotations

import re

import pytest

from collectors.config import parse_config
from collectors.errors import ConfigError
from collectors.profile import _RANGE_CALL, Profile, parse_selector

HOSTILE = ['a}b]c', 'q"uote\\d', "x[5m])"]
"""Queue names that end a naively matched selector or range early."""


@pytest.mark.parametrize("profile", [
    Profile(), Profile(selector=parse_selector('{namespace="n}s", job=~"a|b"}'))])
def test_every_range_function_is_read_once_per_series(profile: Profile) -> None:
    plain = profile.queries(300.0, HOSTILE)
    deduped = Profile(**{**profile.__dict__, "replica_label": "replica"}).queries(300.0, HOSTILE)
    assert [sq.signal for sq in plain] == [sq.signal for sq in deduped]
    for a, b in zip(plain, deduped, strict=True):
        calls = len(_RANGE_CALL.findall(a.promql))
        assert calls > 0 or a.signal == "depth_while_idle", a.promql
        instant = 1 if a.signal == "depth_while_idle" else 0
        assert b.promql.count("max without (replica) (") == calls + instant, b.promql
        # every wrapped call is whole: stripping the wrappers gives the plain query back
        unwrapped = re.sub(r"max without \(replica\) \(", "", b.promql)
        assert len(unwrapped) == len(a.promql) + calls + instant  # one ")" per wrapper


def test_without_the_label_nothing_changes() -> None:
    p = Profile()
    assert p.deduplicated("sum by (name) (rate(x[5m]))") == "sum by (name) (rate(x[5m]))"
    assert "max without" not in p.topology_query(300.0)
    assert "max without (replica)" in Profile(replica_label="replica").topology_query(300.0)


def test_the_detection_query_names_every_usual_label() -> None:
    q = Profile(replica_label="ha").replica_query(300.0)
    assert q.startswith("count by (ha, replica, prometheus_replica, __replica__) (")
    assert "max without" not in Profile(replica_label="ha").replica_query(300.0)


def test_the_config_key() -> None:
    assert parse_config("profile:\n  replica_label: prometheus_replica\n"
                        ).profile.replica_label == "prometheus_replica"
    assert parse_config("profile: {}\n").profile.replica_label is None
    with pytest.raises(ConfigError, match="label name"):
        parse_config("profile:\n  replica_label: 'not a label'\n")
