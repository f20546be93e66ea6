"""The host API (linkdyn.host.Board) against a software board: the protocol's ReferenceEngine on
the FakeChain model, behind a fake serial port that damages, drops or withholds frames to
order. Fast and deterministic; the same API over a pseudo-terminal and the simulated gateware
is tested in test_host_simulated_board.py."""

from dataclasses import replace

import numpy as np
import pytest

from linkdyn.host import (
    Board, BoardConnectionError, BoardDeviceError, BoardProtocolError, BoardTimeoutError,
    IncompatibleBoardError, SaturationError,
)
from linkdyn.model import FixedPointRangeError, load_robot
from linkdyn.model import protocol as P
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.model.microprogram import NODE_FORMATS

from support.host import ReferenceSerial, fake_chain_tau_words, tau_values, words

ROBOT = load_robot("ur5")


def _board(port=None, **kwargs):
    kwargs.setdefault("timeout", 0.2)
    kwargs.setdefault("settle", 0.0)
    return Board(port or ReferenceSerial(), **kwargs)


def _states(count, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-scale, scale, (count, 6)) for _ in range(3))


def _expected(q, qd, qdd, wrench=None):
    spec = P.ProtocolSpec(6)
    # (f_ext and mu_ext share the wrench format)
    wrench_words = None if wrench is None else words(np.broadcast_to(wrench, q.shape + (6,)),
                                                     "f_ext_x")
    return fake_chain_tau_words(spec, encode_robot(ROBOT), encode_base_motion(ROBOT),
                                words(q, "q"), words(qd, "qd"), words(qdd, "qdd"),
                                wrench_words)


# -- commands ----------------------------------------------------------------------------------

def test_info_decodes_and_checks_the_build_information():
    with _board() as board:
        info = board.info()
        assert (info.nodes, info.fmt, info.clock_hz, info.baudrate) == (
            6, NODE_FORMATS, 12_000_000, 3_000_000)
        assert info.map_check == P.ProtocolSpec(6).map_check
        assert "6 nodes" in str(info)
    assert board.closed


def test_info_refuses_a_board_with_another_register_map():
    port = ReferenceSerial()
    port.engine._info["MAP_CHECK"] ^= 1
    with pytest.raises(IncompatibleBoardError, match="MAP_CHECK"):
        _board(port).info()


def test_info_refuses_a_board_that_speaks_another_protocol_version():
    port = ReferenceSerial()
    original = port.engine.receive
    other = bytes([P.PROTOCOL_VERSION + 1])
    port.engine.receive = lambda data: (lambda reply: reply[:1] + other + reply[2:-2] + (
        P.crc16(other + reply[2:-2]).to_bytes(2, "little")))(original(data))
    with pytest.raises(IncompatibleBoardError, match="protocol version"):
        _board(port).info()


def test_load_robot_loads_every_constant_and_reads_it_back():
    port = ReferenceSerial()
    with _board(port) as board:
        board.load_robot(ROBOT)
    spec = port.spec
    for i, node in enumerate(encode_robot(ROBOT)):
        for reg in spec.registers.of_kind("constant"):
            assert port.target.memory[i][reg.address] == node[reg.name] & 0xFFFFFFFF


def test_load_robot_checks_the_node_count_and_the_number_format():
    seven = replace(ROBOT, links=ROBOT.links + (replace(ROBOT.links[-1], name="extra"),))
    parameters = ROBOT.parameters().copy()
    parameters[20:30] *= 20_000.0                # link 3: 47 t, does not fit the mass format
    heavy = ROBOT.with_parameters(parameters)
    with _board() as board:
        with pytest.raises(ValueError, match="has 7 joints, the board 6 nodes"):
            board.load_robot(seven)
        with pytest.raises(FixedPointRangeError, match="node 3 .*constant"):
            board.load_robot(heavy)
        assert board.statistics.requests == 1          # only INFO: nothing was loaded


