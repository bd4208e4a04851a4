"""The thread that runs strata.horovod's collectives, in the order the script submitted them.

Why a thread: Horovod's *_async calls return at once and poll() says whether the work is done, so
something must run the collective while the script goes on; the runtime is used by one thread at
a time, and this is that thread (ctypes lets go of the GIL inside the runtime's calls).

How operations are matched (Horovod's coordinator, without a coordinator): while a rank has
operations pending its thread runs cycles, and the k-th cycle of every rank meet in one collective
(a rank with nothing pending starts its next cycle when the script submits something, so an idle
job makes no collective calls and the script may call the runtime directly between operations).
Each cycle every rank allgathers how many operations it has pending, and when any has some,
a fixed-size descriptor of each (its key: the kind and name, "allreduce.NAME", or
"allreduce.noname.N" counted per kind as Horovod names unnamed ones; dtype, shape, operation,
root). Every rank sees the same table and so takes the same decisions: an operation that every rank
that has not joined has pending runs now, in the order of the lowest such rank's submissions; the
others wait for a later cycle, so ranks may submit in different orders. Before moving data the
ranks compare their descriptors of it (Negotiated), and ranks that submitted different tensors
under one key all raise an error instead of hanging or summing mismatched memory.

Process sets (hvd.add_process_set) are negotiated in the same cycles: an operation carries its
set's id and is ready when every member has it pending; it then runs on the members only, over the
set's strata Group. While any set exists the threads cycle even when idle (a rank outside a set,
idle in its script, must still meet the others' cycles), so the script should not call the
runtime directly then.

An operation some ranks never submit cannot run: after STRATA_HOROVOD_STALL_SECONDS (60) the
ranks waiting on it print which ranks have not submitted it, and after
STRATA_HOROVOD_STALL_FAIL_SECONDS (300) it fails with that message; when a rank it awaits (a
member of its process set that has not submitted it) has shut strata.horovod down, it fails at
once. A rank outside the set may shut down while the members are still submitting. A join has
no stall limit (the others may train for long), but it too fails at once when a rank that has not
joined shuts down.
"""
import collections
import ctypes
import hashlib
import os
import queue
import sys
import threading
import time
import zlib

import numpy as np

from strata import _capi

# Descriptor fields (int64 each).
(KIND, DTYPE, NDIM, NUMEL, OP, ROOT, NAME, SHAPE_HASH, DIM0, COUNT, INVALID, JOIN_ROUND, PSET,
 DIMS) = range(14)
# The cycle's header, per rank: pending operations, shutting down.
PENDING, SHUTDOWN, HEADER = 0, 1, 2
MAX_DIMS = 10  # also: a grouped allreduce's element count per dtype code
FIELDS = DIMS + MAX_DIMS

KIND_NAMES = {1: "allreduce", 2: "allgather", 3: "broadcast", 4: "alltoall", 5: "reducescatter",
              6: "barrier", 7: "join", 8: "grouped_allreduce", 9: "grouped_allgather",
              10: "grouped_reducescatter", 11: "add_process_set", 12: "remove_process_set"}
ALLREDUCE, ALLGATHER, BROADCAST, ALLTOALL, REDUCESCATTER, BARRIER, JOIN = 1, 2, 3, 4, 5, 6, 7
GROUPED_ALLREDUCE, GROUPED_ALLGATHER, GROUPED_REDUCESCATTER = 8, 9, 10
ADD_PROCESS_SET, REMOVE_PROCESS_SET = 11, 12


def key_hash(key):
    """A stable 62-bit hash of an operation's key ("allreduce.NAME"), never 0."""
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "little") & ((1 << 62) - 1)) or 1


def shape_hash(shapes_and_dtypes):
    return zlib.crc32(repr(shapes_and_dtypes).encode()) & 0x7FFFFFFF


class Negotiated:
    """Every rank's descriptor of one operation (a size × FIELDS table)."""

    def __init__(self, table, rank):
        self.table, self.rank, self.size = table, rank, table.shape[0]

    def joined(self):
        return [r for r in range(self.size) if self.table[r, KIND] == JOIN]

    def active(self):
        return [r for r in range(self.size) if self.table[r, KIND] != JOIN]

    def column(self, field, ranks=None):
        return [int(self.table[r, field]) for r in (ranks if ranks is not None else range(self.size))]

    def shape(self, r):
        n = int(self.table[r, NDIM])
        return [int(d) for d in self.table[r, DIMS:DIMS + min(n, MAX_DIMS)]]


