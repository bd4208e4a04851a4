"""Which ds_config a DeepSpeed script means, as deepspeed.initialize finds it: the `config`
argument (a dict or a path), else DeepSpeed's older `config_params`, else args.deepspeed_config
(or args.deepspeed_config_dict). The runtime reads it as its manifest (its keys are DeepSpeed's, and
Strata's own sections may stand beside them); the few keys only the engine acts on are taken out of
what the runtime reads, so that it does not warn about them as ignored."""
import json
import os

# Keys the engine (not the runtime) acts on: the data loader's.
ENGINE_KEYS = ("dataloader_drop_last",)


class Config:
    """The ds_config: `manifest` for strata.init (the path, so that messages name the file, or
    the dict), `overrides` (the merge patch removing ENGINE_KEYS), and `values` (the dict)."""

    def __init__(self, manifest, values, source):
        self.manifest = manifest
        self.values = values
        self.source = source
        present = [key for key in ENGINE_KEYS if key in values]
        self.overrides = {key: None for key in present} or None

    def get(self, key, default=None):
        return self.values.get(key, default)


def _from_path(path, what):
    path = os.fspath(path)
    try:
        with open(path) as f:
            values = json.load(f)
    except FileNotFoundError:
        raise ValueError("strata.deepspeed.initialize: %s %r: no such file" % (what, path)) from None
    except json.JSONDecodeError as e:
        raise ValueError("strata.deepspeed.initialize: %s %r: malformed JSON (%s)"
                         % (what, path, e)) from None
    if not isinstance(values, dict):
        raise ValueError("strata.deepspeed.initialize: %s %r: expected a JSON object, got %s"
                         % (what, path, type(values).__name__))
    return Config(path, values, path)


def _from(value, what):
    if isinstance(value, dict):
        return Config(dict(value), dict(value), what)
    if isinstance(value, (str, os.PathLike)):
        return _from_path(value, what)
    raise TypeError("strata.deepspeed.initialize: %s: expected a dict or a path to a JSON file, "
                    "got %s" % (what, type(value).__name__))


def resolve(args, config, config_params):
    """The Config for initialize(args, config, config_params), with DeepSpeed's precedence and
    its refusal of two configs at once."""
    if config is None:
        config = config_params
    from_args, what = None, None
    if args is not None:
        for attr in ("deepspeed_config", "deepspeed_config_dict"):
            if getattr(args, attr, None) is not None:
                from_args, what = getattr(args, attr), "args." + attr
                break
    if config is not None and from_args is not None:
        raise ValueError("strata.deepspeed.initialize: a config was given both as config= and as "
                         "%s; give one (as DeepSpeed requires)" % what)
    if config is not None:
        return _from(config, "config")
    if from_args is not None:
        return _from(from_args, what)
    raise ValueError("strata.deepspeed.initialize: no DeepSpeed config: pass config= (a dict or "
                     "a ds_config.json path) or args with --deepspeed_config "
                     "(deepspeed.add_config_arguments)")