def test_rnea_of_one_state_and_of_a_batch_equals_the_fake_chain():
    q, qd, qdd = _states(40)
    with _board() as board:
        board.load_robot(ROBOT)
        batch = board.rnea(q, qd, qdd)
        one = board.rnea(q[3], qd[3], qdd[3])
    expected, overflow = _expected(q, qd, qdd)
    np.testing.assert_array_equal(batch.tau_words, expected)
    assert batch.tau_words.shape == (40, 6) and batch.tau.shape == (40, 6)
    np.testing.assert_array_equal(one.tau_words, expected[3])
    assert one.tau.shape == (6,) and one.overflow.shape == (6,)
    assert not batch.saturated and not overflow.any()
    assert batch.updates == 40 and batch.retries == 0
    assert np.all(np.diff(batch.update_count) == 1)


def test_inverse_dynamics_returns_torques_in_newton_metres():
    q, qd, qdd = _states(5)
    with _board() as board:
        board.load_robot(ROBOT)
        tau = board.inverse_dynamics(q, qd, qdd)
    np.testing.assert_array_equal(tau, tau_values(_expected(q, qd, qdd)[0]))


def test_external_wrench_is_sent_and_cleared_again():
    q, qd, qdd = _states(6)
    wrench = np.random.default_rng(3).uniform(-5, 5, (6, 6))
    with _board() as board:
        board.load_robot(ROBOT)
        with_wrench = board.rnea(q, qd, qdd, f_ext=wrench)
        without = board.rnea(q, qd, qdd)         # the wrench registers must be zero again
    np.testing.assert_array_equal(with_wrench.tau_words, _expected(q, qd, qdd, wrench)[0])
    np.testing.assert_array_equal(without.tau_words, _expected(q, qd, qdd)[0])


def test_saturated_torques_are_never_returned_as_plain_values():
    q, qd, qdd = _states(4)
    q[2] = 30.0                           # the fake update's sum leaves the word range (q and qd
    qd[2] = 30.0                          # are Q5.26 words: 30 * 2**26 each)
    with _board() as board:
        board.load_robot(ROBOT)
        with pytest.raises(SaturationError, match="state 2 joint 1") as caught:
            board.inverse_dynamics(q, qd, qdd)
        result = board.rnea(q, qd, qdd)
    assert isinstance(caught.value, OverflowError)
    assert caught.value.result.saturated
    assert result.overflow[2].all() and not result.overflow[[0, 1, 3]].any()
    assert (result.tau_words[2] == (1 << 31) - 1).all()


# -- errors and retries ------------------------------------------------------------------------

def _prepare(board):
    # Load the robot and run one state, so that the next requests are the STEPs of the test
    # (the first run also zeroes the wrench registers and reads UPDATE_COUNT).
    board.load_robot(ROBOT)
    board.rnea(np.zeros(6), np.zeros(6), np.zeros(6))


def test_a_damaged_reply_is_retried_and_never_used():
    q, qd, qdd = _states(30)
    port = ReferenceSerial()
    with _board(port) as board:
        _prepare(board)
        port.damage_replies = {port.replies + 7, port.replies + 29}   # a middle and the last
        result = board.rnea(q, qd, qdd)
    np.testing.assert_array_equal(result.tau_words, _expected(q, qd, qdd)[0])
    assert result.retries == 2
    # The board ran the two STEPs whose replies were damaged twice: UPDATE_COUNT tells.
    assert result.updates == 32
    assert board.statistics.damaged_bytes > 0
    assert board.statistics.timeouts == 0              # resent for the damage, not silence


def test_a_damaged_reply_that_looks_like_a_long_frame_costs_only_itself():
    # The damage plants a false sync byte whose header announces more payload than the
    # replies still in flight carry: once the line is idle the decoder gives that frame up and
    # finds the replies behind it, which are used, not resent.
    q, qd, qdd = _states(20)
    port = ReferenceSerial()
    with _board(port, settle=0.01) as board:
        _prepare(board)
        port.false_sync_replies = {port.replies + 6}
        result = board.rnea(q, qd, qdd)
        assert board.window() > 8
    np.testing.assert_array_equal(result.tau_words, _expected(q, qd, qdd)[0])
    assert (result.retries, result.updates) == (1, 21)
    assert board.statistics.damaged_bytes > 0


def test_a_lost_reply_is_retried():
    q, qd, qdd = _states(12)
    port = ReferenceSerial()
    with _board(port) as board:
        _prepare(board)
        port.drop_replies = {port.replies + 4}
        result = board.rnea(q, qd, qdd)
    np.testing.assert_array_equal(result.tau_words, _expected(q, qd, qdd)[0])
    assert (result.retries, result.updates) == (1, 13)
    assert board.statistics.timeouts == 0              # the next reply showed the loss


