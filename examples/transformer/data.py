"""Byte-level text from Debian's `fortunes` package (/usr/share/games/fortunes), as numpy arrays.

Each fortune file is plain text, fortunes separated by lines holding a single "%". Read: the
regular files of the folder in sorted name order, skipping the strfile indexes (*.dat), the *.u8
duplicates (symlinks to the plain files in Debian), any other symlink, and subfolders (the
offensive ones live in off/, shipped by fortunes-off, never read). Fortune i (counting over all
files in that order, from 0) is held out for validation when i % HOLDOUT == HOLDOUT - 1 (every 20th).
Each split is its fortunes' bytes, each followed by "%\n" as in the files, concatenated: a uint8
array whose values are the tokens (vocab 256).
"""
import os

import numpy as np

DEFAULT_DATA_DIR = "/usr/share/games/fortunes"
HOLDOUT = 20  # every 20th fortune is held out
SEPARATOR = b"%\n"


class DataError(RuntimeError):
    """Missing or unusable data; the message names the path."""


def _missing(path, what):
    return DataError(f"{path}: {what} (install the Debian package with `apt-get install "
                     f"fortunes`, or pass --data-dir)")


def fortune_files(data_dir):
    if not os.path.isdir(data_dir):
        raise _missing(data_dir, "no such folder")
    files = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if name.endswith((".dat", ".u8")) or name.startswith(".") or os.path.islink(path) \
                or not os.path.isfile(path):
            continue
        files.append(path)
    if not files:
        raise _missing(data_dir, "no fortune files in this folder")
    return files


def split_fortunes(raw):
    """The fortunes of one file's bytes (each ends with a newline), empty ones dropped."""
    fortunes, current = [], []
    for line in raw.splitlines(keepends=True):
        if line.rstrip(b"\r\n") == b"%":
            if current:
                fortunes.append(b"".join(current))
            current = []
        else:
            current.append(line)
    if current and b"".join(current).strip():
        fortunes.append(b"".join(current))
    return [f if f.endswith(b"\n") else f + b"\n" for f in fortunes if f.strip()]


class Corpus:
    """train, valid: uint8 token arrays; counts of fortunes and files."""

    def __init__(self, data_dir=DEFAULT_DATA_DIR):
        self.data_dir = data_dir
        train, valid = [], []
        index = 0
        files = fortune_files(data_dir)
        for path in files:
            try:
                with open(path, "rb") as f:
                    raw = f.read()
            except OSError as e:
                raise DataError(f"{path}: cannot read ({e})") from None
            for fortune in split_fortunes(raw):
                (valid if index % HOLDOUT == HOLDOUT - 1 else train).append(fortune + SEPARATOR)
                index += 1
        self.files = len(files)
        self.fortunes = index
        self.train = np.frombuffer(b"".join(train), dtype=np.uint8)
        self.valid = np.frombuffer(b"".join(valid), dtype=np.uint8)


def check_fits(tokens, context, what):
    if tokens.size < context + 1:
        raise DataError(f"the {what} split has {tokens.size} tokens, fewer than one sequence of "
                        f"context {context} + 1")


def train_batch(tokens, context, seed, step, count):
    """Global step `step`'s `count` sequences: inputs and targets int64 [count, context], windows
    starting at offsets drawn by numpy from (seed, step); every rank draws the same and takes its
    slice."""
    starts = np.random.default_rng([seed, step]).integers(0, tokens.size - context, size=count)
    windows = tokens[starts[:, None] + np.arange(context + 1)].astype(np.int64)
    return windows[:, :-1], windows[:, 1:]


def eval_windows(tokens, context, limit=0):
    """Start offsets of the held-out set's non-overlapping windows of context + 1 tokens, the
    first `limit` of them (0: all)."""
    count = (tokens.size - 1) // context
    if limit:
        count = min(count, limit)
    return np.arange(count, dtype=np.int64) * context


def windows_at(tokens, context, starts):
    windows = tokens[np.asarray(starts)[:, None] + np.arange(context + 1)].astype(np.int64)
    return windows[:, :-1], windows[:, 1:]
