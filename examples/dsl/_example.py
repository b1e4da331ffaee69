"""Shared start of every Python DSL example (examples/dsl/*.py): finds the `ccsynth` module (an
installed one, else the release build's build/release/python) and re-exports the driver
ccsynth.example.main, which gives every example the same flags:

    python3 examples/dsl/NAME.py -o out.xml [--topology T] [--size 1M ...] [--json] [--check]
"""

import os
import sys
from pathlib import Path

try:
    import ccsynth  # noqa: F401
except ImportError:
    build = os.environ.get("CCSYNTH_PYTHON_DIR",
                           str(Path(__file__).resolve().parents[2] / "build" / "release" / "python"))
    sys.path.insert(0, build)
    try:
        import ccsynth  # noqa: F401
    except ImportError:
        sys.exit(f"{Path(sys.argv[0]).name}: error: the ccsynth Python module was not found "
                 f"(build it: cmake --build --preset release, or pip install .; see docs/python.md)")

from ccsynth.example import main, node_shape  # noqa: E402,F401
