#!/usr/bin/env bash
# Downloads the Python build backend of `pip install .` (scikit-build-core, from PyPI: Debian 12
# has none) and what it needs into a folder of wheels, so that tests/install builds the package
# offline with --no-build-isolation. A folder that already holds them is kept.
# Usage: scripts/python-build-deps.sh DEST
set -euo pipefail
dest="${1:?usage: scripts/python-build-deps.sh DEST}"
if compgen -G "$dest/scikit_build_core-*.whl" > /dev/null; then exit 0; fi
mkdir -p "$dest"
/usr/bin/python3 -m pip download --disable-pip-version-check --only-binary=:all: \
  --dest "$dest" "scikit-build-core>=0.10"
