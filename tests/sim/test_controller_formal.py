"""The joint controller's limit and shut-off properties hold for all inputs (SymbiYosys), and
the proof catches a deliberately broken clamp.

Runs ``yowasp-sby`` (``mode prove``, k-induction with ``smtbmc z3``) on every property group of
:data:`linkdyn.sim.controller_formal.PROPERTIES`; skipped when the YoWASP tools or ``z3`` are
missing (``make install`` installs both: the ``formal`` extra).
"""

import os
import shutil
import sys
from pathlib import Path

import pytest
from amaranth.hdl import Mux

from linkdyn.gateware.controller import JointController
from linkdyn.sim.controller_formal import CLAMP_RESULT_LINE, PROPERTIES, find_sby, prove


def _tools_present():
    here = Path(sys.executable).parent
    z3 = (here / "z3").is_file() or shutil.which("z3")
    return find_sby() is not None and bool(z3)


pytestmark = pytest.mark.skipif(not _tools_present(),
                                reason="yowasp-sby or z3 missing (pip install -e '.[formal]')")


class OffByOneClamp(JointController):
    """A broken copy: a clamp that hits the limit returns one LSB beyond it."""

    def clamp(self, a, limit, negative_limit, above, below):
        return Mux(above, limit + 1, Mux(below, negative_limit, a)), above | below


class DisabledClamp(JointController):
    """A broken copy: the clamp passes its input through."""

    def clamp(self, a, limit, negative_limit, above, below):
        return a, above | below


LONG = bool(os.environ.get("LINKDYN_LONG"))


VARIANTS = [True, False] if LONG else [True]


@pytest.mark.parametrize("pipelined", VARIANTS)
def test_controller_properties_are_proven_for_all_inputs(pipelined):
    result = prove(tuple(PROPERTIES), controller=JointController(pipelined=pipelined))
    assert result.passed, result.log
    assert result.status == "PASS"


BROKEN_CASES = [("torque_limit", OffByOneClamp), ("feedback_limits", DisabledClamp)]
if LONG:
    BROKEN_CASES += [("torque_limit", DisabledClamp), ("feedback_limits", OffByOneClamp),
                     ("guard_limit", OffByOneClamp), ("guard_limit", DisabledClamp)]


@pytest.mark.parametrize("group, broken", BROKEN_CASES)
def test_proof_fails_on_a_broken_clamp(group, broken):
    result = prove(group, controller=broken())
    assert not result.passed
    # It fails where it must: a clamp's result is outside its limit.
    assert CLAMP_RESULT_LINE in result.failed_lines, result.log
