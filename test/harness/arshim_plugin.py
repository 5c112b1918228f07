"""pytest plugin of the MPI harness (loaded with `-p arshim_plugin`, test/harness on PYTHONPATH): the options meson
passes (--build, --flavor) and the `harness` fixture (arshim_harness.Harness) for the MPI scenarios."""
import pytest

import arshim_harness


def pytest_addoption(parser):
    parser.addoption("--build", help="the meson build directory")
    parser.addoption("--flavor", choices=["mpich", "openmpi"], help="the MPI flavor to run under")


@pytest.fixture(scope="session")
def harness(request):
    build, flavor = request.config.getoption("--build"), request.config.getoption("--flavor")
    if not build or not flavor:
        pytest.skip("an MPI scenario: needs --build and --flavor (meson test passes them)")
    return arshim_harness.Harness(build, flavor)


@pytest.fixture
def flavor(harness):
    return harness.flavor
