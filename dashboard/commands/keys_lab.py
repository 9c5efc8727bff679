"""`queuelens lab keys`: the explicit key trace of a client-go work queue.

Registered into `queuelens lab` by :func:`register_keys` (see LAB_COMMANDS in lab.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dashboard.cliutil import CliError, add_format_argument, emit

COLUMNS = ("step", "op", "queue", "dirty", "processing", "delayed", "failures", "note")


def register_keys(lab_subparsers: Any) -> None:
    parser = lab_subparsers.add_parser(
        "keys",
        help="explicit key trace: queue, dirty, processing, delayed and failures per step",
        description=(
            "Run a trace of work-queue operations (client-go util/workqueue semantics) and print "
            "the state after every step with a one-line explanation. Operations: add K, get, "
            "done K, forget K, add_rate_limited K, add_after K DELAY, num_requeues K, shutdown, "
            "shutdown_with_drain, tick DELAY (alias wait). Separate steps with ';'. Retries use "
            "client-go's default controller limiter (5ms→1000s per key, max with 10 qps/100)."
        ),
    )
    parser.add_argument("--trace", default=None, metavar="OPS",
                        help='e.g. "add A; add A; get; add A; done A; get; done A"')
    parser.add_argument("--example", default=None, metavar="NAME",
                        help="run a named example trace (see --list-examples)")
    parser.add_argument("--list-examples", action="store_true",
                        help="list the named example traces and exit")
    add_format_argument(parser, ("table", "json"))
    parser.set_defaults(func=handle_keys)


def _step_row(step: Any) -> dict[str, Any]:
    return {
        "step": step.index,
        "op": step.op,
        "time_s": step.time_s,
        "queue": list(step.queue),
        "dirty": list(step.dirty),
        "processing": list(step.processing),
        "delayed": [{"key": k, "ready_at_s": r} for k, r in step.delayed],
        "failures": dict(step.failures),
        "shutting_down": step.shutting_down,
        "note": step.note,
    }


def _table_row(row: dict[str, Any]) -> dict[str, Any]:
    def keys(items: list[str]) -> str:
        return " ".join(items) if items else "·"

    delayed = " ".join(f"{d['key']}@{d['ready_at_s']:g}s" for d in row["delayed"]) or "·"
    fails = " ".join(f"{k}:{n}" for k, n in row["failures"].items()) or "·"
    return {**row, "queue": keys(row["queue"]), "dirty": keys(row["dirty"]),
            "processing": keys(row["processing"]), "delayed": delayed, "failures": fails}


def handle_keys(args: argparse.Namespace) -> int:
    from models.keyqueue import EXAMPLES, example, run_trace

    if args.list_examples:
        if args.format == "json":
            emit("json", {"examples": [{"name": e.name, "title": e.title, "trace": e.trace,
                                        "lesson": e.lesson} for e in EXAMPLES]}, [], ())
        else:
            for e in EXAMPLES:
                sys.stdout.write(f"{e.name}: {e.title}\n  {e.trace}\n  → {e.lesson}\n")
        return 0
    if (args.trace is None) == (args.example is None):
        raise CliError("give exactly one of --trace \"OPS\" or --example NAME "
                       "(see --list-examples).")
    header = ""
    footer = ""
    if args.example is not None:
        ex = example(args.example)
        text = ex.trace
        header = f"{ex.title}\ntrace: {ex.trace}"
        footer = f"lesson: {ex.lesson}"
    else:
        text = args.trace
    steps = run_trace(text)
    rows = [_step_row(s) for s in steps]
    payload: dict[str, Any] = {"trace": text, "steps": rows}
    emit(args.format, payload, [_table_row(r) for r in rows], COLUMNS,
         header=header, footer=footer)
    return 0
