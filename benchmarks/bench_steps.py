"""The step regimes on held-out seeds: verdict, binding limit, ceiling and the rows at a count
the history never ran, against the mechanism simulated there.

The CI test (``tests/cli/test_advise_steps.py``) runs seeds 1 and 2. This runs the same
``STEP_REGIMES`` (1 → 2 → 3 workers under saturating load) on other seeds (default 3–10)
through a real Prometheus, and prints per case the plan's ceiling against the mechanism's and
the plan's row at 8 workers against the mechanism simulated at 8 workers, with every miss
(``tests.support.regimes.step_misses``).

Run: python benchmarks/bench_steps.py [--seeds 3 4 5 6 7 8 9 10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard.cli import main
from models.simulate import simulate
from tests.support import regimes as rg


def _json(argv: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"{argv[0]} exited {code}")
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def run(seeds: list[int]) -> int:
    cases = [rg.Case(r, "constant", 15.0, s) for r in rg.STEP_REGIMES for s in seeds]
    end = rg.START + int(rg.DURATION_S)
    with tempfile.TemporaryDirectory(prefix="queuelens-steps-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        config = work / "queuelens.yaml"
        config.write_text(rg.CONFIG)
        with rg.serving(cases, work) as server:
            t1 = time.perf_counter()
            base = ["--prometheus", server.url, "--config", str(config), "--at", str(end),
                    "--range", rg.RANGE, "--format", "json"]
            judged = {q["queue"]: q for q in _json(
                ["advise", *base, "--selector", '{pod=~"pod-step_.*"}'])["queues"]}
            rows = {c.queue: {int(r["workers"]): r for r in _json(
                ["whatif", *base, "--queue", c.queue, "--workers", "1-16"])["rows"]}
                for c in cases}
            t2 = time.perf_counter()
    right = 0
    print(f"{'case':34} {'binding':16} {'ceiling':>15} {'X(8) plan/sim':>15} "
          f"{'wait(8) plan/sim':>19}  misses")
    for c in cases:
        q = judged[c.queue]
        kw = rg.probe_kwargs(c)
        kw["arrival_rate_per_s"] = q["plan"]["demand_per_s"]
        sim = simulate(**kw)
        row = rows[c.queue][rg.PROBE_WORKERS]
        misses = rg.step_misses(c, q, row, sim, kw["arrival_rate_per_s"])
        right += not misses
        plan = q["plan"]
        want = c.regime.ceiling_per_s
        ceiling = (f"{plan['ceiling_per_s']:.3g}/{want:.3g}" if want is not None
                   and plan["ceiling_per_s"] is not None else "—")
        wait = (f"{row['wait_mean_s']:.3g}/{sim.wait_mean_s:.3g}" if row["wait_mean_s"]
                is not None else "grows")
        print(f"{c.queue:34} {plan['binding_limit']:16} {ceiling:>15} "
              f"{row['throughput_per_s']:.3g}/{sim.throughput_per_s:.3g}".ljust(84)
              + f" {wait:>19}  {'; '.join(misses)}")
    print(f"right: {right}/{len(cases)}; simulate + backfill {t1 - t0:.0f} s, advise + "
          f"whatif {t2 - t1:.1f} s")
    return 0 if right == len(cases) else 1


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(3, 11)))
    return run(parser.parse_args(argv).seeds)


if __name__ == "__main__":
    raise SystemExit(main_())
