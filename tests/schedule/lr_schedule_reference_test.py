#!/usr/bin/env python3
"""Checks lr_schedule_dump against DeepSpeed's learning-rate schedules, written out here again.

Usage: lr_schedule_reference_test.py <path to lr_schedule_dump>

Each reference below simulates what a DeepSpeed scheduler (deepspeed/runtime/lr_schedules.py,
0.19.8) does to a one-group optimizer: its constructor writes the initial lr (and betas), then
every scheduler.step() advances last_batch_iteration by one and writes the lr (and betas) again.
The optimizer's lr/beta1 after construction and after each of 1,001 steps must match the C++
schedule's lr(i)/momentum(i) for i = -1..1000 to a relative 1e-12. Standard library only; the C++
code is never consulted.
"""

import json
import math
import subprocess
import sys

STEPS = 1000
REL_TOL = 1e-12


class Optimizer:
    """One parameter group: lr, and beta1 when the optimizer has momentum."""

    def __init__(self, lr, momentum):
        self.lr = lr
        self.beta1 = momentum  # None: no betas, nothing to cycle
        self.beta2 = None if momentum is None else 0.999


def warmup_gamma(kind, n, it):
    # the warmup part of WarmupLR._get_gamma / WarmupCosineLR.get_lr_ratio
    if kind == "log":
        return (1.0 / math.log(n)) * math.log(it + 1)
    return it / n


class RefWarmupLR:
    def __init__(self, opt, warmup_min_lr=0.0, warmup_max_lr=None, warmup_num_steps=1000,
                 warmup_type="log", total_num_steps=None, decay=False):
        self.opt = opt
        if warmup_max_lr is None:
            warmup_max_lr = opt.lr
        if isinstance(warmup_max_lr, list):
            warmup_max_lr = warmup_max_lr[0]
        if isinstance(warmup_min_lr, list):
            warmup_min_lr = warmup_min_lr[0]
        self.lo, self.hi = warmup_min_lr, warmup_max_lr
        self.n = max(2, warmup_num_steps)
        self.kind = warmup_type
        self.total = total_num_steps
        self.decay = decay
        self.it = -1
        opt.lr = self.lo  # iteration -1: the minimum

    def step(self):
        self.it += 1
        it = self.it
        if it < self.n:
            g = warmup_gamma(self.kind, self.n, it)
        elif self.decay:
            g = max(0.0, float(self.total - it) / float(max(1.0, self.total - self.n)))
        else:
            g = 1.0
        self.opt.lr = self.lo + (self.hi - self.lo) * g


def ref_warmup_decay(opt, total_num_steps, warmup_min_lr=0.0, warmup_max_lr=0.001,
                     warmup_num_steps=1000, warmup_type="log"):
    # WarmupDecayLR hands its own default 0.001 to WarmupLR; only an explicit None means opt.lr
    return RefWarmupLR(opt, warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type,
                       total_num_steps, decay=True)


class RefWarmupCosineLR:
    def __init__(self, opt, total_num_steps, warmup_min_ratio=0.0, warmup_num_steps=1000,
                 cos_min_ratio=0.0001, warmup_type="log"):
        self.opt = opt
        self.base = opt.lr
        self.total = total_num_steps
        self.r0 = warmup_min_ratio
        self.n = max(2, warmup_num_steps)
        self.rmin = cos_min_ratio
        self.kind = warmup_type
        self.it = -1
        opt.lr = 0.0  # get_lr() before the start: 0.0

    def step(self):
        self.it += 1
        it = self.it
        if it < self.n:
            r = warmup_gamma(self.kind, self.n, it)
            r = self.r0 + r * (1.0 - self.r0)
        else:
            progress = min(1.0, (it - self.n + 1) / max(1, self.total - self.n))
            r = (1 + math.cos(math.pi * progress)) / 2
            r = max(0.0, self.rmin + (1.0 - self.rmin) * r)
        self.opt.lr = self.base * r


