#!/usr/bin/env python3
"""strata-ckpt against a synthetic checkpoint (strata_ckpt_make_synthetic). The consolidated
safetensors file is read back by the reader below, written from the safetensors layout alone
(u64 LE header length, JSON header, data_offsets) with the Python standard library, and every value
is compared with the formula the writer used (synthetic.hpp).

Usage: tool_test.py MODE --tool strata-ckpt --make strata_ckpt_make_synthetic --work DIR
MODE: inspect | verify | consolidate | errors | save_pause_hook | consolidate_memory
"""
import argparse
import array
import json
import os
import shutil
import signal
import struct
import subprocess
import sys

PARAM_COUNTS = [10, 1000, 37, 5000, 3]  # SyntheticSpec's defaults
SLOTS = ["master", "exp_avg", "exp_avg_sq"]
TAG = "global_step12"


def value(param, slot, element):
    """synthetic_value: exact in fp32, so equality is the right comparison."""
    return ((param * 7919 + slot * 104729 + element * 31) % 1000003 - 500000) / 1024.0


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def run(cmd, expect_rc=0, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    output = result.stdout + result.stderr
    print("$ " + " ".join(cmd) + "\n" + output)
    check(result.returncode == expect_rc, f"exit status {result.returncode}, expected {expect_rc}")
    return output


def read_safetensors(path):
    """Returns ({name: (dtype, shape, bytes)}, metadata) read with struct and json only."""
    with open(path, "rb") as f:
        data = f.read()
    check(len(data) >= 8, f"{path}: shorter than the header length")
    (header_len,) = struct.unpack("<Q", data[:8])
    check(8 + header_len <= len(data), f"{path}: header length {header_len} past the end")
    header = json.loads(data[8:8 + header_len].decode("utf-8"))
    base = 8 + header_len
    check(base % 8 == 0, "data section not 8-byte aligned")
    metadata = header.pop("__metadata__", {})
    check(all(isinstance(v, str) for v in metadata.values()), "__metadata__ values must be strings")
    tensors = {}
    spans = []
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        spans.append((begin, end))
        tensors[name] = (entry["dtype"], entry["shape"], data[base + begin:base + end])
    spans.sort()
    position = 0
    for begin, end in spans:  # back to back, covering the data section exactly
        check(begin == position, f"gap or overlap at data offset {begin}")
        position = end
    check(base + position == len(data), f"data section is {len(data) - base} bytes, tensors cover {position}")
    return tensors, metadata


def make(args, *extra, env=None):
    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    os.makedirs(args.work)
    ckpt = os.path.join(args.work, "ckpt")
    run([args.make, ckpt, *extra], env=env)
    return ckpt


def test_inspect(args):
    ckpt = make(args)
    text = run([args.tool, "inspect", ckpt])
    for expected in ["format version  1", "strata version  0.1.0", "world size      3", "stage           2",
                     "model dtype     bf16", "global_steps=12", "slots           master exp_avg exp_avg_sq",
                     "params          5 (6050 elements)", "rank00002.shard"]:
        check(expected in text, f"inspect output lacks {expected!r}")
    summary = json.loads(run([args.tool, "inspect", "--json", os.path.join(ckpt, TAG)]))
    check(summary["format_version"] == 1 and summary["world_size"] == 3 and summary["stage"] == 2, "header fields")
    check(summary["strata_version"] == "0.1.0" and summary["model_dtype"] == "bf16", "versions and dtype")
    check(summary["optimizer"]["type"] == "AdamW", "optimizer")
    check(summary["counters"] == {"global_steps": 12, "micro_steps": 48, "skipped_steps": 1}, "counters")
    check(summary["slots"] == SLOTS and summary["params"] == 5 and summary["elements"] == 6050, "slots, params")
    check(len(summary["ranks"]) == 3, "three ranks")
    for r, rank in enumerate(summary["ranks"]):
        path = os.path.join(ckpt, TAG, rank["file"])
        check(rank["file"] == f"rank{r:05d}.shard", f"rank {r} file name")
        check(rank["file_size"] == os.path.getsize(path), f"rank {r} file size")
        check(rank["ranges"] >= 1 and rank["data_bytes"] > 0, f"rank {r} ranges and data bytes")
    check(sum(r["data_bytes"] for r in summary["ranks"]) == 6050 * 4 * 3, "data bytes add up to the model")


def test_verify(args):
    ckpt = make(args)
    text = run([args.tool, "verify", ckpt])
    for r in range(3):
        check(f"rank{r:05d}.shard: ok" in text, f"rank {r} not reported ok")


def check_consolidated(path, optimizer):
    tensors, metadata = read_safetensors(path)
    check(metadata.get("format") == "pt" and metadata.get("strata_version") == "0.1.0", f"__metadata__ {metadata}")
    expected = {}
    for p, count in enumerate(PARAM_COUNTS):
        expected[f"layer{p}.weight"] = (p, 0, count)
        if optimizer:
            for s, slot in enumerate(SLOTS[1:], start=1):
                expected[f"layer{p}.weight.{slot}"] = (p, s, count)
    check(sorted(tensors) == sorted(expected), f"tensors {sorted(tensors)}, expected {sorted(expected)}")
    for name, (p, s, count) in expected.items():
        dtype, shape, raw = tensors[name]
        check(dtype == "F32" and shape == [count], f"{name}: {dtype} {shape}")
        values = array.array("f")
        values.frombytes(raw)
        if sys.byteorder != "little":
            values.byteswap()
        for e, v in enumerate(values):
            if v != value(p, s, e):
                fail(f"{name}[{e}] = {v}, expected {value(p, s, e)}")
    return len(tensors)


def test_consolidate(args):
    ckpt = make(args)
    out = os.path.join(args.work, "model.safetensors")
    run([args.tool, "consolidate", ckpt, out])
    check(check_consolidated(out, optimizer=False) == 5, "five tensors")
    full = os.path.join(args.work, "full.safetensors")
    run([args.tool, "consolidate", os.path.join(ckpt, TAG), full, "--optimizer"])
    check(check_consolidated(full, optimizer=True) == 15, "fifteen tensors")
    check(not os.path.exists(out + ".tmp") and not os.path.exists(full + ".tmp"), "a .tmp file was left behind")
    # Metadata whose ranks leave part of a parameter out: an error before anything is read.
    meta_path = os.path.join(ckpt, TAG, "metadata.json")
    with open(meta_path) as f:
        meta = json.load(f)
    param, offset, count = meta["ranks"][1]["ranges"].pop(0)
    meta["ranks"][1]["data_bytes"] -= count * 4 * len(SLOTS)
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    os.remove(out)
    text = run([args.tool, "consolidate", ckpt, out], expect_rc=1)
    check(f"{meta_path}: parameter layer{param}.weight: elements from {offset} on are in no rank's file" in text,
          "consolidate names the uncovered elements")
    check(not os.path.exists(out), "a failed consolidate left a file")


def flip_bit(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x04]))


