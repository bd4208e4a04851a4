#!/usr/bin/env bash
# Downloads the Python build backend of `pip install .` (scikit-build-core, from PyPI: Debian 12
# has none) and what it needs into a folder of wheels, so that tests/install builds the package
# offline with --no-build-isolation. The wheels go to a scratch folder first and DEST appears only
# when all arrived, so a broken download leaves no half folder that a later run would keep.
# Usage: scripts/python-build-deps.sh DEST
set -euo pipefail
dest="${1:?usage: scripts/python-build-deps.sh DEST}"
if [ -f "$dest/complete" ]; then exit 0; fi
scratch="$(mktemp -d "${dest%/}.partial.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
/usr/bin/python3 -m pip download --disable-pip-version-check --only-binary=:all: \
  --dest "$scratch" "scikit-build-core>=0.10"
touch "$scratch/complete"
rm -rf "$dest"
mv "$scratch" "$dest"
trap - EXIT
