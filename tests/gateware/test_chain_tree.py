"""The tree of nodes (LinkDynChain with ``parents``, eq. 17 of the source paper) equals the
golden tree (linkdyn.model.golden_tree.GoldenTree) word for word in the Amaranth simulator:
every node's ``tau`` and the overflow flags, on a small two-arm tree, random trees and a
saturated merge; and its register bus (docs/trees.md, *The tree in gateware*). Longer runs
(the 14-node two-arm tree, random trees of 16 nodes, more states) with ``LINKDYN_LONG=1``."""

import gc
import warnings

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.model import Link, Robot
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import microprogram
from linkdyn.model.golden_tree import GoldenTree, node_tree
from linkdyn.sim.chain_testbench import BusHost
from linkdyn.sim.tree_cases import random_tree, tree_states, two_arm_tree
from linkdyn.sim.tree_testbench import golden_updates, simulate_tree, tree_inputs

import support

REGISTERS = microprogram().registers
LONG = support.LONG


def _check(robot, states, seed, *, policy="sequential", wrenches=False):
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, states, seed)
    f_ext = None
    if wrenches:
        rng = np.random.default_rng(seed)
        f_ext = np.concatenate([rng.uniform(-50, 50, (states, robot.n, 3)),
                                rng.uniform(-5, 5, (states, robot.n, 3))], axis=-1)
        f_ext[::2] = 0.0
    inputs = tree_inputs(golden, q, qd, qdd, f_ext)
    chain = LinkDynChain(golden.tree.n, parents=golden.tree.parents, policy=policy)
    records = simulate_tree(chain, golden.constants, golden.base_words, inputs,
                            pipelined=policy == "pipelined")
    expected = golden_updates(golden, inputs)
    assert len(records) == len(expected)
    for k, (record, (tau, overflow)) in enumerate(zip(records, expected)):
        assert record.tau == tau, (robot.name, k)
        assert record.overflow == overflow, (robot.name, k)
    return records


@pytest.mark.parametrize("policy", ["sequential", "pipelined"])
def test_small_two_arm_tree_matches_the_golden_tree_word_for_word(policy):
    robot = two_arm_tree(joints=2)
    tree = node_tree(robot)
    assert tree.parents == (-1, 0, 1, 0, 3, 4) and tree.children[0] == (1, 3)
    _check(robot, 8 if LONG else 4, 1, policy=policy, wrenches=True)


RANDOM = [(4, 0), (7, 2)] + ([(links, seed) for links, seed in
                             [(11, 0), (11, 1), (16, 0), (16, 1), (12, 3)]] if LONG else [])


@pytest.mark.parametrize("links,seed", RANDOM)
def test_random_tree_matches_the_golden_tree_word_for_word(links, seed):
    robot = random_tree(links, seed, max_nodes=16)
    tree = node_tree(robot)
    assert tree.n <= 16 and max(len(c) for c in tree.children) >= 2
    _check(robot, 6 if LONG else 3, seed)


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: the 14- and 16-node two-arm trees")
@pytest.mark.parametrize("head,policy", [(False, "sequential"), (False, "pipelined"),
                                         (True, "sequential")])
def test_two_arm_tree_matches_the_golden_tree_word_for_word(head, policy):
    robot = two_arm_tree(head=head)
    assert node_tree(robot).n == (16 if head else 14)
    _check(robot, 6, 2, policy=policy, wrenches=True)


def test_several_roots_each_read_the_base_motion():
    robot = random_tree(7, 2, max_nodes=16)
    assert len(node_tree(robot).roots) == 3
    _check(robot, 2, 4, policy="pipelined")
    baxter_like = two_arm_tree(joints=2, torso=False, head=True)   # arms and head on the base
    assert node_tree(baxter_like).roots == (0, 2, 5)
    _check(baxter_like, 3, 5, wrenches=True)


def _fork():
    leaf = dict(mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.eye(3) * 0.01)
    return Robot("fork", (Link("root", a=0.1), Link("left", a=0.2, **leaf),
                          Link("right", a=0.2, **leaf, mount=(0.0, 0.1, 0.0, 0.0))),
                 parents=(-1, 0, 0))


@pytest.mark.parametrize("policy", ["sequential", "pipelined"])
def test_a_saturated_merge_flags_the_branch_point_and_clamps_as_the_golden_tree(policy):
    robot = _fork()
    # Q15.16 everywhere: the children's 20,000 N fit its f_ext and force words (the node's
    # formats hold 128 N of external force, far below their 4,096 N forces).
    golden = GoldenTree(robot, Q15_16)
    zeros = np.zeros(3)
    wrench = np.zeros((3, 6))
    wrench[1, 0] = wrench[2, 0] = 20000.0   # each child fits the word, their sum does not
    calm = np.zeros((3, 6))
    calm[1, 0] = calm[2, 0] = 2000.0
    inputs = [golden.node_inputs(zeros, zeros, zeros, f) for f in (wrench, calm, wrench)]
    expected = golden_updates(golden, inputs)
    assert [mask for _, mask in expected] == [1, 0, 1]
    chain = LinkDynChain(golden.tree.n, Q15_16, parents=golden.tree.parents, policy=policy)
    records = simulate_tree(chain, golden.constants, golden.base_words, inputs,
                            pipelined=policy == "pipelined")
    assert [(r.tau, r.overflow) for r in records] == [tuple(e) for e in expected]


