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


#: Units of work of ``make test`` on both cores (pytest-xdist ``-n 2``), by what a test file's
#: source uses: each named unit runs on one worker, one test after another; every other file is
#: a unit of its own. ``board``: simulated boards behind a serial line (their replies have
#: wall-clock timeouts, so they do not run beside each other); ``chain`` and ``distributed``:
#: the cocotb runs that share the build folders under ``build/sim/chain`` and
#: ``build/sim/distributed``. Checked in this order.
_UNITS = [
    ("chain", re.compile(r"run_chain\b")),
    ("distributed", re.compile(r"run_distributed\b")),
    ("board", re.compile(r"SimulatedBoard|sim-board|simulated_board|support\.host|"
                         r"simulator_or_none|[Vv]erilator|iverilog|run_cocotb")),
]
#: Files that would match ``board`` but run no serial line (a cocotb testbench on the board's
#: pins, its build cached under a lock): units of their own, started early (they are long).
_OWN_UNIT = ("tests/sim/test_board_uart.py",)
#: The units started first, longest first.
_FIRST = ("board", *_OWN_UNIT, "chain", "distributed")


def _unit(root, path, cache={}):
    """Return the unit of work of the test file ``path`` (relative to ``root``)."""
    if path not in cache:
        cache[path] = path
        if path not in _OWN_UNIT:
            try:
                source = (root / path).read_text()
            except OSError:
                source = ""
            cache[path] = next((name for name, pattern in _UNITS if pattern.search(source)),
                               path)
    return cache[path]


if importlib.util.find_spec("xdist") is not None:
    def pytest_xdist_make_scheduler(config, log):
        """With pytest-xdist (``make test`` runs ``-n 2``): the units of work of
        :data:`_UNITS`, the longest first. (xdist's ``--dist loadgroup`` would group with
        marks, but does not under pytest 9.)"""
        from xdist.scheduler import LoadScopeScheduling

        class UnitScheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                return _unit(config.rootpath, nodeid.split("::", 1)[0])

            def _assign_work_unit(self, node):
                if not getattr(self, "_ordered", False):
                    self._ordered = True
                    first = [scope for scope in _FIRST if scope in self.workqueue]
                    for scope in reversed(first):
                        self.workqueue.move_to_end(scope, last=False)
                super()._assign_work_unit(node)

        return UnitScheduling(config, log)
