"""From a clone to a first run (issue 29), with real builds and processes; one mode a ctest test.

  main_job_build        scripts/build-main.sh builds only what the main job runs (Release, no tests,
                        no benchmarks, no CUDA), reuses its folder, adds the gloo plugin for
                        --backend gloo, refuses bad arguments; scripts/main-job.sh trains on it.
  pip_venv              `pip install .` into a fresh venv (offline: scikit-build-core from the
                        wheelhouse, --no-build-isolation), then strata-run, strata-ckpt,
                        strata-plugin-check and `import strata` with nothing else on PATH or in the
                        environment; a broken bundled libstrata is named with the loader's reason.
  pip_missing_packages  a build without some Debian packages stops with one message naming them
                        and the apt-get command (CMAKE_DISABLE_FIND_PACKAGE_<Name> hides them).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig


def run(argv, timeout, env=None, cwd=None):
    """Runs argv; returns (exit code, stdout + stderr). The command and its output go to this
    test's log, so a failure shows what ran."""
    print("$ " + " ".join(argv), flush=True)
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=env, cwd=cwd)
    print(r.stdout[-6000:], flush=True)
    return r.returncode, r.stdout


def check(condition, message):
    if not condition:
        sys.exit("FAILED: " + message)


def cache_value(build, name):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


def plugins_in(build):
    folder = os.path.join(build, "lib", "strata", "plugins")
    return sorted(name[3:-3] for name in os.listdir(folder) if name.endswith(".so"))


# ---- main_job_build ------------------------------------------------------------------------------
def main_job_build(a):
    build = os.path.join(a.work, "build-main")
    shutil.rmtree(build, ignore_errors=True)
    script = os.path.join(a.source, "scripts", "build-main.sh")
    rc, out = run([script, "--build-dir", build], timeout=1500)
    check(rc == 0, "build-main.sh failed (%d)" % rc)
    check(sorted(os.listdir(os.path.join(build, "bin"))) == ["fashion_mnist", "strata-run"],
          "bin/ should hold only the job's programs: %s" % os.listdir(os.path.join(build, "bin")))
    check(plugins_in(build) == ["strata_allreduce_mpi", "strata_amp", "strata_offload", "strata_zero"],
          "plugins built: %s" % plugins_in(build))
    check(os.path.exists(os.path.join(build, "lib", "libstrata.so")), "no lib/libstrata.so")
    # No test or benchmark was even configured, so none can have been built.
    for folder in ("tests", "bench"):
        check(not os.path.exists(os.path.join(build, folder)), "%s/ exists in the build" % folder)
    for name, expected in (("CMAKE_BUILD_TYPE", "Release"), ("STRATA_BUILD_TESTS", "OFF"),
                           ("STRATA_BUILD_BENCH", "OFF"), ("STRATA_CUDA", "OFF")):
        check(cache_value(build, name) == expected,
              "%s is %s, expected %s" % (name, cache_value(build, name), expected))
    check(" warning: " not in out, "the Release build printed a warning")

    # Reused: a second run configures the same folder and compiles nothing.
    rc, out = run([script, "--build-dir", build], timeout=300)
    check(rc == 0 and "no work to do" in out, "a second build-main.sh run rebuilt something")

    # The gloo backend's comm plugin comes with --backend gloo, still no test program.
    rc, out = run([script, "--build-dir", build, "--backend", "gloo"], timeout=900)
    check(rc == 0, "build-main.sh --backend gloo failed")
    check("strata_allreduce_gloo" in plugins_in(build), "no gloo plugin: %s" % plugins_in(build))
    check(len(os.listdir(os.path.join(build, "bin"))) == 2, "bin/ grew")

    # Bad arguments: one message naming what was wrong, and a non-zero exit.
    rc, out = run([script, "--build-dir", build, "--backend", "tcp"], timeout=60)
    check(rc == 2 and "--backend 'tcp': expected mpi or gloo" in out, "bad --backend accepted")
    missing = os.path.join(a.work, "no-such-manifest.json")
    rc, out = run([script, "--build-dir", build, "--manifest", missing], timeout=60)
    check(rc != 0 and missing in out and "cannot read it as JSON" in out,
          "a missing manifest was not named")

    # The README's main job on this build: strata-run's 4 ranks train (a few steps here) and
    # rank 0 reports its loss.
    env = dict(os.environ, STRATA_BUILD_DIR=build)
    rc, out = run([os.path.join(a.source, "scripts", "main-job.sh"), "--max-steps", "30"],
                  timeout=600, env=env)
    check(rc == 0, "main-job.sh failed (%d)" % rc)
    check(re.search(r"^\[0\] .*train_loss [0-9.]+", out, re.M) is not None,
          "rank 0 printed no train_loss line")


# ---- pip_venv ------------------------------------------------------------------------------------
def make_venv(a, name):
    """A fresh venv with scikit-build-core from the wheelhouse (offline). Returns its folder."""
    check(os.path.exists(os.path.join(a.wheelhouse, "complete")),
          "no scikit-build-core wheels in %s: run scripts/python-build-deps.sh %s (scripts/test.sh "
          "does) to download them from PyPI" % (a.wheelhouse, a.wheelhouse))
    venv = os.path.join(a.work, name)
    shutil.rmtree(venv, ignore_errors=True)
    rc, _ = run([sys.executable, "-m", "venv", venv], timeout=120)
    check(rc == 0, "python3 -m venv failed (Debian: apt-get install python3-venv)")
    rc, _ = run([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--find-links",
                 a.wheelhouse, "--disable-pip-version-check", "scikit-build-core"], timeout=300)
    check(rc == 0, "could not install scikit-build-core into the venv from the wheelhouse")
    return venv


