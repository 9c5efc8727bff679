"""`queuelens lab …`: small instruments from the seed's queue lab.

Each lab instrument is a sub-command of `lab`, registered by one function in LAB_COMMANDS.
To add a sibling (e.g. `lab keys`), write ``register_<name>(lab_subparsers)`` that adds its
parser and ``set_defaults(func=handler)``, and append it to LAB_COMMANDS.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from dashboard.cliutil import (
    CliError,
    add_format_argument,
    emit,
    non_negative_duration,
    non_negative_float,
    parse_duration,
    positive_float,
)
from models.limits import FLUID_MAX_STEPS, FLUID_MAX_VALUE


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="queue lab instruments (fluid backlog, …)",
        description="Small, assumption-explicit queue instruments from the queue lab.",
    )
    lab_sub = parser.add_subparsers(
        dest="lab_command", metavar="INSTRUMENT", parser_class=type(parser)
    )
    lab_sub.required = True
    for register_instrument in LAB_COMMANDS:
        register_instrument(lab_sub)


# --- lab fluid ----------------------------------------------------------------------------

FLUID_COLUMNS = ("t", "backlog")


def register_fluid(lab_subparsers: Any) -> None:
    parser = lab_subparsers.add_parser(
        "fluid",
        help="fluid backlog q(t) = max(0, q0 + (λ − μ)·t) and its M/M/1 comparison",
        description=(
            "Deterministic fluid view of a persistent arrival/service imbalance: backlog "
            "q(t) = max(0, q0 + (λ − μ)·t), its growth rate and clearance time, plus the "
            "M/M/1 mean residence 1/(μ − λ), which holds only under Poisson arrivals and "
            "exponential service. No key bookkeeping (dirty set, Done, Forget, retries)."
        ),
    )
    parser.add_argument(
        "--arrival-rate",
        type=non_negative_float,
        required=True,
        metavar="L",
        help="arrival rate λ, items per second",
    )
    parser.add_argument(
        "--service-rate",
        type=positive_float,
        required=True,
        metavar="M",
        help="total service rate μ, items per second",
    )
    parser.add_argument(
        "--backlog",
        type=non_negative_float,
        default=4.0,
        metavar="Q0",
        help=f"initial backlog q0 (default 4; λ, μ and q0 at most {FLUID_MAX_VALUE:.0e})",
    )
    parser.add_argument(
        "--until",
        type=non_negative_duration,
        default=None,
        metavar="T",
        help="trace end time, e.g. 30 or 2m (bare number = seconds; default: clearance "
        "time + 2 s, or 10 s)",
    )
    parser.add_argument(
        "--step",
        type=parse_duration,
        default=None,
        metavar="DT",
        help=f"trace step, e.g. 1 or 500ms (bare number = seconds; default 1 s, or 2, 5, 10, "
        f"20, … to stay within "
        f"{FLUID_MAX_STEPS:,} steps)",
    )
    add_format_argument(parser)
    parser.set_defaults(func=handle_fluid)


def handle_fluid(args: argparse.Namespace) -> int:
    from models.fluid import check_lab_inputs, default_step, fluid_summary, fluid_trace
    from models.queueing import mm1

    check_lab_inputs(args.backlog, args.arrival_rate, args.service_rate)
    summary = fluid_summary(args.backlog, args.arrival_rate, args.service_rate)
    until = args.until
    if until is None:
        clear = summary.clear_time_s
        until = 10.0 if clear is None or clear == 0 else float(clear) + 2.0
        if not math.isfinite(until):
            raise CliError("the backlog clears only after more seconds than a float holds "
                           "(μ − λ is below about 1e-300); give --until.")
    step = args.step if args.step is not None else default_step(until)
    t, q = fluid_trace(args.backlog, args.arrival_rate, args.service_rate, until, step)
    m = mm1(args.arrival_rate, args.service_rate)
    points = [{"t": float(ti), "backlog": float(qi)} for ti, qi in zip(t, q, strict=True)]
    payload = {
        "inputs": {
            "arrival_rate_per_s": args.arrival_rate,
            "service_rate_per_s": args.service_rate,
            "initial_backlog": args.backlog,
            "until_s": until,
            "step_s": step,
        },
        "points": points,
        "growth_per_s": summary.growth_per_s,
        "clear_time_s": summary.clear_time_s,
        "mm1": {"stable": m.stable, "residence_mean_s": m.residence_mean_s},
    }
    clear_text = (
        "never clears (λ ≥ μ)"
        if summary.clear_time_s is None
        else f"clears at t={summary.clear_time_s:g}s"
    )
    residence = (
        f"{m.residence_mean_s:g}s" if m.residence_mean_s is not None else "none (unstable, λ ≥ μ)"
    )
    header = (
        f"fluid: q0={args.backlog:g} λ={args.arrival_rate:g}/s μ={args.service_rate:g}/s  "
        f"growth {summary.growth_per_s:+g}/s, {clear_text}"
    )
    footer = (
        f"M/M/1 mean residence 1/(μ − λ): {residence} "
        "(only under Poisson arrivals and exponential service)"
    )
    emit(args.format, payload, points, FLUID_COLUMNS, header=header, footer=footer)
    return 0


# Lab instruments, in `--help` order. Add a sibling by appending its register function.
def _register_keys(lab_subparsers: Any) -> None:
    from dashboard.commands.keys_lab import register_keys

    register_keys(lab_subparsers)


LAB_COMMANDS: tuple[Callable[[Any], None], ...] = (register_fluid, _register_keys)
