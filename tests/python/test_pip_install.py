"""The README's install command works: `python3 -m pip install ./sdk/python` (here into a scratch
folder with --target, offline: --no-build-isolation --no-deps, so the build uses the installed
setuptools) gives a package that imports from where pip put it, not from the source tree, and
drives the runtime: one rank's collective through the installed copy."""
import os
import shutil

from conftest import MANIFEST, PYTHON, SOURCE_DIR, run, run_ranks


def test_pip_install_into_a_folder_then_train_a_step(work_dir):
    target = os.path.join(work_dir, "site")
    shutil.rmtree(target, ignore_errors=True)
    # pip builds in a copy, but setuptools still writes build/ and *.egg-info beside the sources
    # with some versions; build from a scratch copy so the source tree stays clean.
    source = os.path.join(work_dir, "python-src")
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(os.path.join(SOURCE_DIR, "sdk", "python"), source,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    r = run([PYTHON, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
             "--disable-pip-version-check", "--no-input", "--target", target, source],
            timeout=120)
    assert r.returncode == 0, str(r)
    assert os.path.exists(os.path.join(target, "strata", "torch.py")), os.listdir(target)
    # Each rank writes what it saw to its own file: ranks' stdout lines can interleave.
    result = os.path.join(work_dir, "installed-rank")
    for rank in (0, 1):
        if os.path.exists(f"{result}{rank}"):
            os.remove(f"{result}{rank}")
    script = (
        "import numpy, strata, sys\n"
        "strata.init(sys.argv[1])\n"
        "x = numpy.full(3, strata.rank() + 1.0, numpy.float32)\n"
        "strata.allreduce_(x)\n"
        "with open(sys.argv[2] + str(strata.rank()), 'w') as f:\n"
        "    f.write(strata.__file__ + ' ' + repr(x.tolist()))\n")
    r = run_ranks(2, [PYTHON, "-c", script, MANIFEST, result], timeout=120,
                  env={"PYTHONPATH": target})
    assert r.returncode == 0, str(r)
    for rank in (0, 1):
        with open(f"{result}{rank}") as f:
            where, total = f.read().split(" ", 1)
        print(f"rank {rank}: strata from {where}, allreduce {total}")
        assert where.startswith(target + os.sep), f"rank {rank} imported {where}, not the install"
        assert total == "[3.0, 3.0, 3.0]"
