"""The fleet path: the queueing figures every queue's rules may need, computed for all
queues in a few vectorized calls (the same arithmetic as the per-queue path, so the verdicts
and their numbers are identical)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from models.contention import fit_usl_many
from models.errors import ModelInputError
from models.queueing import erlang_c
from models.verdicts.contention_reasons import usl_points
from models.verdicts.context import Ctx, paired
from models.verdicts.inputs import FloatArray
from models.verdicts.sizing import sweep_inputs
from models.whatif import WhatIfInputs, whatif_tables

__all__ = ["design_demands", "prepare"]


def prepare(ctxs: Iterable[Ctx]) -> None:
    """Fill ``ctx.sweeps`` and ``ctx.mmc`` for every queue in a few vectorized calls.

    A superset of what the rules will read (a sweep nobody reads costs a few array elements).
    Left to the per-queue path, which computes them on first use: finite-key sweeps (solved
    one by one anyway, and slow, so only when a rule reads them) and inputs the models would
    reject (so the per-queue path raises as :func:`advise` does)."""
    sweeps: list[tuple[Ctx, float, WhatIfInputs]] = []
    hot: list[tuple[Ctx, float, float, int]] = []
    ctxs = list(ctxs)
    fitted = [(ctx, pts) for ctx in ctxs if isinstance(pts := usl_points(ctx), tuple)]
    for (ctx, _), fit in zip(fitted, fit_usl_many([pts for _, pts in fitted]), strict=True):
        ctx.usl = fit
    for ctx in ctxs:
        lam, svc, c = ctx.lam, ctx.svc, ctx.c
        if lam is None or svc is None or c is None:
            continue
        rates = {ctx.lam_design if ctx.lam_design is not None else lam}
        try:
            capacity = c / svc
            if lam / capacity >= ctx.th.overload_ratio and lam - capacity > 0:
                rates.add(lam)  # the backlog rule sizes at the current demand
        except (OverflowError, ZeroDivisionError):
            pass
        for rate in rates if ctx.keys is None else ():
            try:
                sweeps.append((ctx, rate, sweep_inputs(ctx, rate)))
            except (ModelInputError, OverflowError, ValueError):
                continue
        if lam > 0 and lam * svc < c and math.isfinite(1.0 / svc):
            hot.append((ctx, lam, 1.0 / svc, c))
    try:
        tables = whatif_tables([inp for _, _, inp in sweeps])
    except ModelInputError:  # rare (absurd inputs): one by one, leaving out those that fail
        tables = []
        for sw in list(sweeps):
            try:
                tables.extend(whatif_tables([sw[2]]))
            except ModelInputError:
                sweeps.remove(sw)
    for (ctx, rate, _), table in zip(sweeps, tables, strict=True):
        ctx.sweeps[rate] = table
    # One Erlang C call per size class of c (the recursion runs to the largest c of a call).
    classes: dict[int, list[tuple[Ctx, float, float, int]]] = {}
    for h in hot:
        classes.setdefault(h[3].bit_length(), []).append(h)
    for group in classes.values():
        try:
            mmc = erlang_c([h[1] for h in group], [h[2] for h in group], [h[3] for h in group])
        except ModelInputError:
            continue  # left to the per-queue path
        for (ctx, *_), wq, lq in zip(group, mmc.wait_mean_s.tolist(),
                                     mmc.queue_length_mean.tolist(), strict=True):
            ctx.mmc = (float(wq), float(lq))


def design_demands(ctxs: Sequence[Ctx]) -> None:
    """:func:`design_demand` for many queues: one ``np.quantile`` per history length (rows
    of a 2-D array) instead of one call per queue — the same numbers."""
    by_size: dict[int, list[tuple[Ctx, float, FloatArray]]] = {}
    for ctx in ctxs:
        lam = ctx.lam
        if lam is None:
            continue
        ctx.lam_design = lam
        p = paired(ctx.h, "arrival_rate_per_s")
        if p is not None and p[0].size >= ctx.th.min_history_points:
            by_size.setdefault(p[1].size, []).append((ctx, lam, p[1]))
    for group in by_size.values():
        q = group[0][0].th.design_quantile
        rows = np.quantile(np.stack([arr for *_, arr in group]), q, axis=1)
        for (ctx, lam, _), v in zip(group, rows.tolist(), strict=True):
            ctx.lam_design = max(lam, float(v))
