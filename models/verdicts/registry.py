"""The verdict rules as a registry: each with its kind, its order of impact, what it reads
and what suppresses it — the one place the advisor's rules are put in order.

:func:`run` evaluates the rules in the order of :data:`RULES` (every rule after the rules it
reads or is suppressed by; the order is also the order the rules leave their notes in), skips
a rule whose gate is closed or one of whose suppressors was found, and returns the verdicts
by impact: severity first (critical, warning, info, ok), then the rule's ``impact``
(:data:`KINDS`).

Gates (:data:`Gate`): ``always``; ``sized`` — λ, E[S] and c are all usable (the capacity
rules); ``unsized`` — one of them is missing (an idle queue needs no work time); ``alone`` —
no other rule found anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from models.verdicts import (
    capacity,
    contention,
    fallback,
    hot_key,
    long_passes,
    requeue,
    retry_storm,
    starvation,
    stuck,
)
from models.verdicts.context import Ctx
from models.verdicts.verdict import SEVERITIES, Headline, Kind, Verdict

__all__ = ["KINDS", "RULES", "Gate", "Rule", "headline", "rule", "run"]

Gate = Literal["always", "sized", "unsized", "alone"]

Evaluate = Callable[[Ctx, Mapping[Kind, Verdict]], Verdict | None]
"""(the queue's context, the verdicts found so far by kind) → the rule's verdict or None."""


@dataclass(frozen=True)
class Rule:
    """One verdict rule."""

    kind: Kind
    impact: int
    """Tie-break order among verdicts of one severity: lower first."""
    evaluate: Evaluate
    headline: Headline
    reads: tuple[Kind, ...] = ()
    """Verdicts the rule reads (the hot-key and backlog rules read the contention verdict)."""
    suppressed_by: tuple[Kind, ...] = ()
    """Verdicts that, when found, keep this rule from being evaluated."""
    gate: Gate = "always"


def _registry(*rules: Rule) -> tuple[Rule, ...]:
    """The rules in evaluation order, checked: one rule per kind, every kind has its rule,
    every rule comes after the rules it reads or is suppressed by, and :class:`Kind` lists
    the kinds in the order of impact (so what reads the kinds alone — the CLI's help — lists
    them in that order too)."""
    seen: set[Kind] = set()
    for r in rules:
        if r.kind in seen:
            raise ValueError(f"verdict kind {r.kind} has two rules")
        later = [k for k in (*r.reads, *r.suppressed_by) if k not in seen]
        if later:
            raise ValueError(f"the {r.kind} rule depends on rules evaluated after it: {later}")
        seen.add(r.kind)
    if seen != set(Kind):
        raise ValueError(f"verdict kinds without a rule: {sorted(set(Kind) - seen)}")
    if len({r.impact for r in rules}) != len(rules):
        raise ValueError("two rules share an impact rank")
    if tuple(r.kind for r in sorted(rules, key=lambda r: r.impact)) != tuple(Kind):
        raise ValueError("the members of Kind must be declared in the order of impact")
    return rules


RULES: tuple[Rule, ...] = _registry(
    Rule(Kind.STUCK_WORKERS, 10, stuck.stuck_workers, stuck.headline),
    Rule(Kind.RETRY_STORM, 20, retry_storm.retry_storm, retry_storm.headline),
    Rule(Kind.CONTENTION, 40, contention.contention, contention.headline),
    Rule(Kind.HOT_KEY, 60, hot_key.hot_key, hot_key.headline, reads=(Kind.CONTENTION,)),
    Rule(Kind.LONG_PASSES, 90, long_passes.long_passes, long_passes.headline),
    Rule(Kind.REQUEUE_MISUSE, 80, requeue.requeue_misuse, requeue.headline,
         reads=(Kind.CONTENTION, Kind.HOT_KEY, Kind.STUCK_WORKERS)),  # late polls: who binds
    Rule(Kind.PRIORITY_STARVATION, 70, starvation.priority_starvation, starvation.headline),
    Rule(Kind.INSUFFICIENT_DATA, 110, fallback.insufficient, fallback.insufficient_headline,
         gate="unsized"),
    Rule(Kind.BACKLOG_GROWING, 30, capacity.backlog_growing, capacity.backlog_headline,
         reads=(Kind.CONTENTION, Kind.REQUEUE_MISUSE), gate="sized"),
    Rule(Kind.ADD_WORKERS, 50, capacity.add_workers, capacity.add_workers_headline,
         reads=(Kind.CONTENTION, Kind.REQUEUE_MISUSE),  # the contention rule's notes; late
         # polls, which size the queue themselves
         suppressed_by=(Kind.RETRY_STORM, Kind.CONTENTION, Kind.HOT_KEY, Kind.STUCK_WORKERS),
         gate="sized"),
    Rule(Kind.OVER_PROVISIONED, 100, capacity.over_provisioned,
         capacity.over_provisioned_headline,
         suppressed_by=(Kind.HOT_KEY, Kind.STUCK_WORKERS, Kind.LONG_PASSES,
                        Kind.BACKLOG_GROWING, Kind.ADD_WORKERS),
         gate="sized"),
    Rule(Kind.HEALTHY, 120, fallback.healthy, fallback.healthy_headline, gate="alone"),
)
"""Every rule, in evaluation order."""

_BY_KIND: Mapping[Kind, Rule] = MappingProxyType({r.kind: r for r in RULES})

KINDS: tuple[Kind, ...] = tuple(r.kind for r in sorted(RULES, key=lambda r: r.impact))
"""Every verdict kind, in the tie-break order of impact."""

_RANK_SEVERITY: Mapping[str, int] = MappingProxyType({s: i for i, s in enumerate(SEVERITIES)})


def rule(kind: Kind | str) -> Rule:
    return _BY_KIND[Kind(kind)]


def headline(kind: Kind | str, evidence: Mapping[str, Any], recommendation: Mapping[str, Any]
             ) -> str:
    """One line of plain words for a verdict, from its own numbers (its rule's headline)."""
    return rule(kind).headline(evidence, recommendation)


def _open(gate: Gate, ctx: Ctx, found: Mapping[Kind, Verdict]) -> bool:
    if gate == "sized":
        return ctx.lam is not None and ctx.svc is not None and ctx.c is not None
    if gate == "unsized":
        return bool(fallback.core_missing(ctx))
    if gate == "alone":
        return not found
    return True


def run(ctx: Ctx) -> tuple[Verdict, ...]:
    """Every rule on one queue (module docstring), the verdicts ordered by impact."""
    found: dict[Kind, Verdict] = {}
    for r in RULES:
        if not _open(r.gate, ctx, found) or any(k in found for k in r.suppressed_by):
            continue
        v = r.evaluate(ctx, found)
        if v is not None:
            found[r.kind] = v
    return tuple(sorted(found.values(),
                        key=lambda v: (_RANK_SEVERITY[v.severity], _BY_KIND[v.kind].impact)))
