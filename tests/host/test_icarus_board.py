"""The new user's case: a 6-node board simulated by Icarus Verilog through the plain
``Board.open(port)``. Icarus delivers the replies in bursts up to about 0.1 s apart and receives
a request at the same pace; the host used to give such a reply up as damaged after its 30 ms
settle time ("the replies keep arriving damaged or lost"). The torques are checked against the
golden model word for word. ``LINKDYN_LONG=1`` streams more states and reads the robot back.

The port is opened with a 10 s silence timeout, not the default 1 s: the simulator runs in its
own session and shares the CPU with every other one, and on a busy machine (the test suite's
parallel workers, each with its simulators) its first byte once came 1 s after the first request,
before the host had seen the line's pace, and that request was resent (a timeout, as documented,
not a damaged reply: ``tests/host/test_slow_line.py`` covers that case). What this test is about
is the settle time, which stays at its default, and no request may be resent for any reason."""

import os

import numpy as np
import pytest

from linkdyn.host import Board
from linkdyn.model import load_robot, rnea_fixed
from linkdyn.model import protocol as P
from linkdyn.sim.runner import SimulatorMissing, simulator

LONG = os.environ.get("LINKDYN_LONG", "") not in ("", "0")


def _icarus():
    try:
        return simulator("icarus")
    except SimulatorMissing:
        return None


@pytest.mark.skipif(_icarus() is None, reason="Icarus Verilog (iverilog) is not installed")
def test_an_icarus_simulated_board_works_through_the_plain_board_open():
    from linkdyn.sim import SimulatedBoard

    robot = load_robot("ur5")
    rng = np.random.default_rng(11)
    count = 6 if LONG else 1
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (count, 6))
    qd, qdd = rng.uniform(-2, 2, (count, 6)), rng.uniform(-5, 5, (count, 6))
    with SimulatedBoard(nodes=6, simulator="icarus") as sim:
        with Board.open(sim.port, timeout=10.0) as board:
            info = board.info()
            assert (info.nodes, info.banks) == (6, 1)
            assert info.map_check == P.ProtocolSpec(6).map_check
            board.load_robot(robot, verify=LONG)
            result = board.rnea(q, qd, qdd)
            stats = board.statistics
    np.testing.assert_array_equal(result.tau_words, rnea_fixed(robot, q, qd, qdd).tau_words)
    assert (stats.retries, stats.damaged_bytes, result.updates) == (0, 0, count)
