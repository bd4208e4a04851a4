"""Fashion-MNIST from the gzipped idx files of Debian's dataset-fashion-mnist, as numpy arrays.

The same files, checks and pixel scaling as the C++ host (examples/fashion_mnist/src/idx_reader.cpp,
batch_data.cpp): pixels stay uint8 in memory and become float32 per batch, multiplied by
float32(1/255) exactly as the C++ host does, so both hosts feed bit-identical inputs.
"""
import gzip
import os

import numpy as np

DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
CLASSES = 10
PIXEL_SCALE = np.float32(1.0) / np.float32(255.0)  # 1.0f / 255.0f, as batch_data.cpp


class DataError(RuntimeError):
    """A data file that is missing or not what it should be; the message names the file."""


def _read_idx(path, magic, dims):
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file (install the Debian package dataset-fashion-mnist "
                        f"or pass --data-dir)") from None
    except (OSError, EOFError) as e:  # gzip.BadGzipFile is an OSError
        raise DataError(f"{path}: not a readable gzip file ({e})") from None
    header = 4 + 4 * dims
    if len(raw) < header:
        raise DataError(f"{path}: truncated header ({len(raw)} bytes)")
    fields = np.frombuffer(raw, dtype=">u4", count=1 + dims)
    if int(fields[0]) != magic:
        raise DataError(f"{path}: bad magic 0x{int(fields[0]):08x}, expected 0x{magic:08x}")
    shape = tuple(int(d) for d in fields[1:])
    expected = int(np.prod(shape))
    if len(raw) - header != expected:
        raise DataError(f"{path}: {len(raw) - header} bytes of data, the header says {expected}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


class Dataset:
    """pixels: uint8 [count, features]; labels: uint8 [count]."""

    def __init__(self, pixels, labels):
        if pixels.shape[0] != labels.shape[0]:
            raise DataError(f"{pixels.shape[0]} images but {labels.shape[0]} labels")
        self.pixels = pixels
        self.labels = labels

    @property
    def count(self):
        return self.pixels.shape[0]

    @property
    def features(self):
        return self.pixels.shape[1]

    def batch(self, indices):
        """float32 inputs [n, features] in [0, 1] and int64 labels [n] of the given samples."""
        x = self.pixels[indices].astype(np.float32) * PIXEL_SCALE
        return x, self.labels[indices].astype(np.int64)


def load(data_dir=DEFAULT_DATA_DIR, split="train"):
    images, labels = FILES[split]
    pixels = _read_idx(os.path.join(data_dir, images), 0x00000803, 3)
    y = _read_idx(os.path.join(data_dir, labels), 0x00000801, 1)
    if y.size and int(y.max()) >= CLASSES:
        raise DataError(f"{os.path.join(data_dir, labels)}: label {int(y.max())} >= {CLASSES}")
    return Dataset(pixels.reshape(pixels.shape[0], -1), y)
