"""Run the Python tests with pytest, or skip (exit 77) with a message when
this interpreter lacks a module the package or the tests need."""
import importlib
import sys

missing = []
for name in ("zmq", "numpy", "pytest"):
    try:
        importlib.import_module(name)
    except ImportError:
        missing.append(name)
if missing:
    print(f"python tests skipped: {sys.executable} lacks "
          f"{', '.join(missing)} (Debian: apt-get install "
          f"{' '.join('python3-' + m for m in missing)})")
    sys.exit(77)

import pytest  # noqa: E402

sys.exit(pytest.main(["-p", "no:cacheprovider"] + sys.argv[1:]))
