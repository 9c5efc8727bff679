"""Generated config files (issue 23, "Done when"; item 7's alias bomb is one shape of them):
YAML built from the config's own sections and keys with hostile values (nested maps and
lists, huge, negative and non-finite numbers, controls, long strings), YAML text with anchors,
aliases, merge keys, tags and broken syntax, read by :func:`collectors.config.load_config`
from a file: a :class:`~collectors.errors.ConfigError` with a one-line, bounded message, or a
config — never another exception, within a time bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from collectors import config as cfg
from collectors.errors import ConfigError
from tests.fuzz.strategies import fuzz_settings, hostile_numbers, hostile_text, time_bound

PER_EXAMPLE_S = 10.0
MAX_MESSAGE_CHARS = 2000
"""A config error quotes bounded excerpts (collectors.config's longest message is 1,000
characters; the origin, a path, comes on top)."""

SECTIONS: dict[str, set[str]] = {
    "prometheus": cfg._PROM_KEYS,
    "profile": cfg._PROFILE_KEYS,
    "analysis": cfg._ANALYSIS_KEYS,
}
"""The keys a config may hold, read from collectors.config (a new key is fuzzed too)."""

leaf: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), hostile_numbers, hostile_text,
    st.sampled_from(["5m", "15s", "http://127.0.0.1:1", "{namespace='a'}", "1.0e+12", "-1",
                     "64MiB", "30d", "1e308s", "queue", "name", "true"]))

value: st.SearchStrategy[Any] = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(hostile_text, st.sampled_from(
            sorted(cfg._LABEL_KEYS | cfg._APISERVER_KEYS | {"kube-system/deployment", "a"}))),
            inner, max_size=4)),
    max_leaves=10)


@st.composite
def documents(draw: st.DrawFn) -> dict[Any, Any]:
    doc: dict[Any, Any] = {}
    for section in draw(st.lists(st.sampled_from(sorted(SECTIONS)), max_size=3, unique=True)):
        keys = draw(st.lists(st.sampled_from(sorted(SECTIONS[section])), max_size=5))
        doc[section] = {k: draw(value) for k in keys} if draw(st.integers(0, 9)) else draw(value)
    if draw(st.integers(0, 4)) == 0:
        doc[draw(hostile_text)] = draw(value)  # an unknown top-level key
    return doc


SNIPPETS = [
    "a: &a [1, 2]\nb: *a\n",
    "prometheus: &p {url: http://x}\nprofile: *p\n",
    "base: &b {timeout: 5s}\nprometheus:\n  <<: *b\n",
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b]\n",
    "prometheus: !!python/object/apply:os.system ['true']\n",
    "prometheus: !!binary aGVsbG8=\n",
    "profile:\n\tworkers: 1\n",
    "profile: {workers: {'kube-system/deployment': 1.0e+12}}\n",
    "prometheus: {url: [}\n",
    "---\nprofile: {}\n---\nprofile: {}\n",
    "? [a, b]\n: c\n",
    "prometheus: {timeout: .nan, retries: .inf}\n",
    "\ufeffprofile: {}\n",
    "profile: {selector: \"\\x1b[2J\"}\n",
    "%YAML 1.1\n---\nprofile: 2001-01-01\n",
    "analysis: {thresholds: {a: 1, a: 2}}\n",
]
"""YAML text no dumper writes: anchors, aliases and an alias bomb, merge keys, Python and
binary tags, tabs, broken flow syntax, several documents, complex keys, .nan/.inf, a BOM, an
escape sequence, a date, a duplicate key."""


@st.composite
def texts(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 2)) == 0:
        text = draw(st.sampled_from(SNIPPETS))
        if draw(st.booleans()):  # spliced into a generated document, or cut short
            text = yaml.safe_dump(draw(documents()), allow_unicode=True) + text
        if draw(st.booleans()):
            text = text[:draw(st.integers(0, len(text)))]
        return text
    return yaml.safe_dump(draw(documents()), allow_unicode=draw(st.booleans()))


@fuzz_settings(max_examples=300, deadline_s=5.0)
@given(data=st.data())
def test_a_generated_config_is_read_or_refused_in_one_line(tmp_path_factory: Any,
                                                           data: st.DataObject) -> None:
    text = data.draw(texts(), label="config")
    path = Path(tmp_path_factory.mktemp("cfg")) / "queuelens.yaml"
    path.write_text(text, encoding="utf-8")
    with time_bound(PER_EXAMPLE_S, "load_config"):
        try:
            loaded = cfg.load_config(path)
        except ConfigError as exc:
            message = str(exc)
        else:
            assert isinstance(loaded, cfg.QueuelensConfig)
            return
    assert message.strip(), "an empty message"
    assert "\n" not in message.strip(), message[:500]
    assert len(message) <= MAX_MESSAGE_CHARS, message[:500]


def test_the_snippets_include_the_alias_bomb_and_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(SNIPPETS[3], encoding="utf-8")
    with pytest.raises(ConfigError, match=r"(?i)alias|anchor"):
        cfg.load_config(path)
