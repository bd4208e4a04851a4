"""How a torch optimizer reaches the runtime: the manifest merge patch that makes it run the same
algorithm and hyperparameters (strata.torch.optimizer_overrides), and small helpers for merging
patches and for one-line messages."""


# Every key a manifest's optimizer params may hold for the optimizers translated below: a torch
# optimizer replaces the manifest's block, and a JSON merge patch can only replace keys one by one
# (null deletes), so the ones the new block does not set are deleted.
_OPTIMIZER_KEYS = ("lr", "betas", "eps", "weight_decay", "momentum", "dampening", "nesterov",
                   "adam_w_mode", "bias_correction")


def optimizer_overrides(optimizer):
    """The manifest merge patch that makes the runtime run `optimizer`'s algorithm and
    hyperparameters: {"optimizer": {"type": ..., "params": {...}}}. torch.optim.Adam, AdamW and
    SGD; anything else, or per-group hyperparameters that differ, raises ValueError naming it."""
    kind = type(optimizer).__name__
    if kind in ("Adam", "AdamW"):
        keys = ("lr", "betas", "eps", "weight_decay")
        refused = {"amsgrad": False, "maximize": False}
    elif kind == "SGD":
        keys = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
        refused = {"maximize": False}
    else:
        raise ValueError("strata.torch: optimizer %s is not one the runtime runs (torch.optim.Adam, "
                         "AdamW, SGD); pass optimizer=None and set the manifest's \"optimizer\" "
                         "(Adam, AdamW, SGD, Lion)" % kind)
    first = optimizer.param_groups[0]
    for i, group in enumerate(optimizer.param_groups):
        for key, allowed in refused.items():
            if group.get(key, allowed) != allowed:
                raise ValueError("strata.torch: %s param_groups[%d] sets %s=%r, which the runtime's "
                                 "%s does not do" % (kind, i, key, group[key], kind))
        for key in keys:
            if group[key] != first[key]:
                raise ValueError(
                    "strata.torch: %s param_groups[%d] has %s=%r but param_groups[0] has %r; the "
                    "runtime applies one set of hyperparameters to every parameter"
                    % (kind, i, key, group[key], first[key]))
    params = {key: None for key in _OPTIMIZER_KEYS}
    params.update({key: (list(first[key]) if key == "betas" else first[key]) for key in keys})
    if kind == "Adam":
        params["adam_w_mode"] = False  # torch's Adam adds weight decay to the gradient (L2)
    return {"optimizer": {"type": kind, "params": params}}


def _merge(patch, more):
    """Merge patch `more` over `patch` (both dicts), as RFC 7386 composes."""
    out = dict(patch)
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _first_few(items, separator, most=4):
    """items joined, at most `most` of them, "..." for the rest (messages stay one line)."""
    return separator.join(items[:most]) + (separator + "..." if len(items) > most else "")