class RefOneCycle:
    def __init__(self, opt, cycle_min_lr, cycle_max_lr, decay_lr_rate=0.0,
                 cycle_first_step_size=2000, cycle_second_step_size=None,
                 cycle_first_stair_count=0, cycle_second_stair_count=None, decay_step_size=0,
                 cycle_momentum=True, cycle_min_mom=0.8, cycle_max_mom=0.9, decay_mom_rate=0.0):
        self.opt = opt
        one = lambda v: v[0] if isinstance(v, list) else v
        self.first = float(cycle_first_step_size)
        self.second = self.first if cycle_second_step_size is None else float(cycle_second_step_size)
        self.total = self.first + self.second
        self.ratio = self.first / self.total
        self.stairs1 = cycle_first_stair_count
        self.stairs2 = self.stairs1 if cycle_second_stair_count is None else cycle_second_stair_count
        self.decay_step = decay_step_size
        self.lr_lo, self.lr_hi, self.lr_rate = one(cycle_min_lr), one(cycle_max_lr), decay_lr_rate
        self.mom_lo, self.mom_hi, self.mom_rate = one(cycle_min_mom), one(cycle_max_mom), decay_mom_rate
        self.skip_lr = decay_step_size == 0 or decay_lr_rate == 0
        self.skip_mom = decay_step_size == 0 or decay_mom_rate == 0
        self.momentum = cycle_momentum and opt.beta1 is not None
        self.it = -1
        opt.lr = self.lr_lo
        if self.momentum:
            opt.beta1, opt.beta2 = self.mom_lo, 0.99

    def scale(self):
        b = self.it + 1
        cycle = math.floor(1 + b / self.total)
        x = 1.0 + b / self.total - cycle
        if x <= self.ratio:
            s, stairs = x / self.ratio, self.stairs1
        else:
            s, stairs = (x - 1) / (self.ratio - 1), self.stairs2
        if stairs > 0:
            c = b % self.total
            if c <= self.first:
                pos = c * stairs / self.first
            else:
                pos = (self.total - c) * stairs / self.second
            s = math.floor(pos) / stairs
        return s

    def step(self):
        self.it += 1
        in_cycle = self.it < self.total
        k = self.it - self.total + 1  # batches into the decay phase
        if in_cycle:
            self.opt.lr = self.lr_lo + (self.lr_hi - self.lr_lo) * self.scale()
        elif self.skip_lr:
            self.opt.lr = self.lr_lo
        else:
            self.opt.lr = self.lr_lo / (1 + self.lr_rate * (k / self.decay_step))
        if self.momentum:
            if in_cycle:
                self.opt.beta1 = self.mom_hi - (self.mom_hi - self.mom_lo) * self.scale()
            elif self.skip_mom:
                self.opt.beta1 = self.mom_hi
            else:
                self.opt.beta1 = self.mom_hi * (1 + self.mom_rate * (k / self.decay_step))


class RefLRRangeTest:
    def __init__(self, opt, lr_range_test_min_lr=1e-3, lr_range_test_step_size=2000,
                 lr_range_test_step_rate=1.0, lr_range_test_staircase=False):
        self.opt = opt
        self.lo = lr_range_test_min_lr[0] if isinstance(lr_range_test_min_lr, list) else lr_range_test_min_lr
        self.size, self.rate, self.stairs = lr_range_test_step_size, lr_range_test_step_rate, lr_range_test_staircase
        self.it = -1
        opt.lr = self.lo

    def step(self):
        self.it += 1
        t = float(self.it + 1) / self.size
        if self.stairs:
            t = math.floor(t)
        self.opt.lr = self.lo * (1 + self.rate * t)


REFS = {
    "WarmupLR": RefWarmupLR,
    "WarmupDecayLR": ref_warmup_decay,
    "WarmupCosineLR": RefWarmupCosineLR,
    "OneCycle": RefOneCycle,
    "LRRangeTest": RefLRRangeTest,
}

