"""Builds the b2stream wheel: the package plus libb2s_py.so, made by meson
from the b2stream source tree this directory belongs to (or the one named by
$B2S_SOURCE_ROOT).  $B2S_WHEEL_RADOS=enabled builds the library with Ceph
RADOS stores (then the wheel needs librados2 at run time); the default
leaves them out so the wheel needs only common libraries."""
import os
import re
import shutil
import subprocess
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("B2S_SOURCE_ROOT") or os.path.dirname(HERE)


def project_version() -> str:
    """The version in the project() call of meson.build, so wheel and
    packages agree."""
    with open(os.path.join(ROOT, "meson.build"), encoding="utf-8") as f:
        m = re.search(r"version\s*:\s*'([^']+)'", f.read())
    if not m:
        raise RuntimeError(f"no version in {ROOT}/meson.build")
    return m.group(1)


class BuildWithLibrary(build_py):
    """build_py, then libb2s_py.so into the built package."""

    def run(self):
        super().run()
        rados = os.environ.get("B2S_WHEEL_RADOS", "disabled")
        with tempfile.TemporaryDirectory(prefix="b2stream-wheel-") as bdir:
            subprocess.run(["meson", "setup", bdir, ROOT, "--buildtype=release",
                            "-Dtests=false", "-Dbench=false", "-Dfuzz=false",
                            "-Dpython=false", f"-Drados={rados}"],
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["ninja", "-C", bdir, "python/libb2s_py.so"], check=True,
                           stdout=subprocess.DEVNULL)
            dest = os.path.join(self.build_lib, "b2stream", "libb2s_py.so")
            shutil.copyfile(os.path.join(bdir, "python", "libb2s_py.so"), dest)


class NativeDistribution(Distribution):
    """Holds a native library: built into the platform-specific tree."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for one platform (it holds a native library) but any Python 3:
    the library is loaded with ctypes, not as an extension module."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(version=project_version(), distclass=NativeDistribution,
      cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel})
