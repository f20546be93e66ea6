"""pytest configuration of the LinkDyn suite.

The tests mirror the package: ``tests/model``, ``tests/gateware``, ``tests/sim``, ``tests/boards``,
``tests/host`` (with ``identification`` and ``trajectory``) and ``tests/bench``; shared helpers
live in the :mod:`support` package beside this file. ``LINKDYN_LONG=1`` selects the long sample
counts (:data:`support.LONG`); the cocotb tests pick their simulator with
:func:`linkdyn.sim.runner.simulator`.
"""

import importlib.util
import os
import re
from pathlib import Path

# Plots are written to files; no display is needed (or available in CI).
os.environ.setdefault("MPLBACKEND", "Agg")


#: What marks a test file as one that runs an HDL simulator (Verilator, Icarus: cocotb
#: testbenches, simulated boards, their command-line tools) or a simulated board process.
_HDL = re.compile(r"run_chain|run_cocotb|run_distributed|simulator_or_none|get_runner|"
                  r"[Vv]erilator|iverilog|SimulatedBoard|sim-board|simulated_board|"
                  r"support\.host")


def _simulates_hdl(path, cache={}):
    """Return whether the test file at ``path`` simulates HDL (:data:`_HDL`)."""
    if path not in cache:
        try:
            cache[path] = bool(_HDL.search(Path(path).read_text()))
        except OSError:
            cache[path] = False
    return cache[path]


if importlib.util.find_spec("xdist") is not None:
    def pytest_xdist_make_scheduler(config, log):
        """With pytest-xdist (``make test`` runs ``-n 2``): the test files that simulate HDL
        form one unit of work, run on one worker one test after another (they share simulator
        build folders, and a simulated board's wall-clock timeouts want a core of their own);
        every other test file is a unit of its own, spread over the workers. (xdist's
        ``--dist loadgroup`` would do this with marks, but does not group under pytest 9.)"""
        from xdist.scheduler import LoadScopeScheduling

        class HDLScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                path = nodeid.split("::", 1)[0]
                return "hdl" if _simulates_hdl(config.rootpath / path) else path

        return HDLScheduling(config, log)