# (name, scheduler block, optimizer lr, optimizer beta1 or None)
CASES = [
    ("warmup_log_defaults", {"type": "WarmupLR", "params": {}}, 0.01, 0.9),
    ("warmup_linear", {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-5, "warmup_max_lr": 3e-3,
                                                      "warmup_num_steps": 100, "warmup_type": "linear"}}, 0.1, None),
    ("warmup_log_short", {"type": "WarmupLR", "params": {"warmup_min_lr": 2e-4, "warmup_max_lr": 7e-3,
                                                         "warmup_num_steps": 37}}, 0.1, None),
    ("warmup_one_step_clamped", {"type": "WarmupLR", "params": {"warmup_num_steps": 1, "warmup_max_lr": [0.002]}}, 0.1, None),
    ("warmup_linear_one_step", {"type": "WarmupLR", "params": {"warmup_num_steps": 1, "warmup_type": "linear",
                                                               "warmup_min_lr": [0.001]}}, 0.05, None),
    ("warmup_max_null", {"type": "WarmupLR", "params": {"warmup_max_lr": None, "warmup_num_steps": 10}}, 0.3, None),
    ("decay_log", {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000, "warmup_min_lr": 1e-6,
                                                       "warmup_max_lr": 5e-3, "warmup_num_steps": 100}}, 0.1, None),
    ("decay_linear_total_below_warmup", {"type": "WarmupDecayLR", "params": {"total_num_steps": 50, "warmup_num_steps": 200,
                                                                            "warmup_type": "linear", "warmup_max_lr": 0.01}}, 0.1, None),
    ("decay_default_max", {"type": "WarmupDecayLR", "params": {"total_num_steps": 800, "warmup_num_steps": 30}}, 0.5, None),
    ("decay_max_null", {"type": "WarmupDecayLR", "params": {"total_num_steps": 600, "warmup_max_lr": None,
                                                            "warmup_num_steps": 60, "warmup_type": "linear"}}, 0.25, None),
    ("decay_total_equals_warmup", {"type": "WarmupDecayLR", "params": {"total_num_steps": 100, "warmup_num_steps": 100}}, 0.1, None),
    ("decay_total_zero", {"type": "WarmupDecayLR", "params": {"total_num_steps": 0, "warmup_num_steps": 5}}, 0.1, None),
    ("cosine_log", {"type": "WarmupCosineLR", "params": {"total_num_steps": 1000, "warmup_min_ratio": 0.1,
                                                         "warmup_num_steps": 100, "cos_min_ratio": 0.01}}, 0.02, 0.9),
    ("cosine_linear_total_below_warmup", {"type": "WarmupCosineLR", "params": {"total_num_steps": 30, "warmup_num_steps": 100,
                                                                              "warmup_type": "linear"}}, 0.02, None),
    ("cosine_defaults", {"type": "WarmupCosineLR", "params": {"total_num_steps": 600}}, 3e-4, None),
    ("cosine_short", {"type": "WarmupCosineLR", "params": {"total_num_steps": 400, "warmup_num_steps": 1,
                                                           "warmup_type": "linear", "cos_min_ratio": 0.2}}, 1.0, None),
    ("onecycle_continuous_lr_decay", {"type": "OneCycle", "params": {
        "cycle_min_lr": 1e-4, "cycle_max_lr": 1e-2, "cycle_first_step_size": 200, "cycle_second_step_size": 300,
        "decay_lr_rate": 0.5, "decay_step_size": 50, "cycle_momentum": False}}, 0.1, 0.9),
    ("onecycle_stairs_momentum", {"type": "OneCycle", "params": {
        "cycle_min_lr": 2e-4, "cycle_max_lr": 4e-3, "cycle_first_step_size": 250, "cycle_second_step_size": 150,
        "cycle_first_stair_count": 4, "cycle_second_stair_count": 5, "decay_step_size": 100,
        "decay_lr_rate": 0.1, "cycle_min_mom": 0.85, "cycle_max_mom": 0.95, "decay_mom_rate": 0.01}}, 0.1, 0.9),
    ("onecycle_stairs_default_second", {"type": "OneCycle", "params": {
        "cycle_min_lr": [0.001], "cycle_max_lr": [0.01], "cycle_first_step_size": 100, "cycle_second_step_size": None,
        "cycle_first_stair_count": 7, "cycle_min_mom": [0.8], "cycle_max_mom": [0.92]}}, 0.1, 0.9),
    ("onecycle_momentum_no_decay", {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.001, "cycle_max_lr": 0.006, "cycle_first_step_size": 333, "cycle_second_step_size": 111,
        "decay_lr_rate": 0.3, "decay_step_size": 0, "decay_mom_rate": 0.5}}, 0.1, 0.9),
    ("onecycle_optimizer_without_momentum", {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.001, "cycle_max_lr": 0.006, "cycle_first_step_size": 120}}, 0.1, None),
    ("onecycle_no_second_half", {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.001, "cycle_max_lr": 0.01, "cycle_first_step_size": 300, "cycle_second_step_size": 0,
        "decay_lr_rate": 0.2, "decay_step_size": 10, "cycle_first_stair_count": 6}}, 0.1, 0.95),
    ("onecycle_float_sizes", {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.0005, "cycle_max_lr": 0.0035, "cycle_first_step_size": 100.5, "cycle_second_step_size": 201.25,
        "decay_lr_rate": 0.05, "decay_step_size": 7.5, "decay_mom_rate": -0.001, "cycle_first_stair_count": -1}}, 0.1, 0.9),
    ("onecycle_defaults", {"type": "OneCycle", "params": {"cycle_min_lr": 0.01, "cycle_max_lr": 0.1}}, 0.1, 0.9),
    ("rangetest_continuous", {"type": "LRRangeTest", "params": {
        "lr_range_test_min_lr": 1e-5, "lr_range_test_step_size": 100, "lr_range_test_step_rate": 0.5}}, 0.1, None),
    ("rangetest_staircase", {"type": "LRRangeTest", "params": {
        "lr_range_test_min_lr": [2e-4], "lr_range_test_step_size": 64, "lr_range_test_step_rate": 2.0,
        "lr_range_test_staircase": True}}, 0.1, 0.9),
    ("rangetest_defaults", {"type": "LRRangeTest", "params": {}}, 0.1, None),
]


