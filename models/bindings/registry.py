"""The registry of binding limits: what each limit is, in one place.

A binding limit is what caps a queue's throughput (the capacity plan names one:
:mod:`models.plan`). Each limit is one module of :mod:`models.bindings` that declares one
:class:`BindingLimit` and passes it to :func:`register`; everything that used to keep a list of
limits in step by hand reads this registry instead:

* its words (the plan's ``binding_text``), its short label (tables, cards) and, for a limit
  the contention verdict can name, the words of the verdict's headline;
* its ranked options (the advice card, the contention verdict's ``steps``);
* its rows model (:data:`RowsModel`; for a shared ceiling the cv² of the resource's service,
  read by :mod:`models.bindings.rows`);
* the verdict kinds that name it when no contention verdict does (:attr:`BindingLimit.kinds`);
* the contention reasons that point at it, its precedence among them and any confirmation
  (:func:`contention_limit`);
* its knobs (where the plan says to set the change);
* its measure: the ceiling from its own mechanism's signals, with its range, or why it
  cannot be measured here (:mod:`models.bindings.measured`; the headroom of
  :mod:`models.bindings.headroom` compares it with the peak demand).

Adding a limit is one module with one :func:`register` call, imported by
``models/bindings/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from models.bindings.measured import CeilingInputs, MeasuredCeiling
from models.verdicts.kinds import Kind

__all__ = [
    "BindingLimit",
    "ConfirmContention",
    "KnobKind",
    "Measure",
    "Option",
    "RowsModel",
    "contention_limit",
    "get",
    "limits",
    "register",
]

RowsModel = Literal["queueing", "ceiling", "usl"]
"""How the plan's rows model a limit: ``queueing`` — the advisor's sizing sweep as it is
(M/M/c, or M/M/c//K with a key count: :mod:`models.whatif`); ``ceiling`` — the shared ceiling
X* (:mod:`models.bindings.ceiling`); ``usl`` — the USL fitted on the range."""

KnobKind = Literal["workers", "client_qps", "flowschema", "webhook", "cpu"]
"""Where a change is set (:func:`models.plan._knobs` builds each): the worker count
(``MaxConcurrentReconciles`` or ``--concurrent-<name>-syncs``), the client's QPS/Burst, a
FlowSchema and priority level of the controller's own (with its manifest), the admission
webhook's configuration, the container's CPU limit and GOMAXPROCS."""

Measure = Callable[[CeilingInputs], MeasuredCeiling | None]
"""One queue's figures → the limit's ceiling measured from its own mechanism's signals (or
why it cannot be measured, without a number); None when the queue shows nothing of the
limit (a process that makes no API call has no API-client ceiling to speak of)."""

ConfirmContention = Callable[[Mapping[str, str], Mapping[str, Any], int | None], bool]
"""(contention reasons by code, the verdict's evidence, c) → whether this limit is the one
the reasons point at (after its reason codes matched)."""


@dataclass(frozen=True)
class Option:
    """One thing to do, and what it costs."""

    action: str
    tradeoff: str


@dataclass(frozen=True)
class BindingLimit:
    """One binding limit (module docstring)."""

    name: str
    """The stable identifier (``binding_limit`` in every payload)."""
    words: str
    """What the limit is, in words (the plan's ``binding_text``)."""
    label: str
    """Its short label (the plan table's "binding" column)."""
    options: tuple[Option, ...]
    """What to do about it, in the order an operator should try them."""
    rows: RowsModel = "queueing"
    ceiling_cv2: float | None = None
    """For ``rows="ceiling"``: the cv² of the shared resource's service (0 for an evenly
    spaced token bucket, 1 for a resource held for a variable time)."""
    kinds: tuple[Kind, ...] = ()
    """Verdict kinds that name this limit when no contention verdict names one."""
    headline: str | None = None
    """The contention headline's words ("More workers will not help: …"), for a limit the
    contention verdict can name."""
    reasons: frozenset[str] = frozenset()
    """Contention reason codes that point at this limit (any of them)."""
    confirm: ConfirmContention | None = None
    """A further test once a reason code matched (the coherency peak)."""
    precedence: int = 0
    """Order among the limits the contention verdict can name: the lowest that matches wins
    (most specific first)."""
    fallback: bool = False
    """The contention verdict's limit when no other matches (at most one)."""
    knobs: tuple[KnobKind, ...] = ()
    measure: Measure | None = None
    """Its ceiling from its own signals (:data:`Measure`)."""
    unmeasured: str | None = None
    """Why this limit's ceiling cannot be measured from what a workqueue exports, for a
    limit that never has a measure (a hot key: a key's own pass time is not exported)."""

    def __post_init__(self) -> None:
        if (self.rows == "ceiling") != (self.ceiling_cv2 is not None):
            raise ValueError(f"binding limit {self.name}: a ceiling cv² goes with "
                             "rows='ceiling' and only with it")
        if (self.reasons or self.fallback) and self.headline is None:
            raise ValueError(f"binding limit {self.name}: a limit the contention verdict "
                             "can name needs its headline words")

    @property
    def contention(self) -> bool:
        """Whether the contention verdict can name this limit."""
        return bool(self.reasons) or self.fallback


_LIMITS: dict[str, BindingLimit] = {}


def register(limit: BindingLimit) -> BindingLimit:
    """Add a limit to the registry (once per name; at most one contention fallback)."""
    if limit.name in _LIMITS:
        raise ValueError(f"binding limit {limit.name} is registered twice")
    if limit.fallback and any(other.fallback for other in _LIMITS.values()):
        raise ValueError("only one binding limit can be the contention fallback")
    for other in _LIMITS.values():
        for kind in set(limit.kinds) & set(other.kinds):
            raise ValueError(f"verdict kind {kind} names both {other.name} and {limit.name}")
    _LIMITS[limit.name] = limit
    return limit


def limits() -> Mapping[str, BindingLimit]:
    """Every registered limit by name, in the order of registration."""
    return MappingProxyType(_LIMITS)


def get(name: str) -> BindingLimit:
    return _LIMITS[name]


def contention_limit(reasons: Mapping[str, str], evidence: Mapping[str, Any], c: int | None
                     ) -> str:
    """Which limit the contention reasons (by code) point at: the registered limits that the
    contention verdict can name, by precedence, the first whose reason codes are among
    ``reasons`` and whose confirmation (if any) holds; else the fallback."""
    named = sorted((lim for lim in _LIMITS.values() if lim.reasons),
                   key=lambda lim: lim.precedence)
    for lim in named:
        if lim.reasons & reasons.keys() and (lim.confirm is None
                                             or lim.confirm(reasons, evidence, c)):
            return lim.name
    return next(lim.name for lim in _LIMITS.values() if lim.fallback)
