"""The operations the engine thread runs: each describes itself for the negotiation, checks that
every rank submitted the same thing, and moves its data through the runtime's collectives.

Reductions (allreduce, grouped_allreduce, reducescatter) are the runtime's allreduce per dtype,
grouped tensors fused into one buffer per dtype; a rank that has joined takes part with the
operation's identity, as Horovod's joined ranks do. allgather with uneven first dimensions,
alltoall and reducescatter are built here from the runtime's allgather and allreduce (the comm
stratum has no alltoallv yet); a joined rank ends those with an error on the others.
"""
import zlib

import numpy as np
import torch

from strata import _capi

from . import _engine as E
from . import _tensors as T

Average, Sum, Adasum, Min, Max, Product = 0, 1, 2, 3, 4, 5
OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max",
            Product: "Product"}
_RUNTIME_OP = {Sum: _capi.OPS["sum"], Average: _capi.OPS["sum"], Min: _capi.OPS["min"],
               Max: _capi.OPS["max"]}


def _shape_text(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


def _ranks_text(ranks):
    return ("rank %d" if len(ranks) == 1 else "ranks %s") % (
        ranks[0] if len(ranks) == 1 else ", ".join(str(r) for r in ranks))


def disagreement(neg, what, field, ranks, show):
    """None when `ranks` agree on `field`, else 'ranks disagree on WHAT: rank 0 X, rank 1 Y'."""
    values = neg.column(field, ranks)
    if len(set(values)) <= 1:
        return None
    parts = ", ".join("rank %d %s" % (r, show(r)) for r in ranks)
    return "ranks disagree on %s: %s" % (what, parts)


class Op:
    """Base: name, kind, the tensors' descriptor fields, and the shared agreement checks."""
    kind = 0
    local_error = None  # an error this rank found before submitting (every rank then fails)

    def __init__(self, name):
        self.name = name

    @property
    def kind_name(self):
        return E.KIND_NAMES[self.kind]

    def fields(self, tensor):
        """Descriptor fields for one tensor: dtype, shape, element count."""
        d = np.zeros(E.FIELDS, dtype=np.int64)
        d[E.KIND] = self.kind  # NAME: the engine writes the key's hash
        d[E.INVALID] = 1 if self.local_error is not None else 0
        if tensor is not None:
            shape = list(tensor.shape)
            d[E.DTYPE], d[E.NDIM], d[E.NUMEL] = T.CODES.get(tensor.dtype, 0), len(shape), tensor.numel()
            d[E.DIM0] = shape[0] if shape else 1
            d[E.DIMS:E.DIMS + min(len(shape), E.MAX_DIMS)] = shape[:E.MAX_DIMS]
        d[E.COUNT] = 1
        return d

    def fail(self, message):
        raise RuntimeError("strata.horovod.%s%s: %s" % (
            self.kind_name, "(%r)" % self.name if self.name else "", message))

    def agree(self, neg, extra=()):
        """Raises (on every rank alike) when the active ranks submitted different operations or
        some rank refused its own; returns the active ranks."""
        active = neg.active()
        invalid = [r for r in range(neg.size) if neg.table[r, E.INVALID]]
        if invalid:
            if self.local_error is not None:
                raise self.local_error
            self.fail("%s refused %s own %s (see its error); no data moved" % (
                _ranks_text(invalid), "its" if len(invalid) == 1 else "their", self.kind_name))
        kinds = neg.column(E.KIND, active)
        if len(set(kinds)) > 1:
            self.fail("ranks submitted different operations: %s; every rank must submit the same "
                      "collectives in the same order" % ", ".join(
                          "rank %d %s" % (r, E.KIND_NAMES.get(k, k)) for r, k in zip(active, kinds)))
        checks = [("the dtype", E.DTYPE, lambda r: str(T.DTYPES.get(int(neg.table[r, E.DTYPE]),
                                                                    "?")).replace("torch.", ""))]
        checks += list(extra)
        for what, field, show in checks:
            message = disagreement(neg, what, field, active, show)
            if message:
                self.fail(message + "; every rank must submit matching tensors")
        return active

    def shape_check(self, neg, active, what="the tensor's shape", field=E.SHAPE_HASH):
        message = disagreement(neg, what, field, active, lambda r: _shape_text(neg.shape(r)))
        if message:
            self.fail(message + "; every rank must submit matching tensors")


def reduce_flat(engine, flat, op, neg):
    """Reduces the 1-D tensor `flat` (a reduce dtype) over all ranks in place: the runtime's
    allreduce, or for Product an allgather and a local product."""
    if flat.numel() == 0:
        return flat
    if op == Product:
        everyone = torch.empty((neg.size, flat.numel()), dtype=flat.dtype)
        engine.allgather(flat.data_ptr(), everyone.data_ptr(), flat.numel(),
                         T.STRATA_DTYPE[flat.dtype])
        flat.copy_(torch.prod(everyone, dim=0).to(flat.dtype))
        return flat
    engine.allreduce(flat.data_ptr(), flat.numel(), T.STRATA_DTYPE[flat.dtype], _RUNTIME_OP[op])
    return flat


def grouped_counts(tensors):
    """{reduce dtype code: element count} over tensors, in code order (what a joined rank mirrors)."""
    counts = {}
    for t in tensors:
        code = T.CODES[T.REDUCE_AS[t.dtype]]
        counts[code] = counts.get(code, 0) + t.numel()
    return dict(sorted(counts.items()))


def reduce_grouped(engine, tensors, op, neg):
    """Reduces tensors (already scaled copies) with one fused allreduce per reduce dtype; returns
    the reduced tensors in their own dtypes and shapes."""
    by_code = {}
    for i, t in enumerate(tensors):
        by_code.setdefault(T.CODES[T.REDUCE_AS[t.dtype]], []).append(i)
    out = [None] * len(tensors)
    for code in sorted(by_code):
        indices = by_code[code]
        wide = T.DTYPES[code]
        flat = torch.cat([tensors[i].reshape(-1).to(wide) for i in indices])  # a new buffer
        reduce_flat(engine, flat, op, neg)
        offset = 0
        for i in indices:
            n = tensors[i].numel()
            out[i] = flat[offset:offset + n].view(tensors[i].shape).to(tensors[i].dtype)
            offset += n
    return out


class Allreduce(Op):
    """allreduce and grouped_allreduce: tensors in, reduced copies out (outputs written if given)."""

    def __init__(self, tensors, outputs, name, op, prescale, postscale, grouped):
        super().__init__(name)
        self.kind = E.GROUPED_ALLREDUCE if grouped else E.ALLREDUCE
        self.tensors, self.outputs, self.op = tensors, outputs, op
        self.prescale, self.postscale = float(prescale), float(postscale)
        for t in tensors:
            if t.dtype == torch.bool and self.local_error is None:
                self.local_error = TypeError("strata.horovod.%s: bool tensors have no reduction; "
                                             "convert with .to(torch.uint8)" % self.kind_name)

    def descriptor(self):
        if self.kind == E.ALLREDUCE:
            d = self.fields(self.tensors[0])
            d[E.SHAPE_HASH] = E.shape_hash([list(self.tensors[0].shape)])
        else:
            d = self.fields(None)
            d[E.COUNT] = len(self.tensors)
            d[E.NUMEL] = sum(t.numel() for t in self.tensors)
            d[E.SHAPE_HASH] = E.shape_hash([(str(t.dtype), list(t.shape)) for t in self.tensors])
            d[E.DIMS:E.DIMS + E.MAX_DIMS] = 0
            if self.local_error is None:
                for code, count in grouped_counts(self.tensors).items():
                    d[E.DIMS + code - 1] = count
        d[E.OP] = self.op
        return d

    def run(self, engine, neg):
        extra = [("the reduction", E.OP, lambda r: OP_NAMES.get(int(neg.table[r, E.OP]), "?"))]
        if self.kind == E.GROUPED_ALLREDUCE:
            extra.append(("the number of tensors", E.COUNT, lambda r: int(neg.table[r, E.COUNT])))
        active = self.agree(neg, extra)
        self.shape_check(neg, active, "the tensors' shapes" if self.kind != E.ALLREDUCE
                         else "the tensor's shape")
        # reduce_grouped reduces a fused copy, so the inputs are never written.
        scaled = [T.scaled(t.detach().contiguous(), self.prescale) for t in self.tensors]
        results = reduce_grouped(engine, scaled, self.op, neg)
        if self.op == Average:
            results = [T.divided(r, neg.size) for r in results]
        results = [T.scaled(r, self.postscale) for r in results]
        if self.outputs is None:
            return results
        for out, r in zip(self.outputs, results):
            out.data.copy_(r)
        return self.outputs


class Allgather(Op):
    """allgather and grouped_allgather: first dimensions may differ between ranks."""

    def __init__(self, tensors, name, grouped):
        super().__init__(name)
        self.kind = E.GROUPED_ALLGATHER if grouped else E.ALLGATHER
        self.tensors = [t.detach().contiguous() for t in tensors]

    def descriptor(self):
        if self.kind == E.ALLGATHER:
            t = self.tensors[0]
            d = self.fields(t)
            d[E.SHAPE_HASH] = E.shape_hash([list(t.shape[1:]), t.dim()])
        else:
            d = self.fields(None)
            d[E.COUNT] = len(self.tensors)
            d[E.SHAPE_HASH] = E.shape_hash([(str(t.dtype), list(t.shape[1:]), t.dim())
                                            for t in self.tensors])
        return d

    def run(self, engine, neg):
        extra = []
        if self.kind == E.GROUPED_ALLGATHER:
            extra.append(("the number of tensors", E.COUNT, lambda r: int(neg.table[r, E.COUNT])))
        active = self.agree(neg, extra)
        joined = neg.joined()
        if joined:
            self.fail("%s joined (hvd.join) and has no tensor to gather; allgather needs every rank"
                      % _ranks_text(joined))
        self.shape_check(neg, active, "the shape beyond the first dimension")
        if self.kind == E.ALLGATHER:
            return gather_rows(engine, self.tensors[0], neg.column(E.DIM0))
        dims = torch.tensor([t.shape[0] if t.dim() else 1 for t in self.tensors], dtype=torch.int64)
        everyone = torch.empty((neg.size, len(self.tensors)), dtype=torch.int64)
        engine.allgather(dims.data_ptr(), everyone.data_ptr(), len(self.tensors), _capi.I64)
        return [gather_rows(engine, t, everyone[:, i].tolist()) for i, t in enumerate(self.tensors)]


def gather_rows(engine, t, dim0s):
    """Every rank's rows of t concatenated (rank r gave dim0s[r] rows); 0-d tensors as 1 row."""
    if t.dim() == 0:
        t = t.reshape(1)
    row = int(np.prod(t.shape[1:], dtype=np.int64)) * t.element_size()  # bytes per row
    size = len(dim0s)
    out = torch.empty((sum(dim0s),) + tuple(t.shape[1:]), dtype=t.dtype)
    most = max(dim0s)
    if row == 0 or most == 0:
        return out
    if min(dim0s) == most:  # even: straight into the result
        engine.allgather(t.data_ptr(), out.data_ptr(), most * row, _capi.U8)
        return out
    padded = torch.zeros(most * row, dtype=torch.uint8)
    padded[:t.shape[0] * row] = T.as_bytes(t)
    everyone = torch.empty((size, most * row), dtype=torch.uint8)
    engine.allgather(padded.data_ptr(), everyone.data_ptr(), most * row, _capi.U8)
    out_bytes = T.as_bytes(out)
    offset = 0
    for r, n in enumerate(dim0s):
        out_bytes[offset:offset + n * row] = everyone[r, :n * row]
        offset += n * row
    return out


class Broadcast(Op):
    kind = E.BROADCAST

    def __init__(self, tensor, output, root, name):
        super().__init__(name)
        self.tensor, self.output, self.root = tensor, output, int(root)

    def descriptor(self):
        d = self.fields(self.tensor)
        d[E.SHAPE_HASH] = E.shape_hash([list(self.tensor.shape)])
        d[E.ROOT] = self.root
        return d

    def run(self, engine, neg):
        active = self.agree(neg, [("the root rank", E.ROOT, lambda r: int(neg.table[r, E.ROOT]))])
        if not 0 <= self.root < neg.size:
            self.fail("root rank %d is outside 0-%d" % (self.root, neg.size - 1))
        joined = neg.joined()
        if joined:
            self.fail("%s joined (hvd.join); broadcast needs every rank" % _ranks_text(joined))
        self.shape_check(neg, active)
        out = self.output
        if out.data_ptr() != self.tensor.data_ptr():
            out.data.copy_(self.tensor.detach())
        buf = out.detach()
        work = buf if buf.is_contiguous() else buf.contiguous()
        b = T.as_bytes(work)
        if b.numel():
            engine.broadcast(b.data_ptr(), b.numel(), _capi.U8, self.root)
        if work.data_ptr() != buf.data_ptr():
            buf.copy_(work)
        return out


class Alltoall(Op):
    """Rank r sends splits[j] rows to rank j (equal splits without them); returns the rows it
    received and how many came from each rank. Built on the runtime's allgather: every rank's rows
    travel to every rank (comm-stratum alltoallv is still to come)."""
    kind = E.ALLTOALL

    def __init__(self, tensor, splits, name, size):
        super().__init__(name)
        self.tensor = tensor.detach().contiguous()
        dim0 = self.tensor.shape[0] if self.tensor.dim() else 1
        self.splits = None
        try:
            if splits is None:
                if dim0 % size:
                    raise ValueError("strata.horovod.alltoall: the first dimension (%d) does not "
                                     "divide evenly over %d ranks; pass splits" % (dim0, size))
                self.splits = [dim0 // size] * size
            else:
                if isinstance(splits, torch.Tensor):
                    if splits.dtype not in (torch.int32, torch.int64):
                        raise ValueError("strata.horovod.alltoall: splits must be an int32 or int64 "
                                         "tensor, got %s" % splits.dtype)
                    splits = splits.tolist()
                splits = [int(s) for s in splits]
                if len(splits) != size:
                    raise ValueError("strata.horovod.alltoall: splits has %d entries; expected one "
                                     "per rank (%d)" % (len(splits), size))
                if any(s < 0 for s in splits) or sum(splits) > dim0:
                    raise ValueError("strata.horovod.alltoall: splits %s: entries must be >= 0 and "
                                     "sum to at most the first dimension (%d)" % (splits, dim0))
                self.splits = splits
        except ValueError as e:
            self.local_error = e

    def descriptor(self):
        d = self.fields(self.tensor)
        d[E.SHAPE_HASH] = E.shape_hash([list(self.tensor.shape[1:]), self.tensor.dim()])
        return d

    def run(self, engine, neg):
        active = self.agree(neg)
        joined = neg.joined()
        if joined:
            self.fail("%s joined (hvd.join); alltoall needs every rank" % _ranks_text(joined))
        self.shape_check(neg, active, "the shape beyond the first dimension")
        size, me = neg.size, neg.rank
        mine = torch.tensor(self.splits, dtype=torch.int64)
        table = torch.empty((size, size), dtype=torch.int64)
        engine.allgather(mine.data_ptr(), table.data_ptr(), size, _capi.I64)
        sent = table.sum(dim=1).tolist()               # rows each rank sends in all
        t = self.tensor if self.tensor.dim() else self.tensor.reshape(1)
        rows = gather_rows(engine, t[:sent[me]], sent)  # every rank's sent rows, rank by rank
        pieces, start = [], 0
        for j in range(size):
            before = int(table[j, :me].sum())
            count = int(table[j, me])
            pieces.append(rows[start + before:start + before + count])
            start += sent[j]
        received = table[:, me].to(torch.int32)
        return torch.cat(pieces) if pieces else rows[:0], received


def scatter_rows(dim0, size):
    """Horovod's reducescatter split: dim0 // size rows each, the first dim0 % size ranks one more."""
    base, extra = divmod(dim0, size)
    counts = [base + (1 if r < extra else 0) for r in range(size)]
    return counts


class Reducescatter(Op):
    """Rank r receives the reduction of its block of rows (scatter_rows). Built on the runtime's
    allreduce of the whole tensor, then each rank keeps its block."""

    def __init__(self, tensors, name, op, prescale, postscale, grouped):
        super().__init__(name)
        self.kind = E.GROUPED_REDUCESCATTER if grouped else E.REDUCESCATTER
        self.tensors, self.op = tensors, op
        if op not in (Sum, Average):
            self.local_error = NotImplementedError(
                "strata.horovod.reducescatter: op %s; reducescatter takes hvd.Sum or hvd.Average"
                % OP_NAMES.get(op, op))
        for t in tensors:
            if t.dim() == 0:
                self.local_error = ValueError("strata.horovod.reducescatter: a 0-d tensor has no "
                                              "first dimension to scatter")
        self.inner = Allreduce(tensors, None, name, Sum, prescale, postscale, grouped=True)
        self.inner.kind = self.kind

    def descriptor(self):
        d = self.inner.descriptor()
        d[E.INVALID] = 1 if self.local_error is not None else d[E.INVALID]
        d[E.OP] = self.op
        return d

    def run(self, engine, neg):
        self.agree(neg)  # this rank's own refusal raises here; the inner allreduce agrees again
        if neg.joined():
            self.fail("%s joined (hvd.join); reducescatter needs every rank"
                      % _ranks_text(neg.joined()))
        postscale = self.inner.postscale
        self.inner.postscale = 1.0
        self.inner.op = self.op
        reduced = self.inner.run(engine, neg)
        out = []
        for r in reduced:
            counts = scatter_rows(r.shape[0], neg.size)
            start = sum(counts[:neg.rank])
            out.append(T.scaled(r[start:start + counts[neg.rank]].clone(), postscale))
        return out


class Barrier(Op):
    kind = E.BARRIER

    def descriptor(self):
        return self.fields(None)

    def run(self, engine, neg):  # the negotiation itself met every rank
        self.agree(neg)
        return None


def mirror(engine, neg):
    """A joined rank's part in the operation the others negotiated: the identity for reductions,
    nothing for the rest (they end with an error on the active ranks)."""
    active = neg.active()
    if not active:
        return
    first = neg.table[active[0]]
    kinds = set(neg.column(E.KIND, active))
    if len(kinds) != 1 or any(neg.table[r, E.INVALID] for r in range(neg.size)):
        return  # the active ranks raise without moving data
    kind, op = int(first[E.KIND]), int(first[E.OP])
    if kind not in (E.ALLREDUCE, E.GROUPED_ALLREDUCE):
        return
    if any(len(set(neg.column(field, active))) != 1
           for field in (E.SHAPE_HASH, E.OP, E.DTYPE, E.COUNT)):
        return  # the active ranks' agree() refuses it, moving no data
    if kind == E.ALLREDUCE:
        counts = {T.CODES[T.REDUCE_AS[T.DTYPES[int(first[E.DTYPE])]]]: int(first[E.NUMEL])}
    else:
        counts = {i + 1: int(first[E.DIMS + i]) for i in range(E.MAX_DIMS) if first[E.DIMS + i]}
    for code in sorted(counts):
        flat = T.identity(T.DTYPES[code], counts[code], op)
        reduce_flat(engine, flat, op, neg)


class Join(Op):
    """hvd.join: the engine has this rank take part in the others' operations (mirror) until
    every rank has joined, then returns the rank that joined last (the same on every rank)."""
    kind = E.JOIN

    def __init__(self, engine):
        super().__init__(None)
        self.engine, self.round = engine, None

    def descriptor(self):
        if self.round is None:  # the negotiation round this rank joined in: the same clock on all
            self.round = self.engine.rounds
        d = self.fields(None)
        d[E.JOIN_ROUND] = self.round
        return d


class AddProcessSet(Op):
    """hvd.add_process_set, negotiated over every rank so that the set's Group is split at the
    same point of every rank's collectives; returns the set's id (the same on every rank)."""
    kind = E.ADD_PROCESS_SET

    def __init__(self, ranks):
        super().__init__(None)
        self.ranks = ranks

    def descriptor(self):
        d = self.fields(None)
        d[E.NUMEL] = len(self.ranks)
        d[E.SHAPE_HASH] = zlib.crc32(repr(self.ranks).encode()) & 0x7FFFFFFF
        return d

    def run(self, engine, neg):
        active = self.agree(neg)
        if len(active) != neg.size:
            self.fail("%s joined (hvd.join); process sets are added by every rank"
                      % _ranks_text(neg.joined()))
        if len(set(neg.column(E.SHAPE_HASH, active))) != 1:
            self.fail("ranks asked for different sets (rank %d: %s); every rank must add the same "
                      "sets in the same order" % (engine.rank, self.ranks))
        pset = engine.next_process_set
        engine.next_process_set += 1
        member = engine.rank in self.ranks
        group = engine.rt.group(0 if member else -1, self.ranks.index(engine.rank) if member else 0)
        engine.process_sets[pset] = list(self.ranks)
        if group is not None:
            engine.groups[pset] = group
        return pset


class RemoveProcessSet(Op):
    kind = E.REMOVE_PROCESS_SET

    def __init__(self, pset):
        super().__init__(None)
        self.pset = 0  # negotiated over every rank; the set to remove is self.target
        self.target = pset

    def descriptor(self):
        d = self.fields(None)
        d[E.ROOT] = self.target
        return d

    def run(self, engine, neg):
        self.agree(neg, [("the process set", E.ROOT, lambda r: int(neg.table[r, E.ROOT]))])
        group = engine.groups.pop(self.target, None)
        engine.process_sets.pop(self.target, None)
        if group is not None:
            group.close()
        return True