def expected(block, lr, momentum):
    opt = Optimizer(lr, momentum)
    sched = REFS[block["type"]](opt, **block["params"])
    rows = [(-1, opt.lr, opt.beta1 if isinstance(sched, RefOneCycle) and sched.momentum else None)]
    for _ in range(STEPS + 1):
        sched.step()
        rows.append((sched.it, opt.lr, opt.beta1 if isinstance(sched, RefOneCycle) and sched.momentum else None))
    return rows


def close(a, b):
    return a == b or abs(a - b) <= REL_TOL * max(abs(a), abs(b))


def main():
    dump = sys.argv[1]
    failures = 0
    for name, block, lr, momentum in CASES:
        out = subprocess.run([dump, json.dumps(block), repr(lr), "nan" if momentum is None else repr(momentum),
                              str(STEPS)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"FAIL {name}: lr_schedule_dump exited {out.returncode}: {out.stderr.strip()}")
            failures += 1
            continue
        got = [line.split() for line in out.stdout.splitlines()]
        want = expected(block, lr, momentum)
        if len(got) != len(want):
            print(f"FAIL {name}: {len(got)} lines, expected {len(want)}")
            failures += 1
            continue
        bad = 0
        for (gi, glr, gmom), (wi, wlr, wmom) in zip(got, want):
            glr, gmom = float(glr), float(gmom)
            ok = int(gi) == wi and close(glr, wlr)
            ok = ok and (math.isnan(gmom) if wmom is None else close(gmom, wmom))
            if not ok:
                if bad < 5:
                    print(f"FAIL {name}: iteration {gi}: got lr {glr!r} momentum {gmom!r}, "
                          f"expected iteration {wi} lr {wlr!r} momentum {wmom!r}")
                bad += 1
        if bad:
            failures += 1
        else:
            print(f"ok   {name}: iterations -1..{STEPS}, lr(-1) = {want[0][1]!r}, lr(0) = {want[1][1]!r}")
    print(f"{len(CASES) - failures}/{len(CASES)} cases match DeepSpeed's formulas")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
