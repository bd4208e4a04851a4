"""What deepspeed.initialize returns beside the engine for the optimizer and the LR schedule.

The runtime runs the optimizer step inside engine.step(), so the returned optimizer is a view: its
param_groups are the client torch optimizer's (their lr is followed at every step, so a torch
scheduler works) or, with the ds_config's optimizer, one group showing the runtime's lr. Its own
step() is refused with a message: under DeepSpeed too a script calls engine.step().

With the ds_config's "scheduler" the runtime schedules the lr itself (WarmupLR, WarmupDecayLR,
OneCycle, WarmupCosineLR) at every optimizer step; the returned scheduler reads it."""
import warnings


class DeepSpeedOptimizerView:
    def __init__(self, engine, client):
        self._engine = engine
        self._client = client
        self._groups = None  # with the ds_config's optimizer: one group, its lr the runtime's
        self._lr = None

    @property
    def param_groups(self):
        if self._client is not None:
            return self._client.param_groups
        if self._groups is None:
            self._lr = self._engine._runtime.lr
            self._groups = [{"lr": self._lr, "params": list(self._engine.module.parameters())}]
        return self._groups

    def before_step(self):
        """A script that wrote param_groups[0]["lr"] sets the runtime's lr."""
        if self._groups is not None and self._groups[0]["lr"] != self._lr:
            self._engine._runtime.set_lr(self._groups[0]["lr"])

    def after_step(self):
        if self._groups is not None:  # the ds_config's scheduler may have moved it
            self._lr = self._groups[0]["lr"] = self._engine._runtime.lr

    def zero_grad(self, set_to_none=True):
        """Nothing to do: the runtime zeroes its gradient buffers after each optimizer step."""

    def step(self, closure=None):
        raise NotImplementedError("strata.deepspeed: the optimizer returned by initialize does not "
                                  "step on its own; call engine.step() after each backward (it "
                                  "runs the optimizer at the accumulation boundary)")

    def state_dict(self):
        raise NotImplementedError("strata.deepspeed: the optimizer state lives in the runtime, "
                                  "sharded as zero_optimization says; save it with "
                                  "engine.save_checkpoint(dir)")

    def load_state_dict(self, state):
        raise NotImplementedError("strata.deepspeed: load the optimizer state with "
                                  "engine.load_checkpoint(dir)")

    @property
    def loss_scale(self):
        return self._engine.get_loss_scale()

    cur_scale = loss_scale


class RuntimeScheduler:
    """The ds_config's scheduler, which the runtime steps: get_lr()/get_last_lr() read it."""

    def __init__(self, runtime):
        self._runtime = runtime
        self._warned = False

    def get_lr(self):
        return [self._runtime.lr]

    get_last_lr = get_lr

    def step(self, *args, **kwargs):
        if not self._warned:
            warnings.warn("strata.deepspeed: lr_scheduler.step() does nothing: the runtime steps "
                          "the ds_config's scheduler at every optimizer step (engine.step())")
            self._warned = True

    def state_dict(self):
        return {}  # the runtime keeps the schedule's position in its checkpoints

    def load_state_dict(self, state):
        pass
