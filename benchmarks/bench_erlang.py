"""Time the vectorized Erlang C sweep: 10,000 queues × 64 worker counts in one call.

Run: python benchmarks/bench_erlang.py [--repeat N] [--no-workspace]
Prints the median wall time in milliseconds (target: ≤ 5 ms on a 2-core machine with the
outputs preallocated in a reusable :class:`models.queueing.ErlangCWorkspace`, the way a caller
that repeats the sweep uses it; ``--no-workspace`` times the allocating call instead).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.queueing import ErlangCWorkspace, erlang_c


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-workspace", action="store_true",
                        help="allocate fresh output arrays on every call")
    args = parser.parse_args()

    rng = np.random.default_rng(7)
    service_rate = rng.uniform(0.5, 20.0, size=(args.queues, 1))
    # Offered loads spread over 0.1 .. 60 Erlangs so that the sweep covers stable and
    # unstable worker counts for most queues.
    arrival_rate = rng.uniform(0.1, 60.0, size=(args.queues, 1)) * service_rate
    workers = np.arange(1, args.workers + 1)
    workspace = None if args.no_workspace else ErlangCWorkspace(args.queues, args.workers)

    erlang_c(arrival_rate, service_rate, workers, workspace=workspace)  # warm-up
    times_ms = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = erlang_c(arrival_rate, service_rate, workers, workspace=workspace)
        times_ms.append((time.perf_counter() - t0) * 1000.0)
    assert result.p_wait.shape == (args.queues, args.workers)
    assert not np.isnan(result.wait_mean_s).any()
    mode = "allocating outputs" if workspace is None else "preallocated workspace"
    print(
        f"erlang_c {args.queues} queues x {args.workers} worker counts ({mode}): "
        f"median {statistics.median(times_ms):.1f} ms, min {min(times_ms):.1f} ms "
        f"over {args.repeat} runs (stable cells: {int(result.stable.sum())})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
