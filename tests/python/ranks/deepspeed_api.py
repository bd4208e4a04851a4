"""Rank script for test_deepspeed.py: strata.deepspeed (`import strata.deepspeed as deepspeed`) at
any world size. One engine per process (one runtime per process), so each run takes one case:

  deepspeed_api.py RESULTS_DIR engine STAGE  the ds_config's optimizer and WarmupLR, a model built
      under zero.Init, training_data, gradient accumulation 2, checkpoints, deepspeed.comm
  deepspeed_api.py RESULTS_DIR client        a torch optimizer and StepLR, model_parameters
  deepspeed_api.py RESULTS_DIR refusals      bad inputs: each raises naming what to do instead
  deepspeed_api.py RESULTS_DIR init_memory   a 256 MiB model built under zero.Init at stage 3:
      no rank's memory grows by the whole model, while building it or in initialize

Each result is checked against the same operation done with the runtime directly (strata.allreduce,
allgather, broadcast, strata.torch's values) or against values every rank can compute. Writes
"PASS <case>" per case to RESULTS_DIR/rank<r>.txt; the first failure raises (non-zero exit).
"""
import math
import os
import sys
import tempfile
import warnings

import torch
import torch.distributed as tdist

import strata
import strata.deepspeed as deepspeed
import strata.deepspeed.comm as dist

out_dir, case = sys.argv[1], sys.argv[2]
rank, size = dist.get_rank(), dist.get_world_size()  # before initialize: the launcher's
results = open(os.path.join(out_dir, f"rank{rank}.txt"), "w")


def passed(name):
    results.write(f"PASS {name}\n")
    results.flush()


def raises(name, kinds, fn, words=()):
    try:
        fn()
    except kinds as e:
        for w in words:
            assert w in str(e), f"{name}: message {str(e)!r} lacks {w!r}"
        passed(name)
        return
    raise AssertionError(f"{name}: no {kinds} raised")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


def dataset(n=100):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(n, 12, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    index = torch.arange(n)
    return torch.utils.data.TensorDataset(x, y, index)


def config(stage, micro=2, accumulation=2):
    return {"train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": accumulation,
            "optimizer": {"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.0}},
            "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0.0,
                                                          "warmup_max_lr": 0.01,
                                                          "warmup_num_steps": 4,
                                                          "warmup_type": "linear"}},
            "gradient_clipping": 1.0, "zero_optimization": {"stage": stage},
            "dataloader_drop_last": True}


def check_comm():
    """deepspeed.comm against the runtime's own collectives."""
    assert (dist.get_rank(), dist.get_world_size()) == (strata.rank(), strata.size())
    assert dist.get_local_rank() == strata.local_rank() and dist.is_initialized()
    mine = torch.tensor([rank + 1.0, -rank, 2.0], dtype=torch.float64)
    for op, name in ((dist.ReduceOp.SUM, "sum"), (dist.ReduceOp.AVG, "avg"),
                     (dist.ReduceOp.MIN, "min"), (dist.ReduceOp.MAX, "max")):
        t = mine.clone()
        dist.all_reduce(t, op)
        assert torch.equal(t, strata.allreduce(mine, name)), f"all_reduce {name}: {t}"
    t = mine.clone()
    work = dist.all_reduce(t, dist.ReduceOp.PRODUCT, async_op=True)
    work.wait()
    assert torch.equal(t, strata.allgather(mine.view(1, 3)).prod(dim=0)), f"product {t}"
    t = mine.clone()
    dist.broadcast(t, size - 1)
    assert torch.equal(t, strata.broadcast(mine, size - 1))
    rows = [torch.zeros(3, dtype=torch.float64) for _ in range(size)]
    dist.all_gather(rows, mine)
    assert torch.equal(torch.stack(rows), strata.allgather(mine.view(1, 3)))
    flat = torch.zeros(size * 3, dtype=torch.float64)
    dist.all_gather_into_tensor(flat, mine)
    assert torch.equal(flat.view(size, 3), torch.stack(rows))
    dist.barrier()
    if size > 1:  # sub-groups (new_group): evens and odds run their own collectives
        evens, odds = dist.new_group(range(0, size, 2)), dist.new_group(range(1, size, 2))
        group, other = (evens, odds) if rank % 2 == 0 else (odds, evens)
        members = group.ranks
        assert dist.get_world_size(group) == len(members)
        assert dist.get_rank(group) == members.index(rank)
        t = torch.tensor([float(rank)])
        dist.all_reduce(t, group=group)
        assert float(t) == float(sum(members)), t
        t = torch.tensor([float(rank)])
        dist.broadcast(t, src=members[-1], group=group)  # a global rank, as torch's
        assert float(t) == float(members[-1])
        rows = [torch.zeros(1) for _ in members]
        dist.all_gather(rows, torch.tensor([float(rank)]), group=group)
        assert [float(r) for r in rows] == [float(m) for m in members]
        dist.barrier(group=group)
        raises("comm.group.not_member", ValueError, lambda: dist.barrier(group=other),
               ("is not in",))
        dist.destroy_process_group(evens)
        dist.destroy_process_group(odds)
    # initialize made torch.distributed's group too (DistributedSampler(dataset) needs it)
    assert tdist.is_initialized() and tdist.get_rank() == rank and tdist.get_world_size() == size
    passed("comm")


