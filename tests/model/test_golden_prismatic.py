"""Prismatic joints in the fixed-point node (docs/trees.md, *Prismatic nodes*): the joint type
is chosen per node by the constant words ``revolute`` / ``prismatic``; a revolute node computes
exactly the words it computed without them; the golden chain and tree on prismatic joints
equal each other word for word and the float model (:func:`linkdyn.model.rnea`, itself checked
against Pinocchio in tests/model/test_tree_rnea.py) within the first-order budget of
support.tree_budget; a vertical slider gives ``m (qdd + g)``; offsets beyond the word are
refused naming the link, travel beyond it saturates with the flag; certify analyses prismatic
joints (tests/model/test_certify_prismatic.py)."""

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest

from linkdyn.model import Friction, Link, Robot, load_robot, rnea
from linkdyn.model.certify import certify
from linkdyn.model.fixedpoint import FixedPointRangeError
from linkdyn.model.golden import GoldenChain, encode_robot, microprogram, rnea_fixed
from linkdyn.model.golden_tree import GoldenTree, node_tree
from linkdyn.model.reference import example_robot_data_dir
from linkdyn.model.robot import JointLimits
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.tree_cases import random_tree, tree_states

import support
from support.tree_budget import scaled_rnea, tree_error_budget

STATES = 200 if support.LONG else 30
RMAP = microprogram().registers
TRAVEL = 0.5  # m: the prismatic joints' limits in the random robots


def with_prismatic(robot, joints, travel=TRAVEL):
    """``robot`` with the links ``joints`` made prismatic (``q`` within ``±travel`` m)."""
    links = list(robot.links)
    for k in joints:
        links[k] = replace(links[k], joint_type="prismatic",
                           limits=JointLimits(q_min=-travel, q_max=travel))
    return replace(robot, name=f"{robot.name}_p{''.join(map(str, joints))}", links=tuple(links))


def prismatic_chain(seed, n=6):
    rng = np.random.default_rng([seed, 77])
    joints = sorted(rng.choice(n, size=2, replace=False).tolist())
    return with_prismatic(random_robot(n, seed), joints)


def _words(registers):
    return [{name: int(word) for name, word in regs.items()} for regs in registers]


def _within_budget(robot, golden, q, qd, qdd):
    results = [golden.step(q[k], qd[k], qdd[k]) for k in range(len(q))]
    assert not any(result.overflow.any() for result in results), robot.name
    fixed = np.array([result.tau for result in results])
    error = np.abs(fixed - rnea(robot, q, qd, qdd))
    budget = tree_error_budget(robot, q, qd, qdd)
    worst = np.unravel_index(np.argmax(error / budget), error.shape)
    assert np.all(error <= budget), (robot.name, worst, error[worst], budget[worst])
    return error, budget


def test_a_revolute_node_selects_its_own_words():
    """Revolute: qd and qdd pass, the prismatic selections are 0, r at q is the constant r."""
    robot = load_robot("ur5")
    q, qd, qdd = tree_states(robot, 20, 3)
    result = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    constants = encode_robot(robot)
    for i, regs in enumerate(result.registers):
        assert constants[i]["revolute"] == 1 and constants[i]["prismatic"] == 0
        assert np.array_equal(regs["qd_revolute"], regs["qd"])
        assert np.array_equal(regs["qdd_revolute"], regs["qdd"])
        for name in ("q_prismatic", "qd2_prismatic", "qdd_prismatic"):
            assert not regs[name].any()
        assert np.all(regs["r_q_y"] == constants[i]["r_y"])
        assert np.all(regs["r_q_z"] == constants[i]["r_z"])
        assert np.array_equal(regs["tau"], regs["mu_out_z"] + regs["tau_friction"])


def test_a_prismatic_node_keeps_theta_and_moves_r():
    robot = prismatic_chain(4)
    k = next(i for i, link in enumerate(robot.links) if link.joint_type == "prismatic")
    link = robot.links[k]
    q, qd, qdd = tree_states(robot, 20, 5)
    result = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    regs, words = result.registers[k], encode_robot(robot)[k]
    assert words["revolute"] == 0 and words["prismatic"] == 1 and words["rate"] == 0
    assert np.all(regs["phase"] == words["theta_offset"])          # theta is the offset
    assert not regs["qd_revolute"].any() and not regs["qdd_revolute"].any()
    assert np.array_equal(regs["qd2_prismatic"], 2 * regs["qd"])
    assert np.array_equal(regs["qdd_prismatic"], regs["qdd"])
    d = (microprogram().registers.decode("q", regs["q"]) + link.d)   # d = q + d_offset
    for c, trig in (("y", math.sin(link.alpha)), ("z", math.cos(link.alpha))):
        assert np.max(np.abs(regs[f"r_q_{c}"] * 2.0 ** -30 - d * trig)) < 2e-9
    assert np.array_equal(regs["tau"], regs["f_out_z"] + regs["tau_friction"])