class Handle:
    """What an *_async call returns: done() once the thread ran it; wait() its value or error."""

    __slots__ = ("op", "key", "_done", "_value", "_error", "since", "warned")

    def __init__(self, op, key):
        self.op, self.key = op, key
        self._done = threading.Event()
        self._value = self._error = None
        self.since, self.warned = None, 0

    def finish(self, value=None, error=None):
        self._value, self._error = value, error
        self._done.set()

    def done(self):
        return self._done.is_set()

    def wait(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


def _seconds(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise ValueError("strata.horovod: $%s=%r; expected a number of seconds"
                         % (name, os.environ[name])) from None


class Engine:
    """Owns the runtime's collectives for strata.horovod: the pending operations and the thread
    that matches and runs them."""

    IDLE_SLEEP_MAX = 0.002  # the longest pause between cycles that matched nothing

    def __init__(self, runtime, timeline):
        self.rt = runtime
        self.rank, self.size = runtime.world.rank, runtime.world.size
        self.world = RawCollectives(runtime, runtime._live, "strata_")
        self.timeline = timeline
        self.rounds = 0          # cycles so far: the same count on every rank
        self.stall_warn = _seconds("STRATA_HOROVOD_STALL_SECONDS", 60)
        self.stall_fail = _seconds("STRATA_HOROVOD_STALL_FAIL_SECONDS", 300)
        # Horovod's HOROVOD_CYCLE_TIME, in milliseconds (default 1).
        self.cycle_time = _seconds("HOROVOD_CYCLE_TIME", 1) / 1000.0
        self._queue = queue.Queue()
        self._keys = set()                        # keys submitted and not finished
        self._counters = collections.Counter()    # unnamed operations per kind
        self._lock = threading.Lock()
        self._pending = []                        # handles in submission order (thread only)
        # Process sets: id -> sorted world ranks (0: every rank), and this rank's strata Group of
        # each set it belongs to. Changed only by the thread, in negotiated operations.
        self.process_sets = {0: list(range(self.size))}
        self.groups = {}
        self.next_process_set = 1
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="strata.horovod", daemon=True)
        self._thread.start()

    # ---- the script's side ----------------------------------------------------------------------
    def submit(self, op):
        """Queues op (an object with descriptor() and run(engine, negotiated)); returns its Handle.
        A key already in flight is refused, as Horovod does."""
        if self._stopping.is_set():
            raise ValueError("strata.horovod: shut down; call hvd.init() first")
        kind = op.kind_name
        pset = getattr(op, "pset", 0)
        if pset:  # the same name may be in flight in several process sets
            kind = "%s@%d" % (kind, pset)
        with self._lock:
            if op.name:
                key = "%s.%s" % (kind, op.name)
                if key in self._keys:
                    raise ValueError("strata.horovod.%s: an operation named %r is already in "
                                     "flight; synchronize it first or use another name"
                                     % (kind, op.name))
            else:
                key = "%s.noname.%d" % (kind, self._counters[kind])
                self._counters[kind] += 1
            self._keys.add(key)
        handle = Handle(op, key)
        self._queue.put(handle)
        return handle

    def stop(self):
        """Ends the thread once every rank has asked to (collective). Until then this rank's
        pending operations still run once their other members submit them, and fail when a
        member that has not submitted one shuts down; what is pending when every rank has asked
        fails."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._queue.put(None)  # wakes an idle thread
            self._thread.join()

    # ---- the thread's side ----------------------------------------------------------------------
    def _finish(self, handle, value=None, error=None, start=None, negotiated=None):
        with self._lock:
            self._keys.discard(handle.key)
        timeline = self.timeline
        if timeline is not None and start is not None and self.rank == 0:
            timeline.record(handle.op.kind_name, handle.key.split(".", 1)[1], start, negotiated,
                            time.monotonic())
        handle.finish(value, error)

    def _loop(self):
        pause = 0.0
        while True:
            # Idle (nothing pending here): wait for the script, not in a collective, so that the
            # script may also call the runtime directly while no strata.horovod operation is in
            # flight on any rank. A rank with work waits inside the cycle's allgather for the
            # others to start theirs.
            # While process sets exist, every rank cycles even when idle (as Horovod's background
            # thread always does): a set's operation is negotiated in the world's cycle, which a
            # rank outside the set, idle in its script, must still join for the set to go on.
            # Read before the queue is drained: whatever the script submitted before stop() is
            # then in this cycle's count, so no rank is told that this one shut down without
            # submitting an operation it did submit.
            stopping = self._stopping.is_set()
            block = not self._pending and not stopping and \
                len(self.process_sets) == 1
            while True:
                try:
                    handle = self._queue.get(block=block)
                except queue.Empty:
                    break
                if block and self.cycle_time > 0:
                    # Woken by a submission: gather what the script submits right after it into
                    # the same cycle (Horovod's cycle time; it also lets a duplicate name be seen
                    # while its first operation is still pending).
                    time.sleep(self.cycle_time)
                block = False
                if handle is not None:
                    handle.since = time.monotonic()
                    self._pending.append(handle)
            try:
                progress, done = self._cycle(stopping)
            except BaseException as e:  # noqa: B902 - the runtime failed: every waiter hears it
                for handle in self._pending:
                    self._finish(handle, error=e)
                self._pending = []
                if self._stopping.is_set():
                    return
                continue
            if done:
                return
            if progress:
                pause = 0.0
            else:  # every rank has work, none of it matches yet: do not spin
                pause = min(self.IDLE_SLEEP_MAX, pause * 2 if pause else 0.0001)
                time.sleep(pause)

    def _cycle(self, stopping):
        """One cycle; returns (whether any rank had work, whether every rank has shut down).
        `stopping`: whether this rank had asked to stop before its queue was drained."""
        header = np.array([len(self._pending), 1 if stopping else 0],
                          dtype=np.int64)
        headers = np.empty((self.size, HEADER), dtype=np.int64)
        self.allgather(header.ctypes.data, headers.ctypes.data, HEADER, _capi.I64)
        self.rounds += 1
        if headers[:, SHUTDOWN].all():
            for handle in self._pending:
                self._finish(handle, error=ValueError(
                    "strata.horovod.%s: every rank shut strata.horovod down before it ran"
                    % handle.op.kind_name))
            self._pending = []
            return False, True
        most = int(headers[:, PENDING].max())
        if most == 0:
            return False, False
        mine = np.zeros((most, FIELDS), dtype=np.int64)
        for i, handle in enumerate(self._pending):
            mine[i, :] = handle.op.descriptor()
            mine[i, NAME] = key_hash(handle.key)
            mine[i, PSET] = getattr(handle.op, "pset", 0)
        table = np.empty((self.size, most, FIELDS), dtype=np.int64)
        self.allgather(mine.ctypes.data, table.ctypes.data, most * FIELDS, _capi.I64)
        return self._run_ready(table, headers), False

    def _run_ready(self, table, headers):
        counts = headers[:, PENDING]
        # Per rank: key -> row of its descriptor table.
        rows = [{int(table[r, i, NAME]): i for i in range(int(counts[r]))} for r in range(self.size)]
        # Joined: the join is the oldest operation pending there (what a rank submitted before
        # its join runs first, with its own data).
        joined = [r for r in range(self.size) if counts[r] and table[r, 0, KIND] == JOIN]
        active = [r for r in range(self.size) if r not in joined]
        mine = {key_hash(h.key): h for h in self._pending}
        finished = set()
        mirrored = False
        if active:
            for key, pset in self._ready(table, counts, rows, active, joined):
                if pset:
                    if self._run_in_process_set(key, pset, table, rows, mine):
                        finished.add(key)
                    continue
                neg_table = np.zeros((self.size, FIELDS), dtype=np.int64)
                for r in range(self.size):
                    if r in active:
                        neg_table[r] = table[r, rows[r][key]]
                    else:
                        neg_table[r, KIND] = JOIN
                neg = Negotiated(neg_table, self.rank)
                if self.rank in joined:
                    from ._collective_ops import mirror
                    mirror(self, neg)
                    mirrored = True
                    continue
                self._run_op(mine[key], self, neg)  # the engine: add/remove_process_set need it
                finished.add(key)
        else:  # every rank has joined: each join returns the rank that joined last
            rounds = [int(table[r, 0, JOIN_ROUND]) for r in range(self.size)]
            last = max(r for r in range(self.size) if rounds[r] == max(rounds))
            handle = self._pending[0]
            self._finish(handle, last)
            finished.add(key_hash(handle.key))
        before = len(self._pending)
        self._pending = [h for h in self._pending if key_hash(h.key) not in finished]
        self._check_stalls(rows, headers, joined)
        return bool(finished) or mirrored or len(self._pending) != before

    def _ready(self, table, counts, rows, active, joined):
        """(key, process set) of every operation that can run now, in one order every rank
        computes alike: each active rank's submissions in turn (a global operation when every
        active rank has it; a process set's when every member has it), then the joined ranks'."""
        ready, seen = [], set()
        for r in active + joined:
            for i in range(int(counts[r])):
                key = int(table[r, i, NAME])
                if key in seen or table[r, i, KIND] == JOIN:
                    continue
                pset = int(table[r, i, PSET])
                members = self.process_sets.get(pset)
                if pset == 0:
                    if r in joined or not all(key in rows[a] for a in active):
                        continue
                elif members is None or not all(key in rows[m] for m in members):
                    continue
                seen.add(key)
                ready.append((key, pset))
        return ready

    def _run_in_process_set(self, key, pset, table, rows, mine):
        """A process set's operation, on its members only (over the set's strata Group, ranks
        renumbered as the set's); returns whether this rank ran it."""
        members = self.process_sets[pset]
        if self.rank not in members:
            return False
        neg = Negotiated(np.stack([table[m, rows[m][key]] for m in members]),
                         members.index(self.rank))
        self._run_op(mine[key], RawCollectives(self.rt, self.groups[pset]._live, "strata_group_"),
                     neg)
        return True

    def _run_op(self, handle, collectives, neg):
        """Runs a negotiated operation over `collectives` (the world's or a set's) and finishes its
        handle with the value or the error (every rank that runs it raises alike)."""
        start = time.monotonic()
        try:
            value = handle.op.run(collectives, neg)
            post = getattr(handle.op, "post", None)
            if post is not None:
                value = post(value)
            self._finish(handle, value, None, handle.since, start)
        except Exception as e:  # noqa: B902 - raised again in synchronize
            self._finish(handle, None, e, handle.since, start)

    def _check_stalls(self, rows, headers, joined):
        """Operations only some ranks submitted: a warning, then an error (see the module doc).
        A join waits as long as the others train, but fails once a rank that has not joined has
        shut down: that rank never will."""
        now = time.monotonic()
        for handle in list(self._pending):
            if handle.op.kind == JOIN:
                # A rank that shut down with operations still pending runs them (this joined
                # rank takes part with zeros) before it is gone.
                gone = [r for r in range(self.size)
                        if r not in joined and headers[r, SHUTDOWN] and not headers[r, PENDING]]
                if gone:
                    self._finish(handle, error=RuntimeError(
                        "strata.horovod.join: rank(s) %s shut strata.horovod down without joining"
                        % ", ".join(map(str, gone))))
                    self._pending.remove(handle)
                continue
            key = key_hash(handle.key)
            members = self.process_sets.get(getattr(handle.op, "pset", 0), range(self.size))
            missing = [r for r in members if key not in rows[r]]
            if not missing:
                continue
            waited = now - handle.since
            who = ", ".join(str(r) for r in missing)
            # Only a missing member that has shut down can never submit it: a rank outside the
            # operation's process set may shut down while the set's members are still submitting.
            gone = [r for r in missing if headers[r, SHUTDOWN]]
            if gone:
                self._finish(handle, error=RuntimeError(
                    "strata.horovod.%s (%s): rank(s) %s shut strata.horovod down without "
                    "submitting it" % (handle.op.kind_name, handle.key, ", ".join(map(str, gone)))))
                self._pending.remove(handle)
            elif waited > self.stall_fail > 0:
                self._finish(handle, error=RuntimeError(
                    "strata.horovod.%s (%s): rank(s) %s did not submit it in %.0f s; every rank "
                    "must submit the same collectives (STRATA_HOROVOD_STALL_FAIL_SECONDS)"
                    % (handle.op.kind_name, handle.key, who, waited)))
                self._pending.remove(handle)
            elif waited > self.stall_warn * (handle.warned + 1):
                handle.warned += 1  # again every STRATA_HOROVOD_STALL_SECONDS
                print("[strata.horovod rank %d] waiting %.0f s for rank(s) %s to submit %s"
                      % (self.rank, waited, who, handle.key), file=sys.stderr, flush=True)

    # ---- the runtime's collectives on raw addresses (this thread only) --------------------------
    def allreduce(self, address, count, dtype, op):
        self.world.allreduce(address, count, dtype, op)

    def allgather(self, send, recv, count_per_rank, dtype):
        self.world.allgather(send, recv, count_per_rank, dtype)

    def broadcast(self, address, count, dtype, root):
        self.world.broadcast(address, count, dtype, root)


class RawCollectives:
    """allreduce (in place), allgather and broadcast on raw addresses over every rank
    (strata_allreduce, ...: `prefix` "strata_", `handle` the runtime's) or over a process set's
    Group ("strata_group_", its handle): the two C families take the same arguments after it."""

    def __init__(self, rt, handle, prefix):
        self.rt, self.handle = rt, handle
        lib = rt._lib
        self._names = {what: prefix + what for what in ("allreduce", "allgather", "broadcast")}
        self._fns = {what: getattr(lib, name) for what, name in self._names.items()}

    def _call(self, what, *args):
        self.rt._check(self._fns[what](self.handle(), *args, ctypes.byref(self.rt._err)),
                       self._names[what])

    def allreduce(self, address, count, dtype, op):
        self._call("allreduce", address, address, count, dtype, op)

    def allgather(self, send, recv, count_per_rank, dtype):
        self._call("allgather", send, recv, count_per_rank, dtype)

    def broadcast(self, address, count, dtype, root):
        self._call("broadcast", address, count, dtype, root)
