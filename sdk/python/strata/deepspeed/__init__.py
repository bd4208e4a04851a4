"""DeepSpeed's training API on the Strata runtime: `import strata.deepspeed as deepspeed` in place
of `import deepspeed`, and launch with strata-run (or mpirun, or srun).

    engine, optimizer, loader, scheduler = deepspeed.initialize(
        args=args, model=model, model_parameters=model.parameters(), training_data=dataset,
        config="ds_config.json")
    for x, y in loader:
        loss = loss_fn(engine(x), y)
        engine.backward(loss)
        engine.step()

The ds_config is the runtime's manifest (Strata's own sections may stand beside DeepSpeed's keys;
a key the runtime does not act on is warned about by name). The engine is strata.torch's
DistributedOptimizer underneath: zero_optimization stages 0-3, fp16/bf16, offload, gradient
clipping, the scheduler block and checkpoints that load at another world size come from the
runtime. deepspeed.zero.Init partitions a model as it is built; deepspeed.comm's common functions
run on the runtime.

deepspeed.comm.new_group makes sub-groups (the comm stratum's split) for group=.

Not provided (NotImplementedError naming what to use): pipeline and tensor parallelism, the inference engine, GPU tensors (use strata.torch with an
NCCL manifest), loading parts of a checkpoint (load_module_only, load_optimizer_states=False).
"""
from . import comm, zero  # noqa: F401
from ._engine import DeepSpeedEngine
from ._config import resolve as _resolve_config
from . import _launch, _zero_init

__all__ = ["initialize", "add_config_arguments", "init_distributed", "DeepSpeedEngine", "comm",
           "zero", "init_inference"]


def _version():
    import strata
    try:
        return "strata-" + strata.__version__
    except AttributeError:
        return "strata"


def __getattr__(name):
    if name == "__version__":
        return _version()
    raise AttributeError("module 'strata.deepspeed' has no attribute %r" % name)


def add_config_arguments(parser):
    """DeepSpeed's command-line arguments: --deepspeed, --deepspeed_config (the ds_config path),
    --deepscale, --deepscale_config (their old names)."""
    group = parser.add_argument_group("DeepSpeed", "DeepSpeed configurations")
    group.add_argument("--deepspeed", default=False, action="store_true",
                       help="Enable DeepSpeed (kept for scripts; Strata is always on)")
    group.add_argument("--deepspeed_config", default=None, type=str,
                       help="DeepSpeed json configuration file.")
    group.add_argument("--deepscale", default=False, action="store_true",
                       help="Deprecated enable DeepSpeed (helper flag for user code, no impact "
                            "on DeepSpeed backend)")
    group.add_argument("--deepscale_config", default=None, type=str,
                       help="Deprecated DeepSpeed json configuration file.")
    return parser


def init_distributed(*args, **kwargs):
    """deepspeed.init_distributed (deepspeed.comm.init_distributed)."""
    return comm.init_distributed(*args, **kwargs)


def initialize(args=None, model=None, optimizer=None, model_parameters=None, training_data=None,
               lr_scheduler=None, distributed_port=29500, mpu=None, dist_init_required=None,
               collate_fn=None, config=None, mesh_param=None, config_params=None):
    """Returns (engine, optimizer, training_dataloader, lr_scheduler) as DeepSpeed does; collective
    (every rank calls it with the same model and config). The runtime starts here, with the
    ds_config as its manifest: from config (a dict or a path), config_params, or
    args.deepspeed_config, as DeepSpeed looks for them."""
    if model is None:
        raise ValueError("strata.deepspeed.initialize: model is required (a torch.nn.Module)")
    if mpu is not None or mesh_param is not None:
        raise NotImplementedError("strata.deepspeed.initialize: %s: there is no model (tensor or "
                                  "pipeline) parallelism here; data parallelism runs over every "
                                  "rank" % ("mpu" if mpu is not None else "mesh_param"))
    if getattr(args, "deepscale_config", None) is not None and \
            getattr(args, "deepspeed_config", None) is None:
        args.deepspeed_config = args.deepscale_config
    cfg = _resolve_config(args, config, config_params)
    slices = _zero_init.slices_by_name(model)
    engine = DeepSpeedEngine(model, optimizer, model_parameters, training_data, lr_scheduler, cfg,
                             collate_fn=collate_fn, deferred_slices=slices)
    _zero_init.forget()
    if _launch.wanted(dist_init_required):
        _launch.ensure_torch_group(engine._runtime)
    return engine, engine.optimizer, engine.training_dataloader, engine.lr_scheduler


def init_inference(*args, **kwargs):
    raise NotImplementedError("strata.deepspeed.init_inference: there is no inference engine; run "
                              "the model with torch (strata.torch trains it)")
