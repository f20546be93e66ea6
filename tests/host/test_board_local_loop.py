"""The host API and command line of the local loop (``Board.set_local_multiple``,
``Board.set_control_rates``, ``linkdyn control configure --local-multiple``) against the software
board with controllers and the local loop (the ReferenceEngine on ControlledChainModel, the
executable definition the gateware is held equal to)."""

import numpy as np
import pytest

from linkdyn.host import Board, IncompatibleBoardError
from linkdyn.host.cli import main
from linkdyn.model import load_robot

from support.controlled_host import ControlledReferenceSerial, ReferencePty, sensor_at_reference

ROBOT = load_robot("ur5")
N = ROBOT.n


def _board(port):
    return Board(port, timeout=0.5)


def test_info_reports_the_local_loop_and_the_multiple_is_written_and_read_back():
    port = ControlledReferenceSerial(N, sensor_at_reference, local_loop=True)
    with _board(port) as board:
        info = board.info()
        assert info.controllers and info.spec.local_loop
        assert board.read_controller_state().local_multiple == 1
        assert board.set_local_multiple(4) == 4
        assert port.target.local_multiple == 4 and port.target.local_phase == 0
        assert board.read_controller_state().local_multiple == 4
        for value, error, text in ((0, ValueError, "1 .. 2\\*\\*32-1"),
                                   (1 << 32, ValueError, "1 .. 2\\*\\*32-1"),
                                   (2.0, TypeError, "integer"), (True, TypeError, "integer")):
            with pytest.raises(error, match=text):
                board.set_local_multiple(value)
        assert port.target.local_multiple == 4, "a refused value writes nothing"


def test_rates_in_hz_give_the_period_and_the_multiple_or_a_clear_error():
    port = ControlledReferenceSerial(N, sensor_at_reference, local_loop=True)
    with _board(port) as board:
        assert board.set_control_rates(250.0, 1000.0) == (12_000, 4)    # 12 MHz clock
        assert (port.target.control_period, port.target.local_multiple) == (12_000, 4)
        assert board.set_control_rates(1000.0) == (12_000, 1)
        for args, text in (((300.0, 1000.0), "integer multiple .* not 3.33333 times"),
                           ((1000.0, 250.0), "integer multiple .* not 0.25 times"),
                           ((0.0, 1000.0), "chain rate must be a positive"),
                           ((100.0, float("nan")), "local rate must be a positive")):
            with pytest.raises(ValueError, match=text):
                board.set_control_rates(*args)
        assert (port.target.control_period, port.target.local_multiple) == (12_000, 1)


def test_control_steps_run_local_updates_between_chain_updates():
    """Through the host's CONTROL frames: with multiple 3 the chain's UPDATE_COUNT counts
    every step, the controllers' message strobes (msg_age) only every third."""
    port = ControlledReferenceSerial(N, sensor_at_reference, local_loop=True)
    with _board(port) as board:
        board.set_local_multiple(3)
        q = np.zeros((7, N))
        local_phases, message_age = [], []
        for k in range(7):
            local_phases.append(port.target.local_phase)
            board.control(q[k], q[k], q[k])
            message_age.append(port.target.joints[0].read("msg_age"))
        assert local_phases == [0, 1, 2, 0, 1, 2, 0]
        assert message_age == [0, 1, 2, 0, 1, 2, 0]
        assert port.target.chain.updates == 7
        assert port.target.control_steps == 7


def test_a_board_without_the_local_loop_refuses_a_multiple_but_takes_one_rate():
    port = ControlledReferenceSerial(N, sensor_at_reference)
    with _board(port) as board:
        with pytest.raises(IncompatibleBoardError, match="without the local loop"):
            board.set_local_multiple(2)
        with pytest.raises(IncompatibleBoardError, match="without the local loop"):
            board.set_control_rates(100.0, 200.0)
        assert board.set_control_rates(1000.0) == (12_000, 1)


def test_configure_local_multiple_on_the_command_line(capsys):
    with ReferencePty(ControlledReferenceSerial(N, sensor_at_reference, local_loop=True)) as pty:
        argv = ["control", "--port", pty.port, "--timeout", "5", "--robot", "ur5",
                "configure", "--period", "0.001"]
        assert main(argv + ["--local-multiple", "5"]) == 0
        out = capsys.readouterr().out
        assert "local multiple: 5 control steps per chain update (4 local updates" in out
        assert pty.serial.target.local_multiple == 5
        assert main(argv[:5] + ["status"]) == 0
        assert "local loop: 5 control steps per chain update (200 Hz), 4 of them local " \
            "updates" in capsys.readouterr().out
        assert main(argv + ["--local-multiple", "0"]) != 0
        assert "--local-multiple: the local multiple must be 1 .. 2**32-1" in \
            capsys.readouterr().err
        assert pty.serial.target.local_multiple == 5
