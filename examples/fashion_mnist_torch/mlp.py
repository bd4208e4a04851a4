"""The C++ host's MLP (examples/fashion_mnist/src/mlp.cpp) as a torch nn.Module.

784-256-128-10 by default: Linear layers fc1, fc2, fc3 with ReLU between them; the loss is
softmax cross-entropy, mean over the micro-batch (F.cross_entropy). named_parameters() yields
fc1.weight, fc1.bias, fc2.weight, ... in the C++ registration order W1, b1, W2, b2, W3, b3.

Layout: the C++ Wl is row-major [in x out]; torch's Linear.weight is [out x in], its transpose.
load_cpp_params / dump_cpp_params convert the C++ host's raw dumps (--dump-params,
--dump-initial-params: native float32, parameter after parameter, no header).
"""
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

DEFAULT_SIZES = (784, 256, 128, 10)


class MLP(nn.Module):
    def __init__(self, sizes=DEFAULT_SIZES):
        super().__init__()
        if len(sizes) < 2:
            raise ValueError(f"MLP: need at least input and output sizes, got {list(sizes)}")
        self.sizes = tuple(int(s) for s in sizes)
        for layer in range(len(self.sizes) - 1):
            self.add_module(f"fc{layer + 1}", nn.Linear(self.sizes[layer], self.sizes[layer + 1]))

    def layers(self):
        return [getattr(self, f"fc{layer + 1}") for layer in range(len(self.sizes) - 1)]

    def forward(self, x):
        layers = self.layers()
        for layer in layers[:-1]:
            x = F.relu(layer(x))
        return layers[-1](x)

    @torch.no_grad()
    def init_like_cpp(self, seed):
        """The C++ init's distributions (He uniform before a ReLU, Glorot uniform for the output
        layer, zero biases) from torch's generator: not the C++ values; use load_cpp_params for
        those."""
        gen = torch.Generator().manual_seed(int(seed))
        layers = self.layers()
        for i, layer in enumerate(layers):
            fan_in, fan_out = layer.in_features, layer.out_features
            last = i + 1 == len(layers)
            limit = (6.0 / (fan_in + fan_out)) ** 0.5 if last else (6.0 / fan_in) ** 0.5
            layer.weight.copy_((torch.rand(layer.weight.shape, generator=gen) * 2 - 1) * limit)
            layer.bias.zero_()

    def cpp_param_count(self):
        return sum(a * b + b for a, b in zip(self.sizes[:-1], self.sizes[1:]))


def cpp_param_names(sizes=DEFAULT_SIZES):
    """W1, b1, W2, b2, ... with their C++ shapes."""
    names = []
    for layer in range(len(sizes) - 1):
        names.append((f"W{layer + 1}", (sizes[layer], sizes[layer + 1])))
        names.append((f"b{layer + 1}", (sizes[layer + 1],)))
    return names


def split_cpp_params(flat, sizes=DEFAULT_SIZES, where="parameter dump"):
    """A flat float32 array in the C++ layout -> {"W1": [in x out], "b1": [out], ...}."""
    expected = sum(int(np.prod(shape)) for _, shape in cpp_param_names(sizes))
    if flat.size != expected:
        raise ValueError(f"{where}: {flat.size} floats, a {'-'.join(map(str, sizes))} MLP has "
                         f"{expected}")
    out, offset = {}, 0
    for name, shape in cpp_param_names(sizes):
        n = int(np.prod(shape))
        out[name] = flat[offset:offset + n].reshape(shape)
        offset += n
    return out


def read_cpp_params(path, sizes=DEFAULT_SIZES):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such parameter file")
    size = os.path.getsize(path)
    if size % 4 != 0:
        raise ValueError(f"{path}: size {size} is not a whole number of float32 values")
    return split_cpp_params(np.fromfile(path, dtype=np.float32), sizes, where=path)


@torch.no_grad()
def load_cpp_params(model, path):
    """Sets the model's parameters from a C++ host's raw dump (W transposed into Linear.weight)."""
    params = read_cpp_params(path, model.sizes)
    for i, layer in enumerate(model.layers()):
        layer.weight.copy_(torch.from_numpy(np.ascontiguousarray(params[f"W{i + 1}"].T)))
        layer.bias.copy_(torch.from_numpy(params[f"b{i + 1}"]))


@torch.no_grad()
def cpp_params(model):
    """The model's parameters as one flat float32 array in the C++ layout."""
    parts = []
    for layer in model.layers():
        parts.append(layer.weight.detach().float().t().contiguous().numpy().ravel())
        parts.append(layer.bias.detach().float().contiguous().numpy().ravel())
    return np.concatenate(parts)


def dump_cpp_params(model, path):
    """Writes the model's parameters in the C++ host's --dump-params layout."""
    cpp_params(model).astype(np.float32).tofile(path)