def engine_case(stage):
    accumulation, micro = 2, 2
    torch.manual_seed(11)
    reference = Net()  # what the model built under zero.Init must hold: the same construction
    torch.manual_seed(11)
    with deepspeed.zero.Init(enabled=stage == 3):  # as scripts ask is_deepspeed_zero3_enabled()
        model = Net()
    if stage == 3:
        assert all(p.is_meta for p in model.parameters()), "zero.Init left a parameter whole"
        passed("zero.init.partitioned_at_construction")
    data = dataset()
    engine, optimizer, loader, scheduler = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), training_data=data,
        config=config(stage, micro, accumulation))
    assert isinstance(engine, deepspeed.DeepSpeedEngine) and engine.module is model
    assert engine.zero_optimization_stage() == stage
    assert engine.train_micro_batch_size_per_gpu() == micro
    assert engine.gradient_accumulation_steps() == accumulation
    assert engine.train_batch_size() == micro * accumulation * size
    assert (engine.global_rank, engine.world_size, engine.local_rank) == (
        rank, size, strata.local_rank())
    passed("engine.config")
    whole = engine.module_state_dict()
    for name, value in reference.state_dict().items():
        assert torch.equal(whole[name], value), f"zero.Init: {name} differs from the whole model"
    passed("zero.init.values")
    check_comm()

    # The data loader: micro batches, each rank its DistributedSampler share, drop_last.
    share = -(-len(data) // size)  # DistributedSampler pads every rank's share to this
    assert loader.batch_size == micro and len(loader) == share // micro  # dataloader_drop_last
    seen = torch.cat([batch[2] for batch in loader])
    assert len(seen) == share // micro * micro
    sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=size, rank=rank)
    assert seen.tolist() == list(sampler)[:len(seen)], "not DistributedSampler's order"
    passed("dataloader")

    # Training: boundaries, counters, lr (WarmupLR, run by the runtime), grad norm.
    boundaries, lrs = [], []
    for i, (x, y, _) in enumerate(loader):
        if i == 4 * accumulation:
            break
        boundaries.append(engine.is_gradient_accumulation_boundary())
        loss = torch.nn.functional.cross_entropy(engine(x), y)
        assert engine.backward(loss) is loss
        engine.step()
        if boundaries[-1]:
            lrs.append(engine.get_lr()[0])
            assert engine.get_global_grad_norm() is not None and \
                math.isfinite(engine.get_global_grad_norm())
    assert boundaries == [False, True] * 4, boundaries
    assert engine.global_steps == 4 and engine.micro_steps == 8
    assert engine.global_samples == 4 * engine.train_batch_size()
    assert scheduler.get_lr() == engine.get_lr() == [strata.runtime().lr]
    assert lrs == sorted(lrs) and lrs[0] < lrs[-1], f"WarmupLR did not rise: {lrs}"
    raises("optimizer.step", NotImplementedError, optimizer.step, ("engine.step()",))
    passed("training")

    # Checkpoints: client_state (JSON and not), the counters, the values.
    root = strata.broadcast(torch.tensor(list(tempfile.mkdtemp().encode().ljust(64, b"\0")),
                                         dtype=torch.uint8), 0)
    folder = os.path.join(bytes(root.tolist()).rstrip(b"\0").decode(), "ckpt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert deepspeed_load_nothing(engine, folder) == (None, None)
    assert any("no checkpoint" in str(w.message) for w in caught)
    state = {"epoch": 3, "note": "x", "tensor": torch.arange(4)}
    assert engine.save_checkpoint(folder, client_state=state) is True
    saved = engine.module_state_dict()
    for i, (x, y, _) in enumerate(loader):
        if i == 2 * accumulation:
            break
        engine.backward(torch.nn.functional.cross_entropy(engine(x), y))
        engine.step()
    assert engine.global_steps == 6
    path, client = engine.load_checkpoint(folder)
    assert path == os.path.join(folder, "global_step4"), path
    assert client["epoch"] == 3 and client["note"] == "x" and torch.equal(client["tensor"],
                                                                          torch.arange(4))
    assert engine.global_steps == 4
    loaded = engine.module_state_dict()
    for name in saved:
        assert torch.equal(saved[name], loaded[name]), f"load_checkpoint: {name} differs"
    engine.save_checkpoint(folder, tag="json_only", client_state={"a": [1, 2]})
    assert engine.load_checkpoint(folder, tag="json_only")[1] == {"a": [1, 2]}
    passed("checkpoint")

    with deepspeed.zero.GatheredParameters(list(model.parameters())):
        assert all(p.numel() > 0 for p in model.parameters())
    passed("zero.gathered_parameters")
    engine.destroy()
    assert all(p.numel() > 0 for p in model.parameters())  # whole again after destroy


def deepspeed_load_nothing(engine, folder):
    return engine.load_checkpoint(folder)


def client_case():
    torch.manual_seed(3)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    engine, optimizer, loader, scheduler = deepspeed.initialize(
        model=model, optimizer=opt, lr_scheduler=sched,
        config={"train_batch_size": 4 * size, "gradient_accumulation_steps": 2,
                "zero_optimization": {"stage": 1}})
    assert loader is None and scheduler is sched and optimizer.param_groups is opt.param_groups
    assert engine.train_micro_batch_size_per_gpu() == 2
    g = torch.Generator().manual_seed(100 + rank)
    lrs = []
    for step in range(6):
        x, y = torch.randn(2, 12, generator=g), torch.randint(0, 3, (2,), generator=g)
        boundary = engine.is_gradient_accumulation_boundary()
        engine.backward(torch.nn.functional.cross_entropy(engine(x), y))
        engine.step()
        if boundary:
            lrs.append(engine.get_lr()[0])
    # StepLR steps once per optimizer step (3 of them): 0.1, 0.1, 0.05, then 0.05
    assert engine.global_steps == 3 and lrs == [0.1, 0.05, 0.05], lrs
    # The module holds the same values on every rank (the runtime stepped them).
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert torch.equal(strata.broadcast(flat, 0), flat)
    passed("client_optimizer")

    # A checkpoint brings back the scheduler's position and the optimizer's lr with the values.
    root = strata.broadcast(torch.tensor(list(tempfile.mkdtemp().encode().ljust(64, b"\0")),
                                         dtype=torch.uint8), 0)
    folder = os.path.join(bytes(root.tolist()).rstrip(b"\0").decode(), "ckpt")
    engine.save_checkpoint(folder, client_state={"step": 3})
    for step in range(4):
        x, y = torch.randn(2, 12, generator=g), torch.randint(0, 3, (2,), generator=g)
        engine.backward(torch.nn.functional.cross_entropy(engine(x), y))
        engine.step()
    assert engine.get_lr() == [0.025] and sched.last_epoch == 5
    path, client = engine.load_checkpoint(folder)
    assert client == {"step": 3} and engine.global_steps == 3
    assert sched.last_epoch == 3 and engine.get_lr() == [0.05], (sched.last_epoch, engine.get_lr())
    assert torch.equal(torch.cat([p.detach().flatten() for p in model.parameters()]), flat)
    passed("client_checkpoint")
    engine.destroy()


def refusals_case():
    model = Net()
    cfg = config(0)
    raises("config.twice", ValueError, lambda: deepspeed.initialize(
        args=type("A", (), {"deepspeed_config": "x.json"})(), model=model, config=cfg),
        ("give one",))
    raises("config.missing", ValueError, lambda: deepspeed.initialize(model=model),
           ("no DeepSpeed config",))
    raises("config.no_file", ValueError, lambda: deepspeed.initialize(
        model=model, config="/nonexistent/ds.json"), ("/nonexistent/ds.json", "no such file"))
    raises("mpu", NotImplementedError, lambda: deepspeed.initialize(model=model, config=cfg,
                                                                   mpu=object()), ("mpu",))
    raises("init_inference", NotImplementedError, deepspeed.init_inference, ("inference",))
    raises("comm.new_group.before_initialize", RuntimeError, lambda: dist.new_group([0]),
           ("deepspeed.initialize",))
    raises("comm.before_initialize", RuntimeError,
           lambda: dist.all_reduce(torch.ones(1)), ("deepspeed.initialize",))
    raises("zero.gathered.modifier", NotImplementedError,
           lambda: deepspeed.zero.GatheredParameters([], modifier_rank=0), ("modifier_rank",))
    first = [p for p in model.parameters()][:1]
    raises("model_parameters.subset", ValueError, lambda: deepspeed.initialize(
        model=model, model_parameters=first, config=cfg), ("leaves out", "fc1.bias"))
    groups = [{"params": [model.fc1.weight], "weight_decay": 0.1},
              {"params": [p for n, p in model.named_parameters() if n != "fc1.weight"],
               "weight_decay": 0.0}]
    raises("model_parameters.groups", ValueError, lambda: deepspeed.initialize(
        model=model, model_parameters=groups, config=cfg), ("one set",))
    raises("scheduler.twice", ValueError, lambda: deepspeed.initialize(
        model=model, config=cfg, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        lr_scheduler=lambda o: torch.optim.lr_scheduler.StepLR(o, 1)), ("give one",))
    with deepspeed.zero.Init(config_dict_or_path=config(0)):  # stage 0: not partitioned
        assert not any(p.is_meta for p in Net().parameters())
    with deepspeed.zero.Init():
        partitioned = Net()
    raises("zero.init.below_stage_3", ValueError, lambda: deepspeed.initialize(
        model=partitioned, config=cfg), ("zero.Init", "stage 0"))
    # A DeepSpeed key the runtime does not act on is warned about by name (the test reads the
    # log); the engine runs on.
    cfg = dict(config(0), flops_profiler={"enabled": True, "profile_step": 1})
    del cfg["scheduler"]
    engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config=cfg)
    assert scheduler is None
    # The ds_config's optimizer: a script that writes param_groups' lr sets the runtime's.
    optimizer.param_groups[0]["lr"] = 0.5
    for _ in range(2):
        engine.backward(torch.nn.functional.cross_entropy(engine(torch.ones(2, 12)),
                                                          torch.zeros(2, dtype=torch.long)))
        engine.step()
    assert strata.runtime().lr == 0.5 and engine.get_lr() == [0.5]
    passed("optimizer.param_groups_lr")
    raises("load_module_only", NotImplementedError,
           lambda: engine.load_checkpoint("x", load_module_only=True), ("load_module_only",))
    raises("comm.group", TypeError, lambda: dist.barrier(group=object()),
           ("what new_group returned",))
    passed("refusals")
    engine.destroy()


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def init_memory_case():
    """16 layers of 1024 x 4096 or 4096 x 1024 fp32 (16 MiB each, 256 MiB in all), built under zero.Init and
    trained one step at stage 3. A rank keeps its slices (whole / size) and one layer at a time
    whole: its memory must grow by clearly less than the whole model while the model is built,
    and initialize (which writes the values group by group) must not hold it whole either."""
    layers, whole = 16, 16 * 1024 * 4096 * 4
    torch.manual_seed(1)
    base = rss_bytes()
    assert peak_rss_bytes() < base + whole // 8, "the process peaked above its current size"
    with deepspeed.zero.Init():
        model = torch.nn.Sequential(*[torch.nn.Linear(*((1024, 4096) if i % 2 == 0 else
                                                         (4096, 1024)), bias=False)
                                      for i in range(layers)])
    built = peak_rss_bytes() - base
    limit = whole // size + 2 * whole // layers + (32 << 20)
    assert built < limit, f"building grew the peak by {built >> 20} MiB (limit {limit >> 20})"
    passed("init_memory.build")
    cfg = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3},
           "optimizer": {"type": "SGD", "params": {"lr": 0.01}}}
    before = peak_rss_bytes()
    engine, _, _, _ = deepspeed.initialize(model=model, config=cfg)
    grown = peak_rss_bytes() - before
    # Beyond what the runtime accounts for (its partitions, masters, buffers: whole / size each),
    # initialize holds one group whole at a time (a few copies of one layer), not the model.
    accounted = sum(strata.runtime().memory()["peak"].values())
    transient = grown - accounted
    assert transient < whole // 4, (
        f"initialize grew the peak by {grown >> 20} MiB, {transient >> 20} MiB beyond the "
        f"runtime's {accounted >> 20} MiB (whole model {whole >> 20} MiB)")
    engine.backward(engine(torch.ones(1, 1024)).sum())
    engine.step()
    results.write(f"INFO rank {rank}: build +{built >> 20} MiB, initialize +{grown >> 20} MiB "
                  f"({transient >> 20} MiB beyond the runtime's {accounted >> 20} MiB), whole "
                  f"model {whole >> 20} MiB, {size} ranks\n")
    passed("init_memory.initialize")
    engine.destroy()


if case == "engine":
    engine_case(int(sys.argv[3]))
elif case == "client":
    client_case()
elif case == "init_memory":
    init_memory_case()
elif case == "refusals":
    refusals_case()
else:
    raise SystemExit(f"deepspeed_api.py: unknown case {case!r}")
passed("done")
results.close()
