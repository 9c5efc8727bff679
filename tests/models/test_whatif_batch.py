"""whatif_tables (many sweeps in one vectorized pass) against whatif_sweep, which runs each
input alone (a batch of one) and is checked against closed forms in test_whatif.py: batching
many inputs, of different models and size classes, must not change any number."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.errors import ModelInputError
from models.whatif import WhatIfInputs, whatif_sweep, whatif_tables


def varied_inputs(n: int, seed: int) -> list[WhatIfInputs]:
    """Every model (M/M/c, G/G/c, finite keys), with and without USL contention and an SLO,
    stable and unstable loads, and worker ranges of very different sizes (several size classes
    in one batch)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        lo = int(rng.integers(1, 12))
        hi = lo + int(rng.integers(0, 400 if i % 9 == 0 else 40))
        svc = float(10 ** rng.uniform(-3, 1))
        kw: dict[str, object] = {}
        if i % 5 == 0:  # finite keys (its single sweep is slow: small key counts and ranges)
            kw["keys"] = int(rng.integers(1, 40))
            hi = lo + int(rng.integers(0, 16))
        elif i % 3 == 0:
            kw.update(service_cv2=float(rng.uniform(0, 4)), arrival_cv2=float(rng.uniform(0, 4)))
        if i % 4 == 0:
            kw.update(sigma=float(rng.uniform(0, 0.2)), kappa=float(rng.uniform(0, 0.01)))
        if i % 7 != 0:
            kw["slo_wait_s"] = float(10 ** rng.uniform(-2, 1))
        if i % 11 == 0:
            kw["slo_quantile"] = None
        elif i % 6 == 0 and "keys" not in kw:
            kw["slo_quantile"] = 0.99
        lam = 0.0 if i % 13 == 0 else float(rng.uniform(0.0, 1.3) * hi / svc)
        out.append(WhatIfInputs(lam, svc, workers_min=lo, workers_max=hi,
                                **kw))  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_batch_equals_single_sweeps(seed: int) -> None:
    inputs = varied_inputs(120, seed)
    tables = whatif_tables(inputs)
    assert len(tables) == len(inputs)
    models = set()
    for inp, table in zip(inputs, tables, strict=True):
        single = whatif_sweep(inp)
        # Same rows (exact floats, None in the same places) and the same recommendation.
        assert table.result() == single
        assert table.model == single.model
        models.add(single.model)
    assert len(models) == 3  # all three models were exercised


def test_row_lookup_and_slo_mask() -> None:
    inp = WhatIfInputs(5.0, 0.5, workers_min=2, workers_max=12, slo_wait_s=0.2)
    (table,) = whatif_tables([inp])
    single = whatif_sweep(inp)
    assert table.row(1) is None
    assert table.row(13) is None
    for r in single.rows:
        assert table.row(r.workers) == r
    meets = table.meets_slo(0.95)
    expected = [r.stable and r.p_wait_over_slo is not None and r.p_wait_over_slo <= 0.05 + 1e-12
                for r in single.rows]
    assert meets.tolist() == expected
    # The recommendation (smallest c meeting the SLO) is the first True: c = 5 (test_whatif).
    assert int(table.workers[int(np.argmax(meets))]) == single.recommendation.workers == 5
    (no_slo,) = whatif_tables([WhatIfInputs(5.0, 0.5)])
    assert not no_slo.meets_slo(0.95).any()
    assert all(math.isnan(v) for v in no_slo.p_wait_over_slo)


def test_batch_rejects_bad_input_like_the_sweep() -> None:
    good = WhatIfInputs(5.0, 0.5)
    bad = WhatIfInputs(5.0, -1.0)
    with pytest.raises(ModelInputError) as single:
        whatif_sweep(bad)
    with pytest.raises(ModelInputError) as batch:
        whatif_tables([good, bad])
    assert str(batch.value) == str(single.value)
    assert whatif_tables([]) == []
