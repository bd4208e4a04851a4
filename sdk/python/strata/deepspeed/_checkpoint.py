"""The engine's part of a checkpoint (client_state, a client lr_scheduler's state, the samples
count) inside the runtime's host state, which is JSON: kept as JSON when it is, else pickled with
torch.save (tensors, numpy arrays, any picklable object, as DeepSpeed's torch.save keeps them) and
written as base64 text."""
import base64
import io
import json

import torch

_PICKLED = "torch.save+base64"


def encode_client_state(state):
    try:
        text = json.dumps(state)
        if json.loads(text) == state:  # tuples, int keys and the like would not come back alike
            return {"format": "json", "value": state}
    except (TypeError, ValueError):
        pass
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return {"format": _PICKLED, "value": base64.b64encode(buffer.getvalue()).decode("ascii")}


def decode_client_state(stored):
    if not stored:
        return {}
    if stored.get("format") == "json":
        return stored["value"]
    if stored.get("format") == _PICKLED:
        data = base64.b64decode(stored["value"].encode("ascii"))
        return torch.load(io.BytesIO(data))
    raise ValueError("strata.deepspeed.load_checkpoint: the checkpoint's engine state has format "
                     "%r; expected json or %s" % (stored.get("format"), _PICKLED))
