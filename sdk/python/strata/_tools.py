"""The console commands `pip install .` puts on PATH (strata-run, strata-ckpt,
strata-plugin-check): each runs the program of that name that the wheel bundles in strata/bin,
which finds the bundled libstrata and plugins beside it (strata/lib)."""
import os
import sys

from ._capi import PACKAGE_DIR


def _exec(name):
    program = os.path.join(PACKAGE_DIR, "bin", name)
    if not os.access(program, os.X_OK):
        sys.exit("%s: %s is missing from the strata package: this strata was not installed with "
                 "'pip install' from the repository root (the C++ build puts it there)"
                 % (name, program))
    # exec, not a child: signals, the exit status and strata-run's /proc/self/exe (which finds the
    # bundled libstrata for the ranks) are the program's own.
    os.execv(program, [name] + sys.argv[1:])


def strata_run():
    _exec("strata-run")


def strata_ckpt():
    _exec("strata-ckpt")


def strata_plugin_check():
    _exec("strata-plugin-check")
