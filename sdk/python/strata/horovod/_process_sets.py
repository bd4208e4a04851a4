"""Process sets. Strata's comm stratum has no sub-groups of ranks yet, so the global set is the
only one: adding another raises NotImplementedError rather than running on the wrong ranks."""


class ProcessSet:
    """A set of ranks; only the global one (every rank) exists in strata.horovod for now."""

    def __init__(self, ranks=None):
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)
        self.process_set_id = 0 if ranks is None else None

    def _world(self):
        from . import _state
        return _state.engine()

    def size(self):
        return self._world().size

    def rank(self):
        return self._world().rank

    def included(self):
        return True

    def __repr__(self):
        return "ProcessSet(process_set_id=0, ranks=all)"


global_process_set = ProcessSet()


def check_process_set(process_set, what):
    if process_set is not global_process_set:
        raise NotImplementedError(
            "strata.horovod.%s: process_set=%r; Strata's comm stratum has no sub-groups of ranks "
            "yet, so only hvd.global_process_set (every rank) is available" % (what, process_set))


def add_process_set(process_set):
    raise NotImplementedError("strata.horovod.add_process_set: Strata's comm stratum has no "
                              "sub-groups of ranks yet; run collectives on hvd.global_process_set")


def remove_process_set(process_set):
    raise NotImplementedError("strata.horovod.remove_process_set: only hvd.global_process_set "
                              "exists in strata.horovod, and it cannot be removed")
