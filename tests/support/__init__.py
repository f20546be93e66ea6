"""Helpers shared by the test suite (not part of the package): robots, simulated boards, chains,
identification data and the protocol engine's testbench. Imported as ``support.<module>``
(``tests/`` is on ``sys.path`` through pytest's ``pythonpath`` setting)."""

import os
from pathlib import Path

__all__ = ["LONG", "REPOSITORY", "long_param"]

#: The checkout the tests run in (its docs/ and build/ folders).
REPOSITORY = Path(__file__).resolve().parents[2]

#: ``LINKDYN_LONG=1`` (``make test-long``): the long (nightly) sample counts.
LONG = os.environ.get("LINKDYN_LONG", "") not in ("", "0")


def long_param(*values, reason="LINKDYN_LONG=1"):
    """Return ``pytest.param(*values)`` that runs only with ``LINKDYN_LONG=1`` (a case of a
    parametrised test that the suite's time budget leaves to the long run)."""
    import pytest
    return pytest.param(*values, marks=pytest.mark.skipif(not LONG, reason=reason))
