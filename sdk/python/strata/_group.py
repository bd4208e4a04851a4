"""A sub-group of the ranks (API 1.13, strata_group_*): the host's own collectives over some of
the ranks, from Runtime.group(color, key). Blocking, on numpy arrays or CPU torch tensors, no
copies; the same rules as the runtime's own collectives, over the group's members only."""
import ctypes

from . import _buffers, _capi


class Group:
    def __init__(self, runtime, handle):
        self._runtime = runtime
        self._lib = runtime._lib
        self._handle = handle
        rank, size = ctypes.c_int32(), ctypes.c_int32()
        self._lib.strata_group_rank(handle, ctypes.byref(rank), ctypes.byref(size))
        self.rank, self.size = rank.value, size.value

    def _live(self):
        if self._handle is None:
            raise ValueError("strata: this group was closed")
        self._runtime._live()
        return self._handle

    def _check(self, status, what):
        self._runtime._check(status, what)

    def allreduce_(self, x, op="sum"):
        code = _capi.OPS.get(op)
        if code is None:
            raise ValueError("strata.Group.allreduce: op %r; expected one of %s"
                             % (op, ", ".join(_capi.OPS)))
        b = _buffers.buffer(x, "strata.Group.allreduce buffer", writable=True)
        self._check(self._lib.strata_group_allreduce(self._live(), b.ptr, b.ptr, b.count, b.dtype,
                                                     code, ctypes.byref(self._runtime._err)),
                    "strata_group_allreduce")
        return x

    def allgather(self, x):
        """Every member's x concatenated along the first dimension (0-d: a vector of size)."""
        s = _buffers.buffer(x, "strata.Group.allgather input")
        out = _buffers.empty_like(x, leading=self.size)
        r = _buffers.buffer(out, "strata.Group.allgather output", writable=True)
        self._check(self._lib.strata_group_allgather(self._live(), s.ptr, r.ptr, s.count, s.dtype,
                                                     ctypes.byref(self._runtime._err)),
                    "strata_group_allgather")
        return out

    def broadcast_(self, x, root=0):
        """Overwrites x with the group rank `root`'s x; returns x."""
        b = _buffers.buffer(x, "strata.Group.broadcast buffer", writable=True)
        self._check(self._lib.strata_group_broadcast(self._live(), b.ptr, b.count, b.dtype,
                                                     int(root), ctypes.byref(self._runtime._err)),
                    "strata_group_broadcast")
        return x

    def barrier(self):
        self._check(self._lib.strata_group_barrier(self._live(), ctypes.byref(self._runtime._err)),
                    "strata_group_barrier")

    def alltoallv(self, send, send_counts, recv, recv_counts):
        """Sends send_counts[r] elements (in order, from the start of `send`) to group rank r and
        receives recv_counts[r] from it into `recv`, each rank's block after the previous one's.
        Returns recv."""
        s = _buffers.buffer(send, "strata.Group.alltoallv send")
        r = _buffers.buffer(recv, "strata.Group.alltoallv recv", writable=True)
        if s.dtype != r.dtype:
            raise TypeError("strata.Group.alltoallv: send and recv have different dtypes")
        arrays = []
        for counts, what, total in ((send_counts, "send_counts", s.count),
                                    (recv_counts, "recv_counts", r.count)):
            counts = [int(c) for c in counts]
            if len(counts) != self.size or min(counts, default=0) < 0 or sum(counts) > total:
                raise ValueError("strata.Group.alltoallv: %s %s: expected %d non-negative counts "
                                 "summing to at most %d" % (what, counts, self.size, total))
            displs = [sum(counts[:i]) for i in range(len(counts))]
            arrays.append(((c_uint64_array(counts)), c_uint64_array(displs)))
        (sc, sd), (rc, rd) = arrays
        self._check(self._lib.strata_group_alltoallv(self._live(), s.ptr, sc, sd, r.ptr, rc, rd,
                                                     s.dtype, ctypes.byref(self._runtime._err)),
                    "strata_group_alltoallv")
        return recv

    def close(self):
        """strata_group_destroy. Idempotent."""
        if self._handle is not None and not self._runtime.closed:
            handle, self._handle = self._handle, None
            self._check(self._lib.strata_group_destroy(self._runtime._live(), handle,
                                                       ctypes.byref(self._runtime._err)),
                        "strata_group_destroy")
        self._handle = None


def c_uint64_array(values):
    return (ctypes.c_uint64 * max(1, len(values)))(*values)
