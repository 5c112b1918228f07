"""tools/meson.build names the package's modules one by one (so that no stray file is installed): a module added to
tools/arshim/ and not to that list would be missing from every installation, and `arshim` with it."""
import glob
import os
import re

from conftest import TOOLS


def test_every_module_is_installed():
    with open(os.path.join(TOOLS, "meson.build")) as f:
        listed = set(re.findall(r"'arshim/(\w+\.py)'", f.read()))
    modules = {os.path.basename(p) for p in glob.glob(os.path.join(TOOLS, "arshim", "*.py"))}
    assert listed == modules
