"""Builds the ccsynth Python module with CMake (docs/python.md).

The extension ccsynth._ccsynth is the CMake target ccsynth_python of this repository (python/):
build_ext configures the project in build/pip (or $CCSYNTH_CMAKE_BUILD_DIR) for this
interpreter, builds that one target and copies the extension into the wheel next to the
package's Python files (python/ccsynth). Metadata is in pyproject.toml.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(os.environ.get("CCSYNTH_CMAKE_BUILD_DIR", ROOT / "build" / "pip"))
        build_dir.mkdir(parents=True, exist_ok=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCCSYNTH_BUILD_PYTHON=ON",
            "-DCCSYNTH_BUILD_TESTS=OFF",
            "-DCCSYNTH_BUILD_BENCH=OFF",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "-j", jobs, "--target", "ccsynth_python"],
                       check=True)
        built = sorted((build_dir / "python" / "ccsynth").glob("_ccsynth*.so"))
        if not built:
            raise RuntimeError(f"the CMake build made no _ccsynth*.so in {build_dir}/python/ccsynth")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


# egg_base: setuptools' metadata goes to build/, not into the source tree (python/).
(ROOT / "build").mkdir(exist_ok=True)
setup(ext_modules=[CMakeExtension("ccsynth._ccsynth")], cmdclass={"build_ext": CMakeBuild},
      options={"egg_info": {"egg_base": "build"}})
