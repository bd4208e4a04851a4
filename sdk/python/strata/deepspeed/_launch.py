"""A torch.distributed process group beside the runtime, as deepspeed.initialize makes one
(dist_init_required): DeepSpeed scripts call torch.distributed directly (DistributedSampler(dataset)
with no rank, dist.barrier()). It is a gloo group over TCP whose address rank 0 chooses and sends
through the runtime (a free port on rank 0: MASTER_PORT may be taken by the comm plugin's own
rendezvous). Strata's training collectives never use it."""
import socket

import torch

_wanted = None  # None: as initialize's dist_init_required says
_made = False  # whether ensure_torch_group made torch.distributed's group


def want_torch_group(flag):
    global _wanted
    _wanted = flag


def wanted(dist_init_required):
    if dist_init_required is not None:
        return bool(dist_init_required)
    return True if _wanted is None else _wanted


def same_on_every_rank(runtime, flag):
    """Whether every rank passed the same `flag` (a bool): one allreduce (max of flag and -flag).
    Collective; lets every rank take the same branch before a collective one side would skip."""
    both = torch.tensor([int(flag), -int(flag)], dtype=torch.int32)
    runtime.allreduce_(both, "max")
    return int(both[0]) == -int(both[1])


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _address(runtime):
    if runtime.world.local_size == runtime.world.size:
        return "127.0.0.1"
    import os
    return os.environ.get("MASTER_ADDR") or socket.gethostbyname(socket.gethostname())


def ensure_torch_group(runtime):
    """Collective over the runtime's ranks: makes torch.distributed's default group (gloo) unless
    one exists."""
    import torch.distributed as dist
    if not dist.is_available():
        return
    # Every rank takes the same branch: a job whose ranks disagree here would hang in the
    # broadcast, so the decision is agreed first.
    if not same_on_every_rank(runtime, dist.is_initialized()):
        raise RuntimeError("strata.deepspeed: torch.distributed is initialized on some ranks and "
                           "not on others")
    if dist.is_initialized():
        return
    place = torch.zeros(258, dtype=torch.uint8)  # port (2 bytes) and address (256)
    if runtime.world.rank == 0:
        port = _free_port()
        address = _address(runtime).encode()[:256]
        place[0], place[1] = port >> 8, port & 0xFF
        place[2:2 + len(address)] = torch.tensor(list(address), dtype=torch.uint8)
    runtime.broadcast_(place, 0)
    port = (int(place[0]) << 8) | int(place[1])
    address = bytes(place[2:].tolist()).rstrip(b"\0").decode()
    global _made
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (address, port),
                            rank=runtime.world.rank, world_size=runtime.world.size)
    _made = True


def destroy_torch_group():
    """engine.destroy(): the group ensure_torch_group made goes with the runtime (collective)."""
    global _made
    if _made:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.barrier()  # every rank past its last use before the group goes
            dist.destroy_process_group()
        _made = False
