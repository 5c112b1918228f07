"""tools/meson.build names the package's modules one by one (so that no stray file is installed): a module added to
tools/arshim/ and not to that list would be missing from every installation, and `arshim` with it; so would a data
file the package reads (path_limits.json)."""
import glob
import os
import re

from conftest import TOOLS


def test_every_module_is_installed():
    with open(os.path.join(TOOLS, "meson.build")) as f:
        listed = set(re.findall(r"'arshim/(\w+\.(?:py|json))'", f.read()))
    modules = {os.path.basename(p) for pattern in ("*.py", "*.json")
               for p in glob.glob(os.path.join(TOOLS, "arshim", pattern))}
    assert listed == modules
