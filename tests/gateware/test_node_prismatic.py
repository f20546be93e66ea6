"""Prismatic nodes in gateware equal the golden model word for word (Amaranth simulator).

One :class:`~linkdyn.gateware.LinkDynNode` runs the links of a chain with prismatic joints in
turn, revolute and prismatic alike: only its constant words change (``revolute`` /
``prismatic``), the node is not rebuilt. Every word it sends, its overflow flag and its cycle
counts must be :func:`linkdyn.model.golden.rnea_fixed`'s (random states, the travel limits, and
a travel beyond the Q1.30 ``r`` that saturates). A tree of nodes (``LinkDynChain`` with
``parents``) with prismatic joints, TIAGo-like (a prismatic torso carrying an arm and a head),
equals the golden tree."""

from dataclasses import replace

import numpy as np
import pytest

from linkdyn.gateware import LinkDynNode
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.model import Link, Robot, load_robot
from linkdyn.model.microprogram import NODE_FORMATS
from linkdyn.model.golden import encode_base_motion, encode_robot, microprogram, rnea_fixed
from linkdyn.model.golden_tree import GoldenTree, node_tree
from linkdyn.model.robot import JointLimits
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.node_testbench import NodeState, output_names, simulate_node
from linkdyn.sim.tree_cases import tree_states
from linkdyn.sim.tree_testbench import golden_updates, simulate_tree, tree_inputs

import support

PROGRAM = microprogram()
REGISTERS = PROGRAM.registers
FORWARD_CYCLES = sum(PROGRAM.segments[name].cycles for name in ("joint", "forward", "local"))
BACKWARD_CYCLES = PROGRAM.segments["distal"].cycles
STATES = 60 if support.LONG else 12


def _prismatic(link, travel=0.5):
    return replace(link, joint_type="prismatic", limits=JointLimits(q_min=-travel, q_max=travel))


def mixed_chain():
    """A 5-link random chain whose links 1 and 3 are prismatic."""
    base = random_robot(5, 21)
    links = list(base.links)
    links[1], links[3] = _prismatic(links[1]), _prismatic(links[3])
    return replace(base, name="mixed_chain", links=tuple(links))


def _node_states(robot, result, cases):
    """One NodeState per (state, node) of ``cases``, each with its node's constants."""
    regs = result.registers
    constants = encode_robot(robot)
    base = encode_base_motion(robot)
    states = []
    for s, i in cases:
        inputs = {r.name: int(regs[i][r.name][s]) for r in REGISTERS.of_kind("input")}
        forward_in = ({target: base[target] for _, target in REGISTERS.forward_message}
                      if i == 0 else {target: int(regs[i - 1][source][s])
                                      for source, target in REGISTERS.forward_message})
        backward_in = ({target: 0 for _, target in REGISTERS.backward_message}
                       if i == robot.n - 1 else {target: int(regs[i + 1][source][s])
                                                 for source, target in REGISTERS.backward_message})
        states.append(NodeState(inputs, forward_in, backward_in, constants=constants[i]))
    return states


def _check_node(robot, q, qd, qdd, f_ext=None):
    result = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext, keep_registers=True)
    # Alternate the nodes (revolute, prismatic, ...) on one node: only the constants change.
    cases = [(s, i) for s in range(len(q)) for i in range(robot.n)]
    runs = simulate_node(LinkDynNode(NODE_FORMATS), None, _node_states(robot, result, cases),
                         measure_every=7)
    names = output_names(REGISTERS)
    for run, (s, i) in zip(runs, cases):
        want = {name: int(result.registers[i][name][s]) for name in names}
        assert run.words == want, f"{robot.name} node {i + 1} state {s}"
        assert run.overflow == bool(result.overflow[s, i]), f"node {i + 1} state {s}"
        assert (run.forward_cycles, run.backward_cycles) == (FORWARD_CYCLES, BACKWARD_CYCLES)
    return result


def test_one_node_runs_revolute_and_prismatic_links_like_the_golden_model():
    robot = mixed_chain()
    q, qd, qdd = tree_states(robot, STATES, 3)
    rng = np.random.default_rng(3)
    f_ext = rng.uniform(-30, 30, (STATES, robot.n, 6))
    f_ext[::2] = 0.0
    _check_node(robot, q, qd, qdd, f_ext)


def test_prismatic_travel_limits_and_saturation_match_the_golden_model():
    """The travel limits, and d = q + d_offset beyond 2 m (r at q saturates, flag set)."""
    robot = mixed_chain()
    n = robot.n
    low, high = robot.q_limits()
    ones = np.ones(n)
    q = np.array([low, high, np.where(np.arange(n) % 2, 3.5, -3.5), np.zeros(n)])
    qd = np.array([-3 * ones, 3 * ones, ones, np.zeros(n)])
    qdd = np.array([10 * ones, -10 * ones, -ones, np.zeros(n)])
    result = _check_node(robot, q, qd, qdd)
    assert result.overflow[2, [1, 3]].all() and not result.overflow[:2].any()


def tiago_like():
    """A prismatic torso lift (root) carrying a 3-joint arm and a head, the arm on a mount."""
    arm = load_robot("ur5").links[:3]
    torso = Link("torso_lift", d=0.8, alpha=0.0, joint_type="prismatic", mass=15.0,
                 com=(0.0, 0.0, -0.2), inertia=np.diag((0.5, 0.5, 0.2)),
                 limits=JointLimits(q_min=0.0, q_max=0.35))
    links = [torso]
    parents = [-1]
    for k, link in enumerate(arm):
        if k == 0:
            link = replace(link, mount=np.array((0.15, 0.1, 0.0, 0.5)))
        links.append(replace(link, name=f"arm_{link.name}"))
        parents.append(0 if k == 0 else len(links) - 2)
    links.append(Link("head", a=0.05, alpha=-np.pi / 2, mass=2.0, com=(0.0, 0.05, 0.0),
                      inertia=np.diag((0.02, 0.015, 0.01)), mount=np.array((0.0, 0.2, 0.0, 0.0))))
    parents.append(0)
    return Robot("tiago_like", tuple(links), parents=tuple(parents))


@pytest.mark.parametrize("policy", ["sequential"] + (["pipelined"] if support.LONG else []))
def test_a_tree_with_a_prismatic_torso_matches_the_golden_tree_word_for_word(policy):
    robot = tiago_like()
    golden = GoldenTree(robot)
    tree = node_tree(robot)
    assert tree.children[0] == (1, 5) and golden.constants[0]["prismatic"] == 1
    q, qd, qdd = tree_states(robot, 4, 8)
    inputs = tree_inputs(golden, q, qd, qdd)
    chain = LinkDynChain(golden.tree.n, parents=golden.tree.parents, policy=policy)
    records = simulate_tree(chain, golden.constants, golden.base_words, inputs,
                            pipelined=policy == "pipelined")
    expected = golden_updates(golden, inputs)
    assert len(records) == len(expected)
    for k, (record, (tau, overflow)) in enumerate(zip(records, expected)):
        assert record.tau == tau, k
        assert record.overflow == overflow, k