def test_the_tree_bus_reads_messages_from_the_edges_and_refuses_a_merged_word():
    robot = _fork()
    golden = GoldenTree(robot)
    tree = golden.tree
    assert tree.parents == (-1, 0, 0, 2)
    chain = LinkDynChain(tree.n, parents=tree.parents)
    state = [np.array([0.3, -0.7, 1.1])] * 3
    inputs = golden.node_inputs(*state)
    result = golden.run(inputs, keep_registers=True)
    host = BusHost(chain)
    checked = []

    async def bench(ctx):
        for j, words in enumerate(golden.constants):
            for name, word in words.items():
                assert await host.write(ctx, j, REGISTERS[name].address, word)
        for name, word in golden.base_words.items():
            assert await host.write(ctx, 0, REGISTERS[name].address, word)
            # forward_in of a node that is not a root is its parent's message: not writable
            assert not await host.write(ctx, 1, REGISTERS[name].address, word)
        for j, words in enumerate(inputs):
            for name, word in words.items():
                assert await host.write(ctx, j, REGISTERS[name].address, word)
        assert await host.start(ctx)
        while (await host.control(ctx, "STATUS")) & 1:
            pass
        for j in range(tree.n):
            assert await host.read(ctx, j, REGISTERS["tau"].address) == int(
                result.registers[j]["tau"])
            for receiver in ("omega_in_z", "p_ddot_in_x"):
                assert await host.read(ctx, j, REGISTERS[receiver].address) == int(
                    result.registers[j][receiver]), (j, receiver)
            for receiver in ("f_in_x", "mu_in_y"):
                error, _ = await host.access(ctx, j, REGISTERS[receiver].address)
                if j == 0:
                    assert error, "the merged backward_in of a branch point is not stored"
                else:
                    assert not error
                    word = await host.read(ctx, j, REGISTERS[receiver].address)
                    assert word == int(result.registers[j][receiver]), (j, receiver)
        checked.append(True)

    sim = Simulator(chain)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert checked
    # node 2 (the mount) has one child: its backward_in is node 3's message, read above
    assert int(result.registers[2]["f_in_x"]) == int(result.registers[3]["f_out_x"])


def test_node_0s_base_motion_is_written_into_every_root():
    chain = LinkDynChain(4, parents=(-1, -1, 1, -1))
    host = BusHost(chain)
    answers = []

    async def bench(ctx):
        for k, name in enumerate(("omega_in_x", "p_ddot_in_z")):
            address = REGISTERS[name].address
            # only node 0's forward_in is writable (the protocol's rule)...
            answers.append([await host.write(ctx, j, address, 5) for j in range(4)])
            assert await host.write(ctx, 0, address, -123 - k)
            # ...and it is every root's: roots 1 and 3 read it from their own registers
            answers.append([await host.read(ctx, j, address) for j in (0, 1, 3)])

    sim = Simulator(chain)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert answers == [[True, False, False, False], [-123] * 3,
                       [True, False, False, False], [-124] * 3]


def test_explicit_chain_parents_build_exactly_the_default_chain():
    for n, policy in ((1, "sequential"), (3, "pipelined")):
        default = rtlil.convert(LinkDynChain(n, policy=policy), name="top")
        explicit = rtlil.convert(LinkDynChain(n, policy=policy,
                                              parents=tuple(range(-1, n - 1))), name="top")
        assert explicit == default
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        chain = LinkDynChain(4)
        assert chain.is_chain and chain.parents == (-1, 0, 1, 2) and chain.roots == (0,)
        tree = LinkDynChain(4, parents=[-1, 0, 0, -1])
        assert not tree.is_chain and tree.children == ((1, 2), (), (), ())
        assert tree.roots == (0, 3)
        del chain, tree
        gc.collect()


@pytest.mark.parametrize("parents,error,pattern", [
    ("abc", TypeError, "sequence of 3 integers"),
    ((-1, 0.0, 1), TypeError, "sequence of 3 integers"),
    ((-1, 0), ValueError, r"one entry per node \(3\), not 2"),
    ((0, 0, 1), ValueError, "Parent of node 0 must be -1 .. -1"),
    ((-1, 2, 1), ValueError, "Parent of node 1 must be -1 .. 0"),
    ((-1, 0, -2), ValueError, "Parent of node 2"),
])
def test_bad_parents_are_refused(parents, error, pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(error, match=pattern):
            LinkDynChain(3, parents=parents)
        gc.collect()


def test_verilog_export_of_a_tree(tmp_path, capsys):
    from linkdyn.gateware.chain import main
    out = tmp_path / "tree.v"
    assert main(["--nodes", "3", "--parents=-1,0,0", "--out", str(out)]) == 0
    text = out.read_text()
    assert "module linkdyn_chain(" in text and "node0_merged" in text
    assert "tree -1,0,0" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        for bad in ("-1,0,x", "-1,2,0"):
            with pytest.raises(SystemExit):
                main(["--nodes", "3", f"--parents={bad}", "--out", str(out)])
        gc.collect()
    assert "Parent" in capsys.readouterr().err
