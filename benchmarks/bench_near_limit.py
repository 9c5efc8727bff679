"""The near-limit regimes (issue 35 §4) on seeds the thresholds were never looked at with.

CI (``tests/cli/test_advise_near_limit.py``) runs seeds 1–3. This runs the same 5 regimes ×
3 load shapes on other seeds (default 4–11), through a real Prometheus, and prints per
regime and load how many seeds were right (:func:`tests.support.regimes.near_misses`), how
many gave the most common answer (the limit named; more, fewer or the same workers), the stated
headroom or ceiling against the mechanism's, and every miss.

Run: python benchmarks/bench_near_limit.py [--seeds 4 5 6 7 8 9 10 11]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dashboard.cli import main
from tests.support import regimes as rg


def run(seeds: tuple[int, ...]) -> int:
    cases = list(rg.near_cases(seeds))
    with tempfile.TemporaryDirectory(prefix="queuelens-near-") as tmp:
        t0 = time.perf_counter()
        with rg.serving([c for _, c in cases], Path(tmp)) as server:
            t1 = time.perf_counter()
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                code = main(rg.advise_argv(server.url, 15.0, Path(tmp) / "queuelens.yaml"))
            if code != 0:
                print(f"advise exited {code}", file=sys.stderr)
                return 1
            t2 = time.perf_counter()
    judged: dict[str, dict[str, Any]] = {q["queue"]: q for q in
                                         json.loads(text.getvalue())["queues"]}
    right: dict[tuple[str, str], int] = defaultdict(int)
    answers: dict[tuple[str, str], Counter[tuple[str, str]]] = defaultdict(Counter)
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    misses: list[str] = []
    for near, case in cases:
        q = judged[case.queue]
        key = (case.regime.name, case.load)
        wrong = rg.near_misses(near, case, q)
        right[key] += not wrong
        answers[key][rg.answer_of(q)] += 1
        plan = q["plan"]
        own = next((h for h in plan["headroom"] if h["limit"] == case.regime.binding), None)
        if own is not None and case.regime.ceiling_per_s:
            ratios[key].append(own["ceiling_per_s"] / case.regime.ceiling_per_s)
        if wrong:
            misses.append(f"{case.queue}: {'; '.join(wrong)}")
    print(f"seeds {seeds[0]}–{seeds[-1]} ({len(seeds)}), {len(cases)} cases; simulate + "
          f"backfill {t1 - t0:.0f} s, advise {t2 - t1:.1f} s\n")
    print("| regime | load | right | same answer | answer | stated ceiling ÷ mechanism's |")
    print("|---|---|---|---|---|---|")
    n = len(seeds)
    for key in sorted(answers, key=lambda k: ([x.regime.name for x in rg.NEAR_REGIMES]
                                              .index(k[0]), rg.LOADS.index(k[1]))):
        top, count = answers[key].most_common(1)[0]
        r = ratios[key]
        span = f"{min(r):.2f}–{max(r):.2f}" if r else "not measured"
        print(f"| `{key[0]}` | {key[1]} | {right[key]}/{n} | {count}/{n} | "
              f"{top[0]}, {top[1]} workers | {span} |")
    if misses:
        print("\nmisses:")
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(4, 12)))
    sys.exit(run(tuple(parser.parse_args().seeds)))