def test_a_damaged_request_is_answered_bad_crc_and_retried():
    q, qd, qdd = _states(12)
    port = ReferenceSerial()
    with _board(port) as board:
        _prepare(board)
        port.damage_requests = {port.requests + 5}
        result = board.rnea(q, qd, qdd)
    np.testing.assert_array_equal(result.tau_words, _expected(q, qd, qdd)[0])
    assert result.retries == 1
    assert result.updates == 12            # the damaged STEP never ran
    assert board.statistics.error_replies == {P.ErrorCode.BAD_CRC: 1}


def test_a_board_that_stops_answering_raises_a_timeout_error():
    q, qd, qdd = _states(20)
    port = ReferenceSerial()
    with _board(port, timeout=0.05, retries=2) as board:
        _prepare(board)
        port.mute_after = port.replies + 3
        with pytest.raises(BoardTimeoutError, match="stopped answering.*STEP failed 3 times"):
            board.rnea(q, qd, qdd)
        stats = board.statistics
        assert stats.retries > 0 and stats.timeouts == stats.retries


def test_replies_that_keep_arriving_damaged_raise_a_protocol_error():
    port = ReferenceSerial()
    port.damage_replies = set(range(100))
    with pytest.raises(BoardProtocolError, match="damaged or lost: INFO failed 4 times"):
        _board(port).info()


def test_an_error_reply_raises_a_device_error_with_its_code():
    with _board() as board:
        with pytest.raises(BoardDeviceError, match="BAD_ADDRESS") as caught:
            board.read(0, 200)
        assert caught.value.code == P.ErrorCode.BAD_ADDRESS
        with pytest.raises(BoardDeviceError, match="READ_ONLY"):
            board.write(0, P.ProtocolSpec(6).tau_address, [1])


def test_bad_inputs_raise_clear_exceptions_before_anything_is_sent():
    q, qd, qdd = _states(3)
    with _board() as board:
        board.load_robot(ROBOT)
        sent = board.statistics.requests
        with pytest.raises(ValueError, match=r"q must have shape \(6,\) or \(K, 6\).*\(3, 5\)"):
            board.rnea(q[:, :5], qd, qdd)
        with pytest.raises(ValueError, match="do not broadcast"):
            board.rnea(q, qd[:2], qdd)
        with pytest.raises(ValueError, match=r"f_ext must have shape \(6, 6\)"):
            board.rnea(q, qd, qdd, f_ext=np.zeros((6, 3)))
        with pytest.raises(ValueError, match="q must have shape"):
            board.rnea(1.0, qd[0], qdd[0])
        big = qd.copy()
        big[2, 4] = 40_000.0
        with pytest.raises(FixedPointRangeError,
                           match=r"state 2, joint 5: qd = 40000.0 rad/s does not fit the "
                                 r"board's Q5\.26 .*\(register qd\)"):
            board.rnea(q, big, qdd)
        nan = qdd.copy()
        nan[1, 0] = np.nan
        with pytest.raises(FixedPointRangeError, match="state 1, joint 1: qdd = nan"):
            board.rnea(q, qd, nan)
        assert board.statistics.requests == sent


def test_an_unknown_port_raises_a_connection_error():
    with pytest.raises(BoardConnectionError, match="cannot open the serial port "
                                                   "'/dev/linkdyn-no-such-port'"):
        Board.open("/dev/linkdyn-no-such-port")
    with pytest.raises(BoardConnectionError, match="cannot open"):
        Board.open("nosuchscheme://x")


def test_board_parameters_are_checked():
    with pytest.raises(ValueError, match="Timeout must be a positive number"):
        Board(ReferenceSerial(), timeout=0)
    with pytest.raises(ValueError, match="Retries must be a non-negative integer"):
        Board(ReferenceSerial(), retries=-1)


def test_rnea_of_an_empty_batch_says_there_is_no_state():
    with _board() as board:
        n = board.info().nodes
        empty = np.zeros((0, n))
        with pytest.raises(ValueError, match="hold no state"):
            board.rnea(empty, empty, empty)