@pytest.mark.parametrize("seed", [1, 4, 9])
def test_golden_chain_and_tree_equal_rnea_fixed_on_prismatic_chains(seed):
    robot = prismatic_chain(seed)
    q, qd, qdd = tree_states(robot, STATES, seed)
    rng = np.random.default_rng(seed)
    f_ext = rng.uniform(-20, 20, (STATES, robot.n, 6))
    batch = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext, keep_registers=True)
    chain, tree = GoldenChain(robot), GoldenTree(robot)
    assert tree.constants == chain.constants
    for s in range(STATES):
        a = chain.step(q[s], qd[s], qdd[s], f_ext[s], keep_registers=True)
        b = tree.step(q[s], qd[s], qdd[s], f_ext[s], keep_registers=True)
        assert a.tau_words.tolist() == batch.tau_words[s].tolist()
        assert b.tau_words.tolist() == a.tau_words.tolist()
        assert a.overflow.tolist() == batch.overflow[s].tolist() == b.overflow.tolist()
        assert _words(a.registers) == _words(b.registers) == [
            {name: int(word[s]) for name, word in regs.items()} for regs in batch.registers]


@pytest.mark.parametrize("seed", [1, 4, 9, 12])
def test_prismatic_chains_match_the_float_rnea_within_the_budget(seed):
    robot = prismatic_chain(seed)
    if seed == 12:
        robot = replace(robot, links=tuple(replace(link, friction=Friction(2.0, 1.0, 0.1, 50.0))
                                           for link in robot.links))
    q, qd, qdd = tree_states(robot, STATES, seed)
    error, budget = _within_budget(robot, GoldenChain(robot), q, qd, qdd)
    prismatic = [i for i, link in enumerate(robot.links) if link.joint_type == "prismatic"]
    assert error[:, prismatic].max() > 0  # the prismatic rows are computed, not skipped