def test_errors(args):
    ckpt = make(args)
    tag = os.path.join(ckpt, TAG)
    shard = os.path.join(tag, "rank00001.shard")
    flip_bit(shard, 64 + 40)  # inside rank 1's first data block
    text = run([args.tool, "verify", ckpt], expect_rc=1)
    check(f"{shard}: checksum mismatch in block 'master' of" in text, "verify names the damaged file and block")
    check("rank00000.shard: ok" in text and "rank00002.shard: ok" in text, "the other files still verify")
    out = os.path.join(args.work, "out.safetensors")
    text = run([args.tool, "consolidate", ckpt, out], expect_rc=1)
    check(f"{shard}: checksum mismatch" in text, "consolidate names the damaged file")
    check(not os.path.exists(out) and not os.path.exists(out + ".tmp"), "a failed consolidate left a file")
    # Truncated inside the index.
    size = os.path.getsize(shard)
    os.truncate(shard, size - 40)
    text = run([args.tool, "verify", ckpt], expect_rc=1)
    check(f"{shard}: truncated: {size - 40} bytes, no trailer" in text, "verify reports the truncation")
    os.remove(shard)
    text = run([args.tool, "verify", ckpt], expect_rc=1)
    check(f"{shard}: missing" in text, "verify reports the missing file")
    # Not a checkpoint at all; metadata from a newer Strata.
    text = run([args.tool, "inspect", args.work], expect_rc=1)
    check(f"strata-ckpt: {args.work}: not a checkpoint" in text, "inspect names the folder")
    meta_path = os.path.join(tag, "metadata.json")
    with open(meta_path) as f:
        meta = json.load(f)
    meta["format_version"] = 2
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    text = run([args.tool, "inspect", ckpt], expect_rc=1)
    check(f"{meta_path}: format_version 2 is newer than this reader (1): written by a newer Strata" in text,
          "inspect reports the newer format")
    with open(meta_path, "w") as f:
        f.write("{not json")
    text = run([args.tool, "verify", ckpt], expect_rc=1)
    check(f"{meta_path}: not valid JSON" in text, "verify reports bad metadata")


