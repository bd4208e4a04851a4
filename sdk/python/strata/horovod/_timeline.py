"""hvd.start_timeline / stop_timeline: a Chrome-trace file (chrome://tracing, Perfetto) of the
operations strata.horovod ran, in Horovod's layout: one row per tensor name ("allreduce.NAME"), a
NEGOTIATE_<KIND> span for the descriptor exchange and a <KIND> span for the data, CYCLE_START marks
when asked. Rank 0 writes it, as Horovod's does. The runtime's own timeline (STRATA_TIMELINE) is
separate and records the collectives underneath."""
import json
import os
import threading
import time


class Timeline:
    def __init__(self, path, mark_cycles):
        self.path, self.mark_cycles = os.fspath(path), bool(mark_cycles)
        self._events, self._rows = [], {}
        self._lock = threading.Lock()
        self._epoch_us = int(time.time() * 1e6)
        self._origin = time.monotonic()
        with open(self.path, "w") as f:  # created now, so a bad path fails at start_timeline
            f.write("[]\n")

    def _us(self, t):
        return int((t - self._origin) * 1e6)

    def record(self, kind, name, start, negotiated, end):
        """One operation: negotiated from `start` to `negotiated`, data moved until `end`."""
        label = "%s.%s" % (kind, name or "noname")
        with self._lock:
            row = self._rows.setdefault(label, len(self._rows) + 1)
            if self.mark_cycles:
                self._events.append({"name": "CYCLE_START", "ph": "i", "s": "g", "pid": row,
                                     "ts": self._us(start)})
            self._events.append({"name": "NEGOTIATE_" + kind.upper(), "ph": "X", "pid": row,
                                 "ts": self._us(start), "dur": self._us(negotiated) - self._us(start)})
            self._events.append({"name": kind.upper(), "ph": "X", "pid": row,
                                 "ts": self._us(negotiated), "dur": self._us(end) - self._us(negotiated)})

    def close(self):
        with self._lock:
            meta = [{"name": "process_name", "ph": "M", "pid": row, "args": {"name": label}}
                    for label, row in self._rows.items()]
            meta.append({"name": "clock", "ph": "M", "pid": 0,
                         "args": {"start_time_since_epoch_in_micros": self._epoch_us}})
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(meta + self._events, f, indent=0)
            os.replace(tmp, self.path)
