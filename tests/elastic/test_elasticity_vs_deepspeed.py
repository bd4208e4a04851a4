"""Strata's elasticity arithmetic against DeepSpeed's own compute_elastic_config.

DeepSpeed's three elasticity modules (config.py, constants.py, elasticity.py) are taken unmodified
from its source distribution (pinned below; DeepSpeed 0.19 no longer ships elasticity) and run in a
stub package, so torch and the rest of DeepSpeed are not needed. Generated configs (seeded) cover
versions 0.1 and 0.2, nodes of 1-8 GPUs, model parallelism, both batch preferences and invalid
world sizes; for each, both sides must give the same global batch, valid world sizes and
micro-batch, or both refuse it.

usage: test_elasticity_vs_deepspeed.py --probe BIN --work DIR [--sdist FILE]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tarfile

DEEPSPEED = "deepspeed==0.14.4"
CONFIGS = 400
MIN_ACCEPTED = 200


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def deepspeed_sdist(work, given):
    if given:
        return given
    folder = os.path.join(work, "sdist")
    found = [f for f in os.listdir(folder)] if os.path.isdir(folder) else []
    if not found:
        # The source distribution only: pip does not install it, so torch is not needed.
        rc = subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
                             "--no-deps", "--no-binary", ":all:", "--dest", folder, DEEPSPEED]).returncode
        found = os.listdir(folder) if os.path.isdir(folder) else []
        if rc != 0 or not found:
            fail(f"could not download {DEEPSPEED}'s source from PyPI (pip exit {rc}); "
                 "give one with --sdist FILE")
    return os.path.join(folder, found[0])


def stub_package(work, sdist):
    root = os.path.join(work, "stub")
    package = os.path.join(root, "deepspeed")
    os.makedirs(os.path.join(package, "elasticity"), exist_ok=True)
    os.makedirs(os.path.join(package, "utils"), exist_ok=True)
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) == 4 and parts[1:3] == ["deepspeed", "elasticity"] and parts[3] in (
                    "config.py", "constants.py", "elasticity.py"):
                with tar.extractfile(member) as src, open(
                        os.path.join(package, "elasticity", parts[3]), "wb") as dst:
                    dst.write(src.read())
    for name in ("config.py", "constants.py", "elasticity.py"):
        if not os.path.exists(os.path.join(package, "elasticity", name)):
            fail(f"{sdist} has no deepspeed/elasticity/{name}")
    # What elasticity.py imports from the rest of the package.
    with open(os.path.join(package, "__init__.py"), "w"):
        pass
    with open(os.path.join(package, "elasticity", "__init__.py"), "w"):
        pass
    with open(os.path.join(package, "git_version_info.py"), "w") as f:
        f.write('version = "0.14.4"\n')
    with open(os.path.join(package, "utils", "__init__.py"), "w") as f:
        f.write('import logging\nlogger = logging.getLogger("deepspeed")\n')
    sys.path.insert(0, root)
    from deepspeed.elasticity.elasticity import compute_elastic_config
    return compute_elastic_config


def generated_configs(count, compute):
    rng = random.Random(20261206)
    configs = []
    for i in range(count):
        version = 0.1 if i % 2 == 0 else 0.2
        micro = sorted(rng.sample(range(1, 33), rng.randint(1, 4)))
        block = {
            "enabled": True,
            "max_train_batch_size": rng.choice([rng.randint(1, 300), rng.randint(64, 5000)]),
            "micro_batch_sizes": micro,
            "version": version,
            "prefer_larger_batch": rng.random() < 0.6,
        }
        if rng.random() < 0.7:
            block["min_gpus"] = rng.randint(1, 8)
            block["max_gpus"] = block["min_gpus"] + rng.choice([0, 3, 15, 60, 500])
        if version == 0.2:
            block["num_gpus_per_node"] = rng.choice([1, 1, 2, 4, 8])
            if rng.random() < 0.2:
                block["model_parallel_size"] = rng.choice([1, 2])
        if rng.random() < 0.3:
            block["min_time"] = rng.randint(0, 30)
        # Mostly sizes that may be valid (so that most configs reach the micro-batch choice):
        # one of version 0.1's valid sizes, whole nodes for version 0.2.
        world = rng.randint(1, 64)
        if version == 0.1 and rng.random() < 0.15:
            world = 0
        elif version == 0.1 and rng.random() < 0.7:
            try:
                valid = compute({"elasticity": block}, "0.14.4")[1]
                world = int(rng.choice(valid)) if valid else world
            except Exception:
                pass
        elif version == 0.2 and rng.random() < 0.7:
            world = block.get("num_gpus_per_node", 1) * rng.randint(1, 8)
        configs.append({"elasticity": block, "world_size": world})
    return configs


def deepspeed_answer(compute, config):
    try:
        result = compute({"elasticity": config["elasticity"]}, "0.14.4",
                         world_size=config["world_size"])
    except Exception as e:  # DeepSpeed's refusals: ElasticityError, ValueError, TypeError on None
        return {"error": f"{type(e).__name__}: {e}"}
    batch, valid = result[0], result[1]
    if valid is None:  # no candidate had a valid size; a world size would be a TypeError
        return {"error": "no valid world size"}
    answer = {"batch": int(batch), "valid": [int(v) for v in valid]}
    if len(result) == 3:
        micro = int(result[2])
        answer.update(micro=micro, accumulation=int(batch) // (micro * config["world_size"]))
    return answer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--sdist")
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    compute = stub_package(a.work, deepspeed_sdist(a.work, a.sdist))
    configs = generated_configs(CONFIGS, compute)
    probe = subprocess.run([a.probe], input="".join(json.dumps(c) + "\n" for c in configs),
                           capture_output=True, text=True)
    if probe.returncode != 0:
        fail(f"the probe exited {probe.returncode}: {probe.stderr}")
    ours = [json.loads(line) for line in probe.stdout.splitlines()]
    if len(ours) != len(configs):
        fail(f"the probe answered {len(ours)} of {len(configs)} configs")
    agreed = refused = 0
    for config, mine in zip(configs, ours):
        theirs = deepspeed_answer(compute, config)
        if "error" in theirs or "error" in mine:
            if "error" not in theirs or "error" not in mine:
                fail(f"{json.dumps(config)}: DeepSpeed {theirs}, Strata {mine}")
            refused += 1
            continue
        if config["world_size"] == 0:
            mine = {k: mine[k] for k in ("batch", "valid")}
        if mine != theirs:
            fail(f"{json.dumps(config)}: DeepSpeed {theirs}, Strata {mine}")
        agreed += 1
    print(f"{agreed} configs give the same batch, valid sizes and micro-batch; "
          f"{refused} are refused by both")
    # Most configs must be accepted, or the comparison says little.
    if agreed < MIN_ACCEPTED:
        fail(f"only {agreed} configs were accepted by both (expected at least {MIN_ACCEPTED})")


if __name__ == "__main__":
    main()
