"""pytest setup for the Python module's tests (docs/python.md).

CTest runs them with PYTHONPATH=<build>/python (test `python`); run by hand, the release build's
module is used when `ccsynth` is not importable otherwise.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

try:
    import ccsynth  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "build" / "release" / "python"))
    import ccsynth  # noqa: F401

os.environ.setdefault("CCSYNTH_SOURCE_DIR", str(ROOT))
