"""Board.info() on a distributed chain (boards, link state and counters), the clear error for
a board behind a cut link, and the chain resuming after the restore: the host against the
reference engine on DistributedChainModel (the golden model's words), fast."""

import numpy as np
import pytest

from linkdyn.host import Board, BoardDeviceError, IncompatibleBoardError, LinkDownError
from linkdyn.model import load_robot, rnea_fixed
from linkdyn.model import protocol as P
from linkdyn.sim.distributed_model import DistributedChainModel

from support.host import ReferenceSerial

ROBOT = load_robot("ur5")


def _distributed_port(n=6):
    port = ReferenceSerial(n)
    port.spec = P.ProtocolSpec(n, clock_hz=12_000_000, baudrate=3_000_000, boards=n)
    port.target = DistributedChainModel(port.spec)
    port.engine = P.ReferenceEngine(port.spec, port.target)
    return port


def _states(count, seed):
    rng = np.random.default_rng(seed)
    low, high = ROBOT.q_limits()
    return (rng.uniform(low, high, (count, 6)), rng.uniform(-2, 2, (count, 6)),
            rng.uniform(-5, 5, (count, 6)))


def _golden(q, qd, qdd):
    return np.array([rnea_fixed(ROBOT, *s).tau_words for s in zip(q, qd, qdd)])


def test_info_reports_boards_and_links():
    port = _distributed_port()
    with Board(port, timeout=0.2, settle=0.01) as board:
        info = board.info()
        assert info.boards == 6 and info.spec.distributed
        links = info.links
        assert links.boards == 6 and links.hops_down == () and links.reachable == 6
        # board 0 downstream, boards 1 .. 4 both ports, board 5 upstream
        assert [(s.board, s.port) for s in links.ports] == \
            [(0, "downstream")] + [(k, p) for k in range(1, 5)
                                   for p in ("upstream", "downstream")] + [(5, "upstream")]
        for state in links.ports:
            assert state.up and state.board_index == state.board
            assert state.neighbour_index == state.board + (1 if state.port == "downstream"
                                                           else -1)
        assert "distributed over 6 boards" in str(info) and "6 boards, links down: none" in str(links)
    single = ReferenceSerial(6)
    with Board(single, timeout=0.2, settle=0.01) as board:
        assert board.info().boards == 1 and board.info().links is None
        with pytest.raises(IncompatibleBoardError, match="not a distributed chain"):
            board.links()


def test_cut_gives_a_clear_error_and_restore_resumes():
    port = _distributed_port()
    q, qd, qdd = _states(4, seed=16)
    want = _golden(q, qd, qdd)
    with Board(port, timeout=0.2, settle=0.01) as board:
        board.load_robot(ROBOT, verify=False)
        np.testing.assert_array_equal(board.rnea(q[:2], qd[:2], qdd[:2]).tau_words, want[:2])
        port.target.cut(3)
        with pytest.raises(LinkDownError) as caught:
            board.rnea(q[2], qd[2], qdd[2])
        error = caught.value
        assert isinstance(error, BoardDeviceError) and error.code is P.ErrorCode.BUS_ERROR
        assert error.hops == (3,) and error.boards == (4, 5)
        assert "link 3 (board 3 to board 4) is down: boards 4 .. 5 (nodes 4, 5)" in str(error)
        with pytest.raises(LinkDownError, match="board 4 .. 5|boards 4 .. 5"):
            board.read(5, 0)
        links = board.links()
        assert links.hops_down == (3,) and links.reachable == 4
        assert links.port(3, "downstream").up is False
        assert links.port(3, "downstream").link_drops == 1
        assert links.port(4, "upstream") is None          # behind the cut
        assert board.read(2, 0) == [port.target.memory[2][0]]   # the boards before it answer
        port.target.restore(3)
        np.testing.assert_array_equal(board.rnea(q[2:], qd[2:], qdd[2:]).tau_words, want[2:])
        assert board.links().hops_down == ()


def test_update_waiting_behind_a_cut_is_busy_and_named():
    port = _distributed_port(3)
    with Board(port, timeout=0.2, settle=0.01, retries=1) as board:
        board.info()
        port.target.cut(0)
        # the start is taken; the update waits behind the cut
        board.write(P.CONTROL_NODE, P.control_register("CONTROL").address, [P.CONTROL_START])
        assert board.status().busy
        with pytest.raises(LinkDownError) as caught:
            board.clear()
        assert caught.value.code is P.ErrorCode.BUSY and caught.value.boards == (1, 2)
        port.target.restore(0)
        assert board.status().done
