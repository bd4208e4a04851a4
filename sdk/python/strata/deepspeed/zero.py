"""deepspeed.zero: Init (partition a model as it is built) and GatheredParameters (read whole
parameters of a partitioned model)."""
import contextlib

from ._engine import current_engine
from ._zero_init import Init  # noqa: F401


def GatheredParameters(params, modifier_rank=None, fwd_module=None, enabled=True):
    """A context in which the engine's parameters are whole and current (collective: every rank
    enters it alike). Strata gathers every group of the model, a superset of `params`. Changes made
    inside it are not kept: modifier_rank is refused (write values before initialize, or load a
    checkpoint)."""
    if not enabled:
        return contextlib.nullcontext()
    if modifier_rank is not None:
        raise NotImplementedError("strata.deepspeed.zero.GatheredParameters: modifier_rank=%r: "
                                  "changes to gathered parameters are not written back; set values "
                                  "before deepspeed.initialize or with engine.load_checkpoint" % (modifier_rank,))
    engine = current_engine()
    if engine is None:
        raise RuntimeError("strata.deepspeed.zero.GatheredParameters: no engine yet; parameters "
                           "built under zero.Init have their values after deepspeed.initialize")
    return engine._opt.gathered()
