"""Trains a small decoder (tied embeddings, a block called twice, optionally a gradient
checkpointed block) through strata.torch.DistributedOptimizer on fixed random tokens, and has
rank 0 write the final parameters (torch.save of {name: tensor}) to OUT, the initial ones
(seeded alike on every rank) to OUT.initial. Also checks, on every
rank, what ZeRO stage 3 promises about memory: between uses a partitioned parameter's data is an
empty placeholder, and after opt.step() no tensor the module can reach holds a whole one.

    zero3_module.py MANIFEST OVERRIDES_JSON CASE OUT [STEPS]

CASE: plain | bf16module (the module in bf16, not bridged) | twice (one block applied twice per forward) | checkpoint (torch.utils.checkpoint
around a block) | outside (a parameter read outside its module: expected to fail, naming it) |
seeded (plain, initialized by seeded_fill) | meta (the same model built on the meta device and
written by strata.torch with init=seeded_fill(): the values of seeded) | meta_buffer, stray_init
(bad input: a buffer on meta, init without meta parameters) | leaf_plain, leaf_twice,
leaf_checkpoint (those cases with each Block a leaf module: one group per block)
"""
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

import strata.torch as st

VOCAB, WIDTH, CONTEXT = 32, 24, 8


class Block(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH, device=device)
        self.up = nn.Linear(WIDTH, 4 * WIDTH, device=device)
        self.down = nn.Linear(4 * WIDTH, WIDTH, device=device)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class Decoder(nn.Module):
    def __init__(self, case, device=None):
        super().__init__()
        self.case = case
        self.tok = nn.Embedding(VOCAB, WIDTH, device=device)
        # The root module's own parameter.
        self.pos = nn.Parameter(torch.empty(CONTEXT, WIDTH, device=device).normal_(0, 0.02))
        self.blocks = nn.ModuleList([Block(device), Block(device)])
        self.norm = nn.LayerNorm(WIDTH, device=device)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False, device=device)
        self.head.weight = self.tok.weight  # tied: the head uses the embedding's parameter

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos[: tokens.shape[1]]
        for i, block in enumerate(self.blocks):
            if self.case == "checkpoint" and i == 1:
                x = torch.utils.checkpoint.checkpoint(block, x)
            else:
                x = block(x)
        if self.case == "twice":
            x = self.blocks[0](x)  # the same module (and parameters) a second time
        if self.case == "outside":
            x = x + self.blocks[1].up.bias[:WIDTH]  # another module's parameter
        return self.head(self.norm(x))


def seeded_fill():
    """fill(name, parameter) in named_parameters() order: the same values built whole (case
    seeded) or on the meta device and written group by group by strata.torch (case meta)."""
    gen = torch.Generator().manual_seed(7)

    @torch.no_grad()
    def fill(name, p):
        p.copy_(torch.randn(p.shape, generator=gen) * 0.1 + (1.0 if "norm.weight" in name else 0))
    return fill


def main():
    manifest, overrides, case, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 6
    torch.manual_seed(0)
    init = None
    leaf_modules = None
    if case.startswith("leaf_"):  # each Block gathered as one unit
        case, leaf_modules = case[len("leaf_"):], [Block]
    if case in ("meta", "meta_buffer"):  # never whole: strata.torch writes it group by group
        model = Decoder("plain", device="meta")
        init = seeded_fill()
        initial = {}
        if case == "meta_buffer":  # refused: a buffer has no values to write
            model.norm.register_buffer("meta_stat", torch.empty(3, device="meta"))
    elif case == "stray_init":  # refused: init without a meta parameter
        model, init, initial = Decoder("plain"), seeded_fill(), {}
    else:
        model = Decoder("plain" if case == "seeded" else case)
        if case == "seeded":
            fill = seeded_fill()
            for name, p in model.named_parameters():
                fill(name, p)
        if case == "bf16module":  # the module itself in bf16: parameters registered as they are
            model = model.to(torch.bfloat16)
        initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    adam = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    opt = st.DistributedOptimizer(adam, model, manifest=manifest, overrides=overrides, init=init,
                                  leaf_modules=leaf_modules)
    print("rank %d groups %d" % (opt.world.rank, len(opt._groups)), flush=True)
    if case == "meta":
        initial = opt.module_state_dict()
    world = opt.world
    stage3 = any(rec.partitioned for rec in opt._params)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (64, CONTEXT + 1), generator=g)
    for step in range(steps):
        batch = tokens[(step * world.size + world.rank) * 4 % 64:][:4]
        logits = model(batch[:, :-1]).float()
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.scale_loss(loss).backward()
        result = opt.step()
        assert result.outcome == "applied", result
        if stage3:
            for rec in opt._params:
                if rec.partitioned:
                    assert rec.p.data.numel() == 0, "%s holds %d elements after step %d" % (
                        rec.name, rec.p.data.numel(), step)
        print("rank %d step %d loss %.6f" % (world.rank, step, loss.item()), flush=True)
    if stage3:
        print("rank %d partitioned %d of %d parameters" % (
            world.rank, sum(rec.partitioned for rec in opt._params), len(opt._params)))
    state = opt.module_state_dict()
    if world.rank == 0:
        torch.save(dict(state), out)
        torch.save(initial, out + ".initial")
    opt.close()
    # After close the module is whole again and usable on its own.
    with torch.no_grad():
        model(tokens[:2, :-1])


if __name__ == "__main__":
    main()