def test_save_pause_hook(args):
    """STRATA_TEST_SAVE_PAUSE_AFTER_BYTES: the writer stops at exactly that byte, says so, waits."""
    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    os.makedirs(args.work)
    ckpt = os.path.join(args.work, "ckpt")
    env = dict(os.environ, STRATA_TEST_SAVE_PAUSE_AFTER_BYTES="1000")
    proc = subprocess.Popen([args.make, ckpt], stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stderr.readline()
    shard = os.path.join(ckpt, TAG, "rank00000.shard")
    check(line == f"strata test hook: paused writing {shard}\n", f"hook line {line!r}")
    check(proc.poll() is None, "the writer should be paused, not finished")
    check(os.path.getsize(shard) == 1000, f"partial file is {os.path.getsize(shard)} bytes, expected 1000")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    check(not os.path.exists(os.path.join(ckpt, "latest")), "no latest file after a killed save")
    # The partial tag is no checkpoint: metadata.json was never written.
    text = run([args.tool, "verify", os.path.join(ckpt, TAG)], expect_rc=1)
    check("metadata.json: missing" in text or "not a checkpoint" in text, "verify rejects the partial tag")


def test_consolidate_memory(args):
    params, elements = 40, 1 << 20  # 160 MB of fp32 master weights
    ckpt = make(args, "--params", str(params), "--elements", str(elements), "--ranks", "2", "--slots", "master")
    out = os.path.join(args.work, "model.safetensors")
    proc = subprocess.Popen([args.tool, "consolidate", ckpt, out])
    _, status, usage = os.wait4(proc.pid, 0)
    check(os.waitstatus_to_exitcode(status) == 0, "consolidate failed")
    peak_mb = usage.ru_maxrss / 1024  # Linux: KiB
    print(f"consolidate peak RSS {peak_mb:.1f} MB for {params * elements * 4 / 1e6:.0f} MB of parameters")
    check(peak_mb < 60, f"peak RSS {peak_mb:.1f} MB: consolidate is not streaming")
    with open(out, "rb") as f:  # spot checks: the small test checks every value
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        base = 8 + header_len
        for p in range(params):
            begin, end = header[f"layer{p}.weight"]["data_offsets"]
            check(end - begin == elements * 4, f"layer{p}.weight size")
            for e in (0, 1, elements // 2, elements - 1):
                f.seek(base + begin + 4 * e)
                (v,) = struct.unpack("<f", f.read(4))
                check(v == value(p, 0, e), f"layer{p}.weight[{e}] = {v}, expected {value(p, 0, e)}")
    check(os.path.getsize(out) == base + params * elements * 4, "file size")
    shutil.rmtree(args.work)  # 320 MB: do not leave it in the build tree


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--tool", required=True)
    parser.add_argument("--make", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    globals()["test_" + args.mode](args)
    print("PASS")


if __name__ == "__main__":
    main()
