#!/usr/bin/env python3
"""Checks for the checkpoint resume tests, Python standard library only (independent of Strata's
own readers, so a bug shared by the writer and the reader cannot hide itself).

  ckpt_check.py params-equal-safetensors DUMP FILE.safetensors [NAME...]
  ckpt_check.py params-equal-safetensors-f16 DUMP FILE.safetensors [NAME...]  (masters rounded to fp16)
      DUMP (fashion_mnist --dump-params: every parameter's f32 values in registration order) must
      equal, bit for bit, the safetensors file's F32 tensors NAME... in that order, and the file
      must hold exactly those tensors (default names: the example's W1 b1 W2 b2 W3 b3).
  ckpt_check.py losses-close REF OTHER FIRST LAST RTOL
      --loss-log files ("global_step loss" lines): OTHER's steps FIRST..LAST (inclusive) must all
      be in both and |other - ref| <= RTOL * |ref| for each.
  ckpt_check.py losses-equal REF OTHER FIRST LAST
      The same lines, text-identical.
  ckpt_check.py truncate FILE        cut FILE to half its size
  ckpt_check.py flip FILE OFFSET     invert the bits of the byte at OFFSET (negative: from the end)
  ckpt_check.py set-format-version METADATA N
"""
import json
import struct
import sys

DEFAULT_NAMES = ["W1", "b1", "W2", "b2", "W3", "b3"]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} of a safetensors file (8-byte LE header length, JSON header,
    data; offsets relative to the data's start)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail(f"{path}: {len(blob)} bytes, too short for a safetensors header")
    (header_len,) = struct.unpack_from("<Q", blob, 0)
    if 8 + header_len > len(blob):
        fail(f"{path}: header length {header_len} runs past the file's {len(blob)} bytes")
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    data = blob[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            fail(f"{path}: tensor {name}: data_offsets {begin}..{end} outside {len(data)} bytes")
        tensors[name] = (entry["dtype"], entry["shape"], data[begin:end])
    return tensors


def round_to_f16(raw, count):
    """The fp32 values of `raw` rounded to fp16 (nearest even, as struct's 'e') and back."""
    values = struct.unpack(f"<{count}f", raw)
    return struct.pack(f"<{count}f", *(struct.unpack("<e", struct.pack("<e", v))[0] for v in values))


def params_equal_safetensors(dump_path, st_path, names, f16=False):
    names = names or DEFAULT_NAMES
    with open(dump_path, "rb") as f:
        dump = f.read()
    tensors = read_safetensors(st_path)
    if set(tensors) != set(names):
        fail(f"{st_path}: tensors {sorted(tensors)}, expected exactly {sorted(names)}")
    offset = 0
    for name in names:
        dtype, shape, raw = tensors[name]
        if dtype != "F32":
            fail(f"{st_path}: {name} is {dtype}, expected F32")
        count = 1
        for d in shape:
            count *= d
        if len(raw) != 4 * count:
            fail(f"{st_path}: {name} has shape {shape} but {len(raw)} bytes")
        if f16:  # a job in fp16: its parameters are the masters rounded
            raw = round_to_f16(raw, count)
        mine = dump[offset:offset + len(raw)]
        if mine != raw:
            if len(mine) != len(raw):
                fail(f"{dump_path} ends inside {name} (at byte {len(dump)})")
            a = struct.unpack(f"<{count}f", mine)
            b = struct.unpack(f"<{count}f", raw)
            diffs = [i for i in range(count) if struct.pack("<f", a[i]) != struct.pack("<f", b[i])]
            i = diffs[0]
            fail(f"{name}: {len(diffs)} of {count} values differ; first at [{i}]: "
                 f"loaded {a[i]!r}, consolidated {b[i]!r}")
        offset += len(raw)
        print(f"{name}: {count} values equal")
    if offset != len(dump):
        fail(f"{dump_path} has {len(dump) - offset} bytes beyond the parameters")
    print(f"PASS: {dump_path} equals {st_path} ({offset // 4} values)")


def read_losses(path):
    losses = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 2:
                fail(f"{path}:{n}: expected 'global_step loss', got {line!r}")
            losses[int(parts[0])] = parts[1]
    return losses


def compare_losses(ref_path, other_path, first, last, rtol):
    ref, other = read_losses(ref_path), read_losses(other_path)
    worst = 0.0
    for step in range(first, last + 1):
        for path, table in ((ref_path, ref), (other_path, other)):
            if step not in table:
                fail(f"{path}: no loss for global step {step}")
        if rtol is None:
            if ref[step] != other[step]:
                fail(f"step {step}: {other_path} has {other[step]}, {ref_path} has {ref[step]}")
            continue
        a, b = float(ref[step]), float(other[step])
        rel = abs(b - a) / abs(a) if a != 0 else abs(b)
        worst = max(worst, rel)
        print(f"step {step}: ref {ref[step]}  other {other[step]}  rel {rel:.3e}")
        if not rel <= rtol:
            fail(f"step {step}: relative difference {rel:.3e} > {rtol:g}")
    print(f"PASS: steps {first}..{last} " +
          ("identical" if rtol is None else f"within {rtol:g} (worst {worst:.3e})"))


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "params-equal-safetensors":
        params_equal_safetensors(args[0], args[1], args[2:])
    elif cmd == "params-equal-safetensors-f16":
        params_equal_safetensors(args[0], args[1], args[2:], f16=True)
    elif cmd == "losses-close":
        compare_losses(args[0], args[1], int(args[2]), int(args[3]), float(args[4]))
    elif cmd == "losses-equal":
        compare_losses(args[0], args[1], int(args[2]), int(args[3]), None)
    elif cmd == "truncate":
        with open(args[0], "r+b") as f:
            f.seek(0, 2)
            size = f.tell()
            f.truncate(size // 2)
        print(f"{args[0]}: {size} -> {size // 2} bytes")
    elif cmd == "flip":
        with open(args[0], "r+b") as f:
            f.seek(0, 2)
            size = f.tell()
            offset = int(args[1])
            offset = offset if offset >= 0 else size + offset
            f.seek(offset)
            byte = f.read(1)
            f.seek(offset)
            f.write(bytes([byte[0] ^ 0xFF]))
        print(f"{args[0]}: flipped byte {offset} of {size}")
    elif cmd == "set-format-version":
        with open(args[0]) as f:
            meta = json.load(f)
        if "format_version" not in meta:
            fail(f"{args[0]}: no format_version key")
        meta["format_version"] = int(args[1])
        with open(args[0], "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{args[0]}: format_version = {args[1]}")
    else:
        fail(f"unknown command {cmd}\n" + __doc__)


if __name__ == "__main__":
    main(sys.argv)
