#!/usr/bin/env bash
# Installs, builds and runs every test twice: a warnings-as-errors build, then the same tests under
# AddressSanitizer and UBSan.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
export OPENBLAS_NUM_THREADS=1

# Where the CUDA toolkit is installed, the plain build must compile every CUDA source (sm_80, sm_90,
# PTX; warnings as errors); GPU tests then skip with a message when the machine has no device.
cuda=AUTO
if command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then cuda=ON; fi
# The plain build is Release (-O2, as the main job, the wheel and the .deb are built) and compiles
# through ccache, so the Release trees that tests build from the same sources with the same flags
# (tests/install: the README's main job and `pip install .`) are compiled from the cache, not again
# (install.main_job_build took 357 s of CI's time compiling them before). This pass has no line
# tables; the sanitizer pass below keeps them (-g1) for its reports' file:line.
export CCACHE_DIR="$root/build-ccache"
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
# ccache hashes the path of the file it compiles, and a unity source is generated in its build
# folder (<target>.dir/Unity/*.cxx). With base_dir those paths are taken relative to each tree, so
# the main job's tree that tests/install makes inside build/ hits build/'s objects (without it
# install.main_job_build compiled everything again: 104 s against 11).
export CCACHE_BASEDIR="$root/build"
"$root/scripts/build.sh" "$root/build" -DSTRATA_CUDA=$cuda -DCMAKE_BUILD_TYPE=Release
# The Python build backend for tests/install's offline `pip install .` (from PyPI). Without it
# (PyPI unreachable) the other tests still run, and tests/install's pip tests fail saying so.
"$root/scripts/python-build-deps.sh" "$root/build/wheelhouse" ||
  echo "test.sh: could not download scikit-build-core into build/wheelhouse (see above)" >&2
# Two at a time on CI's two cores; tests that time the ranks (tests/faults) run alone (RUN_SERIAL).
# A test that fails is run once more (a catalogue case once failed within 0.03 s in a -j 2 run and
# passed every rerun; the cause was not found); one that fails twice fails the run.
ctest --test-dir "$root/build" --output-on-failure --timeout 600 -j 2 --repeat until-pass:2
# The manifest and checkpoint readers under libFuzzer (clang), 30 s each: the time the suite leaves
# for it under CI's 45 minutes (scripts/fuzz.sh defaults to 60 s when run by hand).
# The builds below share no flags with the cache's objects: they compile without it.
unset CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER
FUZZ_SECONDS=30 "$root/scripts/fuzz.sh" "$root/build-fuzz"

# The sanitizer build leaves CUDA out: nvcc's device code is not instrumented, the plain build above
# compiled every CUDA source, and no test here has a device to run it on.
# Open MPI keeps process-lifetime allocations that LeakSanitizer would report as leaks.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$root/scripts/build.sh" "$root/build-sanitize" -DSTRATA_SANITIZE=address,undefined \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 \
  -DSTRATA_BUILD_BENCH=OFF -DSTRATA_CUDA=OFF
# The accuracy runs (label "slow": several epochs of training) ran in the pass above; under the
# sanitizers they would take many times longer and exercise no code the other tests do not. Nor do
# the "variant" tests: the same code paths as a test that does run here, with another rank count,
# accumulation or clipping setting (`ctest -N -L variant` lists them: 182 s of test time in the
# sanitizer pass of a CI run before they were left out).
ctest --test-dir "$root/build-sanitize" --output-on-failure --timeout 900 -LE 'slow|variant' -j 2 \
  --repeat until-pass:2
