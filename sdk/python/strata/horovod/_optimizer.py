"""hvd.DistributedOptimizer: the script's torch optimizer, stepping on gradients averaged over
ranks (Horovod's data parallelism; the torch optimizer runs on every rank, unlike strata.torch where
the runtime runs it).

Gradients are counted by hooks as backward makes them; synchronize() (step() calls it) reduces
every trainable parameter's gradient in one fused grouped allreduce per dtype, in the order of the
parameters' names, so the ranks agree on the order whatever order their backward ran in. A
parameter that got no gradient on a rank takes part with zeros, as in Horovod.
"""
import contextlib
import warnings

import torch

from ._api import grouped_allreduce_async_, sparse_allreduce_async
from ._api import synchronize as _synchronize_handle
from ._collective_ops import Adasum, Average
from ._compression import Compression
from ._process_sets import check_process_set, global_process_set


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named_parameters = list(named_parameters)
        else:
            named_parameters = [("allreduce.noname.%d.%d" % (i, j), p)
                                for i, group in enumerate(self.param_groups)
                                for j, p in enumerate(group["params"])]
        if any(not isinstance(item, tuple) for item in named_parameters):
            raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                             "usually produced by model.named_parameters().")
        names = [name for name, _ in named_parameters]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise ValueError("Parameter names in named_parameters must be unique. Found "
                             "duplicates: %s" % ", ".join(dups))
        named_ids = {id(p) for _, p in named_parameters}
        unnamed = [id(p) for p in all_params if id(p) not in named_ids]
        if unnamed:
            raise ValueError("named_parameters was specified, but one or more model parameters "
                             "were not named. Python object ids: %s"
                             % ", ".join(str(i) for i in unnamed))
        self._parameter_names = {p: name for name, p in sorted(named_parameters,
                                                                key=lambda x: x[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self.op, self.gradient_predivide_factor = op, gradient_predivide_factor
        self.sparse_as_dense, self.process_set = sparse_as_dense, process_set
        self._groups = groups
        self._delay = {p: backward_passes_per_step for p in all_params}
        # The reduction order, the same on every rank: by name (fixed; requires_grad is not).
        self._by_name = sorted(all_params, key=lambda q: self._parameter_names[q])
        self._ready = set()            # parameters whose gradients are due for reduction
        self._synchronized = False
        self._should_synchronize = True
        self._grad_accs = []
        self._register_hooks()

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(acc)

    def _make_hook(self, p):
        def hook(*unused):
            if self._delay[p] <= 0:
                raise AssertionError("Gradients were computed more than backward_passes_per_step "
                                     "times before call to step(). Increase "
                                     "backward_passes_per_step to accumulate gradients locally.")
            self._delay[p] -= 1
            if self._delay[p] == 0:
                self._ready.add(p)
        return hook

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._delay:
            self._delay[p] = passes

    def load_state_dict(self, *args, **kwargs):
        self._ready.clear()
        self._synchronized, self._should_synchronize = False, True
        self.set_backward_passes_per_step(self.backward_passes_per_step)
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    def _gradient(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p.data)
        return p.grad

    def synchronize(self):
        """Reduces every trainable parameter's gradient over ranks (into p.grad): dense ones in one
        fused grouped allreduce; sparse ones gathered as Horovod does, or with sparse_as_dense
        reduced densely with the others and made sparse again (a sparse optimizer needs them so)."""
        params = [p for p in self._by_name if p.requires_grad]
        for p in params:
            self._gradient(p)
        ps = self.process_set
        if ps is not None and ps is not global_process_set and not ps.included():
            return  # a rank outside the optimizer's process set steps on its own gradients
        as_sparse = [p for p in params if p.grad.is_sparse]
        sparse = [] if self.sparse_as_dense else [
            (p, sparse_allreduce_async(p.grad, "grad." + self._parameter_names[p], self.op,
                                      process_set=self.process_set))
            for p in as_sparse]
        dense = [p for p in params if not p.grad.is_sparse or self.sparse_as_dense]
        if dense:
            grads = [p.grad.to_dense() if p.grad.is_sparse else p.grad.contiguous() for p in dense]
            compressed = [self._compression.compress(g) for g in grads]
            tensors = [c for c, _ in compressed]
            prescale = postscale = 1.0
            if self.op == Average and self.gradient_predivide_factor != 1.0:
                prescale = 1.0 / self.gradient_predivide_factor
                postscale = self.gradient_predivide_factor
            handle = grouped_allreduce_async_(tensors, op=self.op, prescale_factor=prescale,
                                              postscale_factor=postscale,
                                              process_set=self.process_set)
            _synchronize_handle(handle)
            for p, g, (t, ctx) in zip(dense, grads, compressed):
                out = self._compression.decompress(t, ctx)
                if p.grad.is_sparse:
                    p.grad = out.to_sparse()
                elif out.data_ptr() != p.grad.data_ptr():
                    p.grad.copy_(out)
        for p, handle in sparse:
            p.grad = handle().coalesce()
        for p in self._delay:
            self._delay[p] = self.backward_passes_per_step
        self._ready.clear()
        self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """optimizer.step() inside does not synchronize (after an explicit synchronize())."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def _local_step(self):
        """The wrapped optimizer's own step (broadcast_optimizer_state's state initialisation)."""
        return super(self.__class__, self).step()

    def zero_grad(self, set_to_none=True):
        if self._ready:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(set_to_none)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps a torch optimizer so that step() first averages the gradients over ranks (op=Sum
    sums them). The returned object is an instance of the optimizer's own class."""
    if op == Adasum:
        raise NotImplementedError("strata.horovod.DistributedOptimizer: op=hvd.Adasum is not "
                                  "provided by Strata; use hvd.Average")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0 and groups is None:
        groups = num_groups
    if process_set is not global_process_set and process_set is not None and \
            process_set.included():
        check_process_set(process_set, "DistributedOptimizer")  # added, and this rank is in it
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set)
