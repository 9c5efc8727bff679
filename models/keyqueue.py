"""An explicit key model of client-go's rate-limiting work queue, and a trace runner for it.

State (as in ``k8s.io/client-go/util/workqueue``): a FIFO ``queue`` of keys, the ``dirty`` set
(keys that need processing), the ``processing`` set (keys handed out by ``get`` and not yet
``done``), per-key failure counts (kept by the rate limiter), the delayed heap of ``add_after``
entries, and the shutting-down flag. Rules, each with its source file:

queue.go
  * ``Add``: ignored while shutting down. A key already dirty is not added again (coalesced).
    Otherwise it becomes dirty; if it is being processed it is *not* pushed to the FIFO (it
    waits for ``Done``); else it is appended to the FIFO.
  * ``Get``: blocks while the FIFO is empty and the queue is not shutting down; with an empty
    FIFO during shutdown it returns ``shutdown=true``. Otherwise it pops the head, marks it
    processing and clears its dirty mark. (During shutdown, keys still in the FIFO are still
    handed out.)
  * ``Done``: removes the key from processing; if it was re-dirtied meanwhile it is appended
    to the FIFO again.
  * ``ShutDown``: sets shutting-down; workers blocked in ``Get`` wake with shutdown=true.
    ``ShutDownWithDrain`` does the same and then blocks until the processing set is empty (it
    waits forever on a key whose worker never calls ``Done``).
delaying_queue.go
  * ``AddAfter``: ignored while shutting down; a delay ≤ 0 is a plain ``Add``; otherwise the
    key waits in a heap until ready. A key already waiting keeps the *earlier* ready time.
    When ready it goes through ``Add`` (so it coalesces with a dirty copy). After shutdown the
    waiting loop stops: delayed keys are never added.
rate_limiting_queue.go
  * ``AddRateLimited(key)`` = ``AddAfter(key, limiter.When(key))`` — ``When`` runs (and counts
    a failure) before ``AddAfter`` checks for shutdown.
  * ``Forget`` only clears the limiter's per-key state; ``NumRequeues`` asks the limiter.

The queue object is mutable (like the Go one) but has no I/O and no wall clock: time moves only
through :meth:`KeyQueue.advance`. :func:`run_trace` returns immutable per-step snapshots.

Limits (:mod:`models.limits`): a trace has at most ``KEY_TRACE_MAX_STEPS`` operations, key
names at most ``KEY_TRACE_MAX_KEY_CHARS`` characters, and its snapshots at most ``max_cells``
key places in total (``KEY_TRACE_MAX_CELLS`` by default: every step's state is kept, so the
snapshots grow with steps × keys); the clock stays finite.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import deque
from dataclasses import dataclass

from models.errors import ModelInputError
from models.formatting import duration_text, instant_text
from models.limits import KEY_TRACE_MAX_CELLS, KEY_TRACE_MAX_KEY_CHARS, KEY_TRACE_MAX_STEPS
from models.ratelimit import RateLimiter, client_go_default_controller_limiter


@dataclass(frozen=True)
class KeyStep:
    """The queue state after one trace operation, with a one-line explanation."""

    index: int
    """1-based step number in the trace."""
    op: str
    time_s: float
    queue: tuple[str, ...]
    """FIFO order, head first."""
    dirty: tuple[str, ...]
    processing: tuple[str, ...]
    delayed: tuple[tuple[str, float], ...]
    """(key, ready_at_s), earliest first."""
    failures: tuple[tuple[str, int], ...]
    """(key, failure count tracked by the rate limiter), keys with a zero count omitted."""
    shutting_down: bool
    note: str


class KeyQueue:
    """client-go's ``Typed`` + ``delayingType`` + ``rateLimitingType`` with an explicit clock.

    Each operation returns a one-line note saying what happened and why."""

    def __init__(self, limiter: RateLimiter | None = None) -> None:
        self.limiter: RateLimiter = limiter or client_go_default_controller_limiter()
        self.now_s = 0.0
        self.queue: deque[str] = deque()
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self._waiting: dict[str, float] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0
        self.shutting_down = False
        self.draining = False

    # --- queue.go ---------------------------------------------------------------------------
    def add(self, key: str) -> str:
        if self.shutting_down:
            return f"queue is shutting down: add {key} ignored"
        if key in self.dirty:
            if key in self.processing:
                return (f"{key} already dirty (it will be queued again at done): coalesced")
            return f"{key} already dirty: coalesced"
        self.dirty.add(key)
        if key in self.processing:
            return (f"{key} is processing: marked dirty, queued again only when done {key} "
                    "is called")
        self.queue.append(key)
        return f"{key} queued"

    def get(self) -> tuple[str | None, str]:
        if not self.queue:
            if self.shutting_down:
                return None, "queue empty and shutting down: get returns shutdown=true"
            return None, "queue empty: get would block"
        key = self.queue.popleft()
        self.processing.add(key)
        self.dirty.discard(key)
        suffix = " (handed out although shutting down)" if self.shutting_down else ""
        return key, f"get returns {key}: processing, no longer dirty{suffix}"

    def done(self, key: str) -> str:
        if key not in self.processing:
            raise ModelInputError(f"{key} is not being processed (no get returned it), so done "
                                  f"{key} is not allowed.")
        self.processing.discard(key)
        if key in self.dirty:
            self.queue.append(key)
            note = f"{key} finished; it was re-added while processing: queued again"
        else:
            note = f"{key} finished"
        if self.draining and not self.processing:
            note += "; drain complete: shutdown_with_drain returns"
        return note

    def shutdown(self) -> str:
        self.shutting_down = True
        self.draining = False
        dropped = self._drop_delayed()
        return ("shut down: new adds are ignored, idle workers get shutdown=true" + dropped)

    def shutdown_with_drain(self) -> str:
        self.shutting_down = True
        self.draining = True
        dropped = self._drop_delayed()
        if not self.processing:
            return "shut down with drain: nothing processing, returns at once" + dropped
        keys = ", ".join(sorted(self.processing))
        return (f"shut down with drain: blocks until done is called for {keys} "
                "(forever if a worker never calls done)" + dropped)

    def _drop_delayed(self) -> str:
        if not self._heap:
            return ""
        keys = ", ".join(sorted(self._waiting))
        self._heap.clear()
        self._waiting.clear()
        return f"; delayed {keys} will never be added"

    # --- delaying_queue.go ------------------------------------------------------------------
    def add_after(self, key: str, delay_s: float) -> str:
        if self.shutting_down:
            return f"queue is shutting down: add_after {key} ignored"
        if delay_s <= 0:
            return f"delay {duration_text(delay_s)} ≤ 0: added at once — " + self.add(key)
        ready = self.now_s + delay_s
        if not math.isfinite(ready):
            raise ModelInputError(f"add_after {key} {duration_text(delay_s)}: the ready time "
                                  "is past the largest number the clock holds.")
        existing = self._waiting.get(key)
        if existing is not None and existing <= ready:
            return (f"{key} already waiting until t={instant_text(existing)}: "
                    "the earlier ready time is kept")
        self._waiting[key] = ready
        self._seq += 1
        heapq.heappush(self._heap, (ready, self._seq, key))
        verb = "moved earlier to" if existing is not None else "waits until"
        return f"{key} {verb} t={instant_text(ready)} (in {duration_text(delay_s)})"

    def advance(self, seconds: float) -> str:
        """Move the clock forward; delayed keys whose time has come go through ``add``."""
        if not seconds >= 0 or seconds == float("inf"):
            raise ModelInputError(f"time can only move forward by a finite amount, got {seconds}.")
        if not math.isfinite(self.now_s + seconds):
            raise ModelInputError("the clock would pass the largest number it holds.")
        self.now_s += seconds
        notes: list[str] = []
        while self._heap and self._heap[0][0] <= self.now_s + 1e-12:
            ready, _, key = heapq.heappop(self._heap)
            if self._waiting.get(key) != ready:
                continue  # superseded by an earlier ready time
            del self._waiting[key]
            notes.append(f"{key} ready → " + self.add(key))
        head = f"t={instant_text(self.now_s)}"
        return head + (": " + "; ".join(notes) if notes else ": nothing became ready")

    # --- rate_limiting_queue.go ---------------------------------------------------------------
    def add_rate_limited(self, key: str) -> str:
        before = self.limiter.num_requeues(key)
        delay = self.limiter.when(key, self.now_s)
        after = self.limiter.num_requeues(key)
        head = (f"failure #{after} for {key} (was {before}): "
                f"rate limiter says {duration_text(delay)}")
        return head + "; " + self.add_after(key, delay)

    def forget(self, key: str) -> str:
        before = self.limiter.num_requeues(key)
        self.limiter.forget(key)
        if before == 0:
            return f"forget {key}: no failure history to reset"
        return f"forget {key}: failure history reset ({before} → 0); next failure starts at base"

    def num_requeues(self, key: str) -> int:
        return self.limiter.num_requeues(key)

    # --- snapshots --------------------------------------------------------------------------
    def delayed(self) -> tuple[tuple[str, float], ...]:
        return tuple(sorted(self._waiting.items(), key=lambda kv: (kv[1], kv[0])))

    def snapshot(self, index: int, op: str, note: str) -> KeyStep:
        fails = {str(k): n for k, n in self.limiter.failures().items() if n > 0}
        return KeyStep(
            index=index,
            op=op,
            time_s=self.now_s,
            queue=tuple(self.queue),
            dirty=tuple(sorted(self.dirty)),
            processing=tuple(sorted(self.processing)),
            delayed=self.delayed(),
            failures=tuple(sorted(fails.items())),
            shutting_down=self.shutting_down,
            note=note,
        )


# --- trace parsing ---------------------------------------------------------------------------

_DELAY = re.compile(r"^(-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(ms|s|m|h)?$")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_KEY = re.compile(r"^[A-Za-z0-9_./:-]+$")

_ALIASES = {
    "add": "add", "get": "get", "done": "done", "forget": "forget",
    "addratelimited": "add_rate_limited", "ratelimited": "add_rate_limited",
    "addafter": "add_after", "numrequeues": "num_requeues",
    "shutdown": "shutdown", "shutdownwithdrain": "shutdown_with_drain",
    "tick": "tick", "wait": "tick", "advance": "tick", "sleep": "tick",
}
_ARITY = {"add": 1, "get": 0, "done": 1, "forget": 1, "add_rate_limited": 1, "add_after": 2,
          "num_requeues": 1, "shutdown": 0, "shutdown_with_drain": 0, "tick": 1}
OPERATIONS = ("add K", "get", "done K", "forget K", "add_rate_limited K", "add_after K DELAY",
              "num_requeues K", "shutdown", "shutdown_with_drain", "tick DELAY (alias wait)")


def parse_delay(text: str) -> float:
    """'5ms', '0.01', '2s', '-1', '0' → seconds (may be ≤ 0 for add_after)."""
    m = _DELAY.match(text.strip())
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_trace(text: str) -> list[tuple[str, tuple[str, ...], str]]:
    """Split a trace into (operation, arguments, original text); raise on any bad step."""
    parts = [p.strip() for p in re.split(r"[;\n]", text)]
    steps = [p for p in parts if p]
    if not steps:
        raise ModelInputError("the trace is empty; give operations like 'add A; get; done A'.")
    if len(steps) > KEY_TRACE_MAX_STEPS:
        raise ModelInputError(f"the trace has more than {KEY_TRACE_MAX_STEPS:,} steps "
                              f"({len(steps):,}); shorten it.")
    out: list[tuple[str, tuple[str, ...], str]] = []
    for i, raw in enumerate(steps, start=1):
        words = raw.replace("(", " ").replace(")", " ").replace(",", " ").split()
        name = words[0].lower().replace("_", "").replace("-", "")
        op = _ALIASES.get(name)
        if op is None:
            raise ModelInputError(
                f"step {i} ({raw!r}): unknown operation {words[0]!r}; known: "
                + ", ".join(OPERATIONS) + "."
            )
        args = tuple(words[1:])
        if len(args) != _ARITY[op]:
            want = _ARITY[op]
            raise ModelInputError(
                f"step {i} ({raw!r}): {op} takes {want} argument{'s' if want != 1 else ''}, "
                f"got {len(args)}."
            )
        if op in ("tick", "add_after"):
            try:
                value = parse_delay(args[-1])
            except ValueError:
                raise ModelInputError(
                    f"step {i} ({raw!r}): {args[-1]!r} is not a duration (use e.g. 5ms, 0.01, 2s)."
                ) from None
            if op == "tick" and value < 0:
                raise ModelInputError(f"step {i} ({raw!r}): time cannot move backwards.")
        if op != "tick" and args and len(args[0]) > KEY_TRACE_MAX_KEY_CHARS:
            raise ModelInputError(f"step {i}: the key name is {len(args[0]):,} characters long; "
                                  f"keys have at most {KEY_TRACE_MAX_KEY_CHARS} "
                                  "(namespace/name).")
        if op != "tick" and args and not _KEY.match(args[0]):
            raise ModelInputError(f"step {i} ({raw!r}): {args[0]!r} is not a valid key name.")
        out.append((op, args, raw))
    return out


def cells(step: KeyStep) -> int:
    """Key places in one snapshot: its queue, dirty, processing, delayed and failure lists."""
    return (len(step.queue) + len(step.dirty) + len(step.processing) + len(step.delayed)
            + len(step.failures))


def run_trace(text: str, limiter: RateLimiter | None = None, *,
              max_cells: int = KEY_TRACE_MAX_CELLS) -> tuple[KeyStep, ...]:
    """Run a trace like ``"add A; add A; get; add A; done A; get; done A"`` on a fresh queue
    (client-go's default controller limiter unless another is given) and return the state
    after every step. A bad step raises ModelInputError naming the step number and its text;
    so does a trace whose snapshots would hold more than ``max_cells`` key places in all
    (:func:`cells`; the work is linear in them, so it stops there)."""
    q = KeyQueue(limiter)
    steps: list[KeyStep] = []
    total = 0
    for i, (op, args, raw) in enumerate(parse_trace(text), start=1):
        try:
            note = _apply(q, op, args)
        except ModelInputError as exc:
            raise ModelInputError(f"step {i} ({raw!r}): {exc}") from None
        step = q.snapshot(i, raw, note)
        total += cells(step)
        if total > max_cells:
            raise ModelInputError(
                f"by step {i} the trace's states hold more than {max_cells:,} key places "
                "(the keys in each step's queue, dirty, processing, delayed and failure lists, "
                "summed over the steps: its limit); use fewer keys or fewer steps."
            )
        steps.append(step)
    return tuple(steps)


def _apply(q: KeyQueue, op: str, args: tuple[str, ...]) -> str:
    if op == "add":
        return q.add(args[0])
    if op == "get":
        return q.get()[1]
    if op == "done":
        return q.done(args[0])
    if op == "forget":
        return q.forget(args[0])
    if op == "add_rate_limited":
        return q.add_rate_limited(args[0])
    if op == "add_after":
        return q.add_after(args[0], parse_delay(args[1]))
    if op == "num_requeues":
        n = q.num_requeues(args[0])
        return f"num_requeues {args[0]} = {n}"
    if op == "shutdown":
        return q.shutdown()
    if op == "shutdown_with_drain":
        return q.shutdown_with_drain()
    return q.advance(parse_delay(args[0]))


@dataclass(frozen=True)
class ExampleTrace:
    name: str
    title: str
    trace: str
    lesson: str


EXAMPLES: tuple[ExampleTrace, ...] = (
    ExampleTrace(
        "coalescing",
        "Coalescing while waiting",
        "add A; add A; add B; add A; get; done A; get; done B",
        "Three adds of A while it waits make one queue entry: the next pass reads current state.",
    ),
    ExampleTrace(
        "readd-during-processing",
        "Re-add during processing (the dirty mark protects the notification)",
        "add A; get; add A; add A; done A; get; done A",
        "A changed while a worker held it: it is marked dirty and queued again at done, so "
        "the change is not lost, and two workers never hold A at once.",
    ),
    ExampleTrace(
        "get-without-done",
        "A get without done strands the key",
        "add A; get; add A; get; shutdown_with_drain",
        "The worker returned without done: A stays processing, its new notification waits "
        "behind it forever, and shutdown_with_drain never returns.",
    ),
    ExampleTrace(
        "stale-penalty",
        "Retries without forget keep a stale penalty",
        "add A; get; add_rate_limited A; done A; wait 5ms; get; add_rate_limited A; done A; "
        "wait 10ms; get; done A; wait 1h; add A; get; add_rate_limited A; done A",
        "A succeeded after two failures but nobody called forget: an unrelated failure an hour "
        "later waits 20ms instead of the 5ms base (and the penalty keeps doubling).",
    ),
    ExampleTrace(
        "forget-on-success",
        "Forget on success resets the penalty (the fix for stale-penalty)",
        "add A; get; add_rate_limited A; done A; wait 5ms; get; add_rate_limited A; done A; "
        "wait 10ms; get; forget A; done A; wait 1h; add A; get; add_rate_limited A; done A",
        "With forget after the successful pass, the later failure starts again at 5ms.",
    ),
    ExampleTrace(
        "tight-loop",
        "add_after(0) on every failure is a tight loop",
        "add A; get; add_after A 0; done A; get; add_after A 0; done A; get; add_after A 0; "
        "done A; get",
        "A zero delay is a plain add: the failing key is back at the head at once with no "
        "time passing, so it keeps a worker busy and hammers the dependency.",
    ),
    ExampleTrace(
        "shutdown",
        "Shutdown ignores new adds and drops delayed keys",
        "add A; add B; add_after C 1s; get; shutdown; add D; get; done A; get; done B; get",
        "After shutdown, adds are ignored and delayed C never arrives, but keys already queued "
        "are still handed out; once the FIFO is empty get reports shutdown.",
    ),
)


def example(name: str) -> ExampleTrace:
    for ex in EXAMPLES:
        if ex.name == name:
            return ex
    raise ModelInputError(
        f"no example trace named {name!r}; known: {', '.join(e.name for e in EXAMPLES)}."
    )
