"""The binding checks the host API of the libstrata it loads (strata_api_version(), API 1.10; the package needs 1.13):
the library of this build passes; a library of another major or an older minor is refused with an
OSError that names the file and both versions, before any runtime is created."""
import os

import pytest

from strata import _capi


class FakeLibrary:
    """Stands for a loaded libstrata that reports `packed` as its host API."""

    def __init__(self, packed):
        self.packed = packed

    def strata_api_version(self):
        return self.packed


def test_this_builds_library_implements_the_packages_api():
    lib, path = _capi.load()
    packed = lib.strata_api_version()
    assert (packed >> 16, packed & 0xffff) == (_capi.API_MAJOR, _capi.API_MINOR), path
    assert path == os.environ["STRATA_LIBRARY"]


@pytest.mark.parametrize("major,minor", [(1, 13), (1, 14), (1, 200)])
def test_same_major_and_a_minor_at_least_the_packages_is_served(major, minor):
    _capi.check_api_version(FakeLibrary((major << 16) | minor), "/opt/x/libstrata.so")


@pytest.mark.parametrize("major,minor", [(1, 12), (1, 10), (1, 0), (2, 13), (0, 13)])
def test_another_major_or_an_older_minor_is_refused_naming_both(major, minor):
    with pytest.raises(OSError) as e:
        _capi.check_api_version(FakeLibrary((major << 16) | minor), "/opt/x/libstrata.so")
    message = str(e.value)
    assert "/opt/x/libstrata.so implements host API %d.%d" % (major, minor) in message
    assert "needs %d.%d" % (_capi.API_MAJOR, _capi.API_MINOR) in message
