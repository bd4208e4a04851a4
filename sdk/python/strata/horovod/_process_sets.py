"""Process sets (Horovod's hvd.add_process_set): collectives over a subset of the ranks, each set
a strata Group (the comm stratum's split, ABI 1.10) made on the engine's thread in a negotiated
operation, so that every rank adds and removes sets at the same point of its collectives. Every
rank must call add_process_set and remove_process_set alike; a set's collectives are submitted
by its members only and matched among them, as Horovod's."""


class ProcessSet:
    """A set of ranks: hvd.global_process_set (every rank), or one from add_process_set."""

    def __init__(self, ranks=None):
        if ranks is not None and not isinstance(ranks, (list, tuple, range)):
            raise NotImplementedError("strata.horovod.ProcessSet: %s; give the ranks as a list "
                                      "(MPI communicators are not taken)" % type(ranks).__name__)
        self.ranks = None if ranks is None else sorted({int(r) for r in ranks})
        self.process_set_id = 0 if ranks is None else None

    def _engine(self):
        from . import _state
        return _state.engine()

    def _members(self):
        return list(range(self._engine().size)) if self.ranks is None else self.ranks

    def size(self):
        return len(self._members())

    def rank(self):
        """This rank's place in the set, -1 when it is not in it."""
        members, me = self._members(), self._engine().rank
        return members.index(me) if me in members else -1

    def included(self):
        return self._engine().rank in self._members()

    def __repr__(self):
        if self.ranks is None:
            return "ProcessSet(process_set_id=0, ranks=all)"
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (self.process_set_id, self.ranks)


global_process_set = ProcessSet()
_added = {}  # process_set_id -> ProcessSet


def check_process_set(process_set, what):
    """The id of the set a collective runs in (0: every rank); raises ValueError for a set that
    was not added (or was removed) or that this rank is not in."""
    if process_set is None or process_set is global_process_set:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise TypeError("strata.horovod.%s: process_set: expected a ProcessSet, got %s"
                        % (what, type(process_set).__name__))
    if process_set.process_set_id == 0:
        return 0
    if _added.get(process_set.process_set_id) is not process_set:
        raise ValueError("strata.horovod.%s: %r was not added with hvd.add_process_set (or was "
                         "removed)" % (what, process_set))
    if not process_set.included():
        raise ValueError("strata.horovod.%s: this rank (%d) is not in %r; only its members submit "
                         "its collectives" % (what, process_set._engine().rank, process_set))
    return process_set.process_set_id


def add_process_set(process_set):
    """Adds a set of ranks (a ProcessSet or a list of ranks); collective over every rank, which
    must add the same sets in the same order. Returns the ProcessSet, its process_set_id set."""
    from . import _state
    from ._collective_ops import AddProcessSet
    engine = _state.engine()
    if isinstance(process_set, (list, tuple)) and process_set and \
            isinstance(process_set[0], (ProcessSet, list, tuple)):
        return [add_process_set(p) for p in process_set]  # init(process_sets=[...])
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.ranks is None or ps.process_set_id is not None:
        raise ValueError("strata.horovod.add_process_set: %r is added already" % ps)
    if not ps.ranks or ps.ranks[0] < 0 or ps.ranks[-1] >= engine.size:
        raise ValueError("strata.horovod.add_process_set: ranks %s: expected ranks in 0-%d"
                         % (ps.ranks, engine.size - 1))
    for other in _added.values():
        if other.ranks == ps.ranks:
            raise ValueError("strata.horovod.add_process_set: a process set with ranks %s exists "
                             "already (%r)" % (ps.ranks, other))
    ps.process_set_id = engine.submit(AddProcessSet(ps.ranks)).wait()
    _added[ps.process_set_id] = ps
    return ps


def remove_process_set(process_set):
    """Removes an added set (collective over every rank). Returns True, or False for a set that
    is not added (the global one cannot be removed)."""
    from . import _state
    from ._collective_ops import RemoveProcessSet
    if not isinstance(process_set, ProcessSet) or process_set.process_set_id in (0, None) or \
            _added.get(process_set.process_set_id) is not process_set:
        return False
    _state.engine().submit(RemoveProcessSet(process_set.process_set_id)).wait()
    del _added[process_set.process_set_id]
    process_set.process_set_id = None
    return True


def forget_all():
    """hvd.shutdown: the sets go with the engine."""
    for ps in _added.values():
        ps.process_set_id = None
    _added.clear()
