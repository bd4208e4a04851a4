"""A decoder-only transformer language model (GPT-style) over bytes, for examples/transformer.

    tok (Embedding vocab x d) + pos (Embedding context x d)
    blocks[i]: x + attn(ln1(x)), then x + mlp(ln2(x))       (pre-norm)
      attn: causal multi-head self-attention, q, k, v, proj = Linear(d, d), k without bias
      mlp:  fc = Linear(d, 4d), GELU, proj = Linear(4d, d)
    ln_f (LayerNorm), head = Linear(d, vocab, bias=False) whose weight IS tok.weight (tied)

The key projection has no bias (as Whisper's): a bias added to every key adds q.b_k to every score
of a query, which the softmax cancels, so its true gradient is exactly 0 and what autograd returns
is rounding noise, which AdamW (dividing by the noise's own scale) turns into steps of up to ~lr/100
that differ between any two ways of summing the same gradients. GPT-2's fused qkv bias has that
degenerate third; without it every parameter has a real gradient, and two data-parallel runs can
be compared parameter by parameter.

Attention is written out (softmax(q k^T / sqrt(d_head) + causal mask) v), not
F.scaled_dot_product_attention, so the module computes the same on torch 1.13 and 2.x.

named_parameters() yields the tied weight once, as "tok.weight" (torch deduplicates shared
parameters); state_dict() holds it under both "tok.weight" and "head.weight".

init(seed) (or initializer(seed) per parameter): GPT-2's initialisation from one torch.Generator, parameter after parameter in
named_parameters() order: every Linear and Embedding weight normal(0, 0.02), the two residual
projections of each block (attn.proj, mlp.proj) normal(0, 0.02 / sqrt(2 * layers)), biases 0,
LayerNorm weight 1 and bias 0. Same seed, same values, on every rank and in every mode.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 256  # byte-level tokens


@dataclass(frozen=True)
class Config:
    layers: int
    d_model: int
    heads: int
    context: int
    vocab: int = VOCAB


# --size presets. Parameter counts (tied head counted once) are in README.md; count_parameters()
# prints the exact figure at start.
SIZES = {
    "tiny": Config(layers=2, d_model=128, heads=4, context=64),
    "small": Config(layers=6, d_model=288, heads=6, context=256),
    "base": Config(layers=8, d_model=512, heads=8, context=512),
    "100m": Config(layers=16, d_model=768, heads=12, context=1024),
    "350m": Config(layers=28, d_model=1024, heads=16, context=1024),
    "1b": Config(layers=24, d_model=2048, heads=16, context=1024),
}


def check_config(cfg):
    """A list of what is wrong with cfg (empty when it is usable)."""
    problems = []
    for key in ("layers", "d_model", "heads", "context", "vocab"):
        if getattr(cfg, key) < 1:
            problems.append(f"{key} must be >= 1, got {getattr(cfg, key)}")
    if cfg.heads >= 1 and cfg.d_model % cfg.heads != 0:
        problems.append(f"d_model {cfg.d_model} is not a multiple of heads {cfg.heads}")
    return problems


class CausalSelfAttention(nn.Module):
    """q, k, v and the output projection as four Linears; k has no bias (see the module doc)."""

    def __init__(self, cfg, device=None):
        super().__init__()
        self.heads = cfg.heads
        self.q = nn.Linear(cfg.d_model, cfg.d_model, device=device)
        self.k = nn.Linear(cfg.d_model, cfg.d_model, bias=False, device=device)
        self.v = nn.Linear(cfg.d_model, cfg.d_model, device=device)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, device=device)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q = self.q(x).view(b, t, h, d // h).transpose(1, 2)  # b, h, t, d_head
        k = self.k(x).view(b, t, h, d // h).transpose(1, 2)
        v = self.v(x).view(b, t, h, d // h).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, cfg, device=None):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, 4 * cfg.d_model, device=device)
        self.proj = nn.Linear(4 * cfg.d_model, cfg.d_model, device=device)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg, device=None):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model, device=device)
        self.attn = CausalSelfAttention(cfg, device)
        self.ln2 = nn.LayerNorm(cfg.d_model, device=device)
        self.mlp = MLP(cfg, device)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg, device=None):
        """device "meta": no memory for parameters (strata.torch writes them group by group,
        init=self.initializer(seed))."""
        super().__init__()
        problems = check_config(cfg)
        if problems:
            raise ValueError("; ".join(problems))
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model, device=device)
        self.pos = nn.Embedding(cfg.context, cfg.d_model, device=device)
        self.blocks = nn.ModuleList(Block(cfg, device) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model, device=device)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False, device=device)
        self.head.weight = self.tok.weight  # tied: one parameter, two uses

    def forward(self, idx):
        """idx: int64 [batch, t] with t <= context -> logits [batch, t, vocab]."""
        t = idx.shape[1]
        if t > self.cfg.context:
            raise ValueError(f"sequence of {t} tokens, the model's context is {self.cfg.context}")
        positions = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    @torch.no_grad()
    def init(self, seed):
        fill = self.initializer(seed)
        for name, p in self.named_parameters():
            fill(name, p)

    def initializer(self, seed):
        """fill(name, parameter), to be called in named_parameters() order (init does; so does
        strata.torch's group-by-group write of a model built on meta)."""
        gen = torch.Generator().manual_seed(int(seed))
        residual_std = 0.02 / math.sqrt(2 * self.cfg.layers)

        @torch.no_grad()
        def fill(name, p):
            leaf = name.rsplit(".", 1)[-1]
            if ".ln" in name or name.startswith("ln_f."):
                p.fill_(1.0 if leaf == "weight" else 0.0)
            elif leaf == "bias":
                p.zero_()
            else:
                std = residual_std if name.endswith(("attn.proj.weight", "mlp.proj.weight")) \
                    else 0.02
                p.copy_(torch.randn(p.shape, generator=gen) * std)
        return fill


def count_parameters(model):
    """Trainable parameters, a shared (tied) one counted once."""
    seen, total = set(), 0
    for p in model.parameters():  # parameters() already yields a shared tensor once
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def parameters_for(cfg):
    """count_parameters without building the model (12·L·d² + 12·L·d + vocab·d + context·d + 2·d)."""
    d, layers = cfg.d_model, cfg.layers
    per_block = (3 * d * d + 2 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 4 * d
    return layers * per_block + cfg.vocab * d + cfg.context * d + 2 * d
