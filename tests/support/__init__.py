"""Helpers shared by the test suite (not part of the package): robots, simulated boards, chains,
identification data and the protocol engine's testbench. Imported as ``support.<module>``
(``tests/`` is on ``sys.path`` through pytest's ``pythonpath`` setting)."""

import os

__all__ = ["LONG"]

#: ``LINKDYN_LONG=1`` (``make test-long``): the long (nightly) sample counts.
LONG = os.environ.get("LINKDYN_LONG", "") not in ("", "0")
