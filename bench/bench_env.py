"""What the Python-driven benchmarks (bench/*/run.py) share: failing with a message that names the
benchmark, and positive integer knobs read from the environment.

Each run.py puts bench/ on sys.path, imports this module and sets NAME to "bench/<its folder>".
"""
import os
import sys

NAME = "bench"


def die(msg):
    print("%s: %s" % (NAME, msg), file=sys.stderr)
    sys.exit(1)


def env_int(name, default, minimum=1):
    """The integer in environment variable `name` (at least `minimum`), or `default` when unset or
    empty."""
    value = os.environ.get(name, "")
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        die("%s=%r is not an integer" % (name, value))
    if n < minimum:
        die("%s=%d must be at least %d" % (name, n, minimum))
    return n
