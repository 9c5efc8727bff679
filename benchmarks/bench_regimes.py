"""The regime matrix on seeds the advisor's thresholds were never looked at with.

The CI test (``tests/cli/test_advise_regimes.py``) runs seeds 1 and 2; thresholds were set
while looking at those. This runs the same 10 regimes × 3 load shapes × 2 scrape intervals on
other seeds (default 3–6), through a real Prometheus, and prints per regime and load shape
how many cases got a right verdict and no forbidden one, with the verdicts of every miss, and
the time of each stage.

Run: python benchmarks/bench_regimes.py [--seeds 3 4 5 6]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard.cli import main
from tests.support import regimes as rg
from tests.support.prometheus import backfill_file, start_prometheus


def run(seeds: list[int]) -> int:
    cases = [rg.Case(c.regime, c.load, c.scrape_interval_s, seed)
             for c in rg.cases() if c.seed == rg.SEEDS[0] for seed in seeds]
    with tempfile.TemporaryDirectory(prefix="queuelens-regimes-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        om = work / "regimes.om"
        rg.write_openmetrics(cases, om)
        t1 = time.perf_counter()
        size_mb = om.stat().st_size / 1e6
        tsdb = backfill_file(om, work)
        om.unlink()
        t2 = time.perf_counter()
        server = start_prometheus(work / "prom", tsdb=tsdb)
        verdicts: dict[str, list[dict[str, object]]] = {}
        queues: dict[str, dict[str, Any]] = {}
        rows: dict[str, list[str]] = {}
        try:
            t3 = time.perf_counter()
            for step in rg.SCRAPE_INTERVALS_S:  # one advise per interval, as the CI test
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    code = main(rg.advise_argv(server.url, step, work / "queuelens.yaml"))
                if code != 0:
                    print(f"advise exited {code}", file=sys.stderr)
                    return 1
                judged = json.loads(out.getvalue())["queues"]
                verdicts.update({q["queue"]: q["verdicts"] for q in judged})
                queues.update({q["queue"]: q for q in judged})
            t4 = time.perf_counter()
            rows = _row_misses(cases, queues, server.url, work / "queuelens.yaml")
            t5 = time.perf_counter()
        finally:
            server.stop()
    good: Counter[tuple[str, str]] = Counter()
    told: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    misses = []
    for c in cases:
        vs = verdicts.get(c.queue, [])
        kinds = {str(v["kind"]) for v in vs}
        ok = rg.judged_right(c, vs)
        said = c.load in c.regime.undecidable and not ok and all(
            "could not be told" in str(v["evidence"]) for v in vs)  # type: ignore[index]
        total[c.regime.name, c.load] += 1
        good[c.regime.name, c.load] += ok
        told[c.regime.name, c.load] += said
        if not ok and not said:
            misses.append((c.queue, sorted(kinds)))
    print(f"{len(cases)} controllers, seeds {seeds}: simulate + write {t1 - t0:.1f} s "
          f"({size_mb:.0f} MB of OpenMetrics), promtool {t2 - t1:.1f} s, advise {t4 - t3:.1f} s")
    print(f"| regime | {' | '.join(rg.LOADS)} |")
    print(f"|---|{'---|' * len(rg.LOADS)}")
    for regime in rg.REGIMES:
        cells = [f"{good[regime.name, ld]}/{total[regime.name, ld]}"
                 + (f" (+{told[regime.name, ld]} said it could not tell)"
                    if told[regime.name, ld] else "") for ld in rg.LOADS]
        print(f"| `{regime.name}` | {' | '.join(cells)} |")
    right = sum(good.values())
    print(f"right: {right} of {len(cases)}; said it could not tell: {sum(told.values())}; "
          f"wrong: {len(misses)}")
    for queue, kinds in misses:
        print(f"  miss {queue}: {', '.join(kinds)}")
    checked = [q for q, m in rows.items() if m != ["not checked"]]
    print(f"ceilings and rows at twice the count (regimes with a mechanism ceiling, the limit "
          f"named): {sum(not rows[q] for q in checked)} of {len(checked)} right "
          f"({t5 - t4:.0f} s)")
    for queue in checked:
        if rows[queue]:
            print(f"  rows {queue}: {'; '.join(rows[queue])}")
    return 0


def _row_misses(cases: list[rg.Case], queues: dict[str, dict[str, Any]], url: str,
                config: Path) -> dict[str, list[str]]:
    """``tests.support.regimes.matrix_row_misses`` for each case with a mechanism ceiling whose
    plan named its limit (the CI test's check, on these seeds)."""
    out: dict[str, list[str]] = {}
    for case in cases:
        q = queues.get(case.queue)
        if case.regime.ceiling_per_s is None or q is None \
                or q["plan"]["binding_limit"] != case.regime.binding:
            out[case.queue] = ["not checked"]
            continue
        out[case.queue] = rg.matrix_row_misses(case, q, *rg.probe_row(case, q["plan"], url,
                                                                        config))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5, 6])
    sys.exit(run(parser.parse_args().seeds))