@pytest.mark.parametrize("links,seed", [(9, 0), (14, 3)])
def test_random_trees_with_prismatic_joints_match_the_float_rnea_within_the_budget(links, seed):
    base = random_tree(links, seed)
    rng = np.random.default_rng([seed, 99])
    robot = with_prismatic(base, sorted(rng.choice(links, size=links // 3, replace=False)))
    assert any(link.has_mount for link in robot.links) and not robot.is_chain
    q, qd, qdd = tree_states(robot, STATES, seed)
    _within_budget(robot, GoldenTree(robot), q, qd, qdd)


def _urdf(path):
    try:
        root = example_robot_data_dir()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has a <mimic> tag")
        warnings.filterwarnings("ignore", message=".*ill-conditioned")
        return load_robot(str(root / path))


def test_tiago_with_its_prismatic_torso_matches_the_float_rnea_within_the_budget():
    robot = _urdf("tiago_description/robots/tiago.urdf")
    torso = robot.joint_names.index("torso_lift_joint")
    assert robot.links[torso].joint_type == "prismatic"
    golden = GoldenTree(robot)
    assert golden.constants[golden.tree.link_node[torso]]["prismatic"] == 1
    q, qd, qdd = tree_states(robot, STATES // 2, 6)  # 48 joints: the budget's differences
    qd = np.clip(qd, -2 * np.pi, 2 * np.pi)
    error, budget = _within_budget(robot, golden, q, qd, qdd)
    assert error[:, torso].max() < 0.05  # N
    # At rest the torso lift holds the upper body (head, arm, hand): its weight, N.
    rest = np.zeros(robot.n)
    weight = rnea(robot, rest, rest, rest)[torso]
    assert weight > 100.0
    assert golden.step(rest, rest, rest).tau[torso] == pytest.approx(weight, abs=0.01)


def test_baxter_with_its_prismatic_fingers_matches_the_float_rnea_within_the_budget():
    robot = _urdf("baxter_description/urdf/baxter.urdf")
    assert sum(link.joint_type == "prismatic" for link in robot.links) == 4
    q, qd, qdd = tree_states(robot, STATES, 7)
    qd = np.clip(qd, -2 * np.pi, 2 * np.pi)  # the URDF gives the head 10,000 rad/s
    _within_budget(robot, GoldenTree(robot), q, qd, qdd)


def test_a_vertical_slider_gives_m_times_qdd_plus_g():
    """One prismatic link along the vertical axis: the force is m (qdd + g), N."""
    mass = 3.5
    robot = Robot("slider", (Link("lift", d=0.2, joint_type="prismatic", mass=mass,
                                  com=(0.01, -0.02, 0.05), inertia=np.diag((0.1, 0.1, 0.05))),))
    rng = np.random.default_rng(2)
    q = rng.uniform(-0.5, 0.5, (50, 1))
    qd = rng.uniform(-1, 1, (50, 1))
    qdd = rng.uniform(-10, 10, (50, 1))
    result = rnea_fixed(robot, q, qd, qdd)
    expected = mass * (qdd - robot.gravity[2])
    # q, qd, qdd rounded to the word (m: 2^-17 each), every result rounded once: a few LSB of m.
    assert np.max(np.abs(result.tau - expected)) < 1e-4
    assert not result.overflow.any()


def test_a_prismatic_offset_beyond_the_word_is_refused_naming_the_link():
    robot = Robot("long", (Link("base"), Link("lift", d=2.5, joint_type="prismatic",
                                              mass=1.0)))
    with pytest.raises(FixedPointRangeError, match=r"node 2 \('lift'\) constant r_z = 2\.5"):
        GoldenChain(robot)
    with pytest.raises(FixedPointRangeError, match=r"node 2 \('lift'\) constant r_z"):
        GoldenTree(robot)


def test_prismatic_travel_beyond_the_word_saturates_with_the_flag():
    """r at q is a Q1.30 word (|r| < 2 m): d = q + d_offset at 2 m or more clamps and flags
    that node; the golden chain, the tree and rnea_fixed agree on the clamped words."""
    robot = Robot("lift", (Link("base", mass=1.0), Link("lift", d=1.5, joint_type="prismatic",
                                                        mass=2.0, com=(0, 0, 0.1)),
                           Link("wrist", a=0.1, mass=1.0)))
    q = np.array([[0.3, 0.4, 0.2], [0.3, 0.6, 0.2], [0.0, -3.6, 0.0]])
    zero = np.zeros_like(q)
    batch = rnea_fixed(robot, q, zero, zero)
    assert batch.overflow.tolist() == [[False, False, False], [False, True, False],
                                       [False, True, False]]
    chain, tree = GoldenChain(robot), GoldenTree(robot)
    for s in range(3):
        assert chain.step(q[s], zero[s], zero[s]).tau_words.tolist() == \
            batch.tau_words[s].tolist() == tree.step(q[s], zero[s], zero[s]).tau_words.tolist()
    # Within the word the force is the weight carried: the lift and the wrist, m g (N).
    assert batch.tau[0, 1] == pytest.approx(-3.0 * robot.gravity[2], abs=1e-4)


def test_certify_analyses_prismatic_joints_with_the_joint_type_words():
    """certify runs the node's words: a prismatic chain's box carries its joint types (its
    soundness against the golden model: tests/model/test_certify_prismatic.py)."""
    robot = prismatic_chain(4)
    certificate = certify(robot, qd_max=1.0, qdd_max=5.0)
    assert certificate.box["joint_types"] == [link.joint_type for link in robot.links]
    assert len(certificate.bound_nm) == robot.n


def test_the_node_tree_of_a_prismatic_tree_keeps_every_joint_type():
    robot = with_prismatic(random_tree(8, 2), [1, 5])
    tree = node_tree(robot)
    constants = GoldenTree(robot).constants
    for i, link in enumerate(robot.links):
        words = constants[tree.link_node[i]]
        assert words["prismatic"] == (link.joint_type == "prismatic")
        assert words["revolute"] == 1 - words["prismatic"]
    for j in tree.mount_node:
        if j >= 0:
            assert constants[j]["revolute"] == 1  # a mount node is a revolute node at rest


def test_the_budgets_own_recursion_equals_the_float_rnea():
    """support.tree_budget.scaled_rnea (the budget's reference for the table's scaling error)
    is rnea without friction at scale 0, on a tree with mounts and prismatic joints."""
    robot = with_prismatic(random_tree(10, 4), [2, 3, 7])
    robot = replace(robot, links=tuple(replace(link, friction=Friction())
                                       for link in robot.links))
    q, qd, qdd = tree_states(robot, 20, 2)
    nodes = node_tree(robot).n
    exact = rnea(robot, q, qd, qdd)
    assert np.max(np.abs(scaled_rnea(robot, q, qd, qdd, np.zeros(nodes)) - exact)) \
        < 1e-12 * np.abs(exact).max()
    scale = np.zeros(nodes)
    scale[0] = 1e-3  # the root's rotation scaled: every joint below it feels it
    assert np.abs(scaled_rnea(robot, q, qd, qdd, scale) - exact).max() > 1e-6
