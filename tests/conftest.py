"""pytest configuration of the LinkDyn suite.

The tests mirror the package: ``tests/model``, ``tests/gateware``, ``tests/sim``, ``tests/boards``,
``tests/host`` (with ``identification`` and ``trajectory``) and ``tests/bench``; shared helpers
live in the :mod:`support` package beside this file. ``LINKDYN_LONG=1`` selects the long sample
counts (:data:`support.LONG`); the cocotb tests pick their simulator with
:func:`linkdyn.sim.runner.simulator`.
"""

import os

# Plots are written to files; no display is needed (or available in CI).
os.environ.setdefault("MPLBACKEND", "Agg")