def clean_env(venv, home):
    """Nothing but the venv and the system's programs: no STRATA_*, no LD_LIBRARY_PATH."""
    return {"PATH": os.path.join(venv, "bin") + ":/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8"}


def pip_venv(a):
    venv = make_venv(a, "venv")
    # The main job's build folder (install.main_job_build) is reused: only what the package adds
    # to the job's targets is compiled.
    build = os.path.join(a.work, "build-main")
    rc, out = run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation",
                   "--no-index", "--disable-pip-version-check",
                   "--config-settings", "build-dir=" + build, a.source], timeout=1500)
    check(rc == 0, "pip install . failed")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")  # linux_x86_64
    wheel = "strata-%s-py3-none-%s.whl" % (a.version, platform)
    check(wheel in out, "pip built no %s" % wheel)
    # The main job still builds and runs from the folder pip used (build-main.sh undoes SKBUILD
    # and the examples being off).
    rc, out = run([os.path.join(a.source, "scripts", "build-main.sh"), "--build-dir", build],
                  timeout=900)
    check(rc == 0 and os.path.exists(os.path.join(build, "bin", "fashion_mnist")),
          "build-main.sh failed on the folder pip built in")

    home = os.path.join(a.work, "home")
    os.makedirs(home, exist_ok=True)
    env = clean_env(venv, home)
    for tool in ("strata-run", "strata-ckpt", "strata-plugin-check"):
        check(shutil.which(tool, path=env["PATH"]) == os.path.join(venv, "bin", tool),
              "%s is not the venv's console command" % tool)
        rc, out = run([tool, "--version"], timeout=60, env=env, cwd=home)
        check(rc == 0 and out.strip() == "%s %s" % (tool, a.version),
              "%s --version printed %r" % (tool, out))

    site = subprocess.run([os.path.join(venv, "bin", "python3"), "-c",
                           "import strata, os; print(os.path.dirname(strata.__file__))"],
                          stdout=subprocess.PIPE, text=True, env=env, cwd=home).stdout.strip()
    check(site.startswith(venv + os.sep), "strata imports from %r, not the venv" % site)
    script = ("import strata; strata.init(); strata.barrier(); "
              "print('rank', strata.rank(), 'of', strata.size(), strata.__version__, "
              "strata.library()[1], flush=True)")
    for backend in ("mpi", "gloo"):
        rc, out = run(["strata-run", "--backend", backend, "-np", "2", "--", "python3", "-c",
                       script], timeout=300, env=env, cwd=home)
        check(rc == 0, "the 2-rank job on the %s backend failed" % backend)
        for rank in (0, 1):
            line = "[%d] rank %d of 2 %s %s" % (rank, rank, a.version,
                                                os.path.join(site, "lib", "libstrata.so"))
            check(line in out.splitlines(), "%s backend: no line %r" % (backend, line))

    # strata.init() without a manifest runs the C++ example's default manifest, from the package.
    with open(os.path.join(a.source, "examples", "manifests", "default.json")) as f:
        example_default = json.load(f)
    rc, out = run([os.path.join(venv, "bin", "python3"), "-c",
                   "import strata; print(strata.default_manifest())"], timeout=60, env=env, cwd=home)
    check(rc == 0 and out.strip() == os.path.join(site, "manifests", "default.json"),
          "strata.default_manifest() is %r, not the package's copy" % out)
    with open(out.strip()) as f:
        check(json.load(f) == example_default, "the package's default manifest is not the example's")

    # Bad input: the bundled libstrata cannot be loaded: the file and the loader's reason.
    broken = os.path.join(a.work, "broken")
    shutil.rmtree(broken, ignore_errors=True)
    shutil.copytree(site, os.path.join(broken, "strata"))
    library = os.path.join(broken, "strata", "lib", "libstrata.so")
    with open(library, "wb") as f:
        f.write(b"not an ELF file")
    rc, out = run([os.path.join(venv, "bin", "python3"), "-c", "import strata; strata.init()"],
                  timeout=60, env=dict(env, PYTHONPATH=broken), cwd=home)
    check(rc != 0, "a broken bundled libstrata loaded")
    check(library in out and "bundled with this package" in out,
          "the error does not name the bundled library: %r" % out[-500:])
    check(re.search(r"invalid ELF header|file too short", out) is not None,
          "the error does not give the loader's reason: %r" % out[-500:])


# ---- pip_missing_packages -----------------------------------------------------------------------
def pip_missing_packages(a):
    venv = make_venv(a, "venv-missing")
    build = os.path.join(a.work, "build-missing")
    shutil.rmtree(build, ignore_errors=True)
    rc, out = run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation",
                   "--no-index", "--disable-pip-version-check", "--config-settings",
                   "build-dir=" + build,
                   "--config-settings", "cmake.define.CMAKE_DISABLE_FIND_PACKAGE_spdlog=TRUE",
                   "--config-settings", "cmake.define.CMAKE_DISABLE_FIND_PACKAGE_CLI11=TRUE",
                   a.source], timeout=300)
    check(rc != 0, "pip install succeeded without spdlog and CLI11")
    check("these Debian packages are missing:" in out, "no missing-packages message")
    check("sudo apt-get update && sudo apt-get install -y libspdlog-dev libcli11-dev" in out,
          "the message does not give the apt-get command for exactly the missing packages")
    check(not os.path.exists(os.path.join(build, "build.ninja")),
          "the configure went on past the missing packages")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["main_job_build", "pip_venv", "pip_missing_packages"])
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--wheelhouse", required=True)
    parser.add_argument("--version", required=True)
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    globals()[a.mode](a)
    print("PASSED " + a.mode)


if __name__ == "__main__":
    main()
