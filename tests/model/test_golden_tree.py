"""The golden model of a tree of nodes (linkdyn.model.golden_tree, eq. 17 of the source paper):
on a chain word for word the chain's golden model; on trees within the first-order error budget
of the float model (support.tree_budget); the merge exact and saturated once."""

from dataclasses import replace

import numpy as np
import pytest

from linkdyn.model import Link, Robot, load_robot, rnea
from linkdyn.model.fixedpoint import Q15_16, QFormat, FixedPointRangeError
from linkdyn.model.microprogram import microprogram
from linkdyn.model.golden import GoldenChain, rnea_fixed
from linkdyn.model.golden_tree import GoldenTree, encode_tree, merge_backward, node_tree
from linkdyn.model.library import truncate
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.tree_cases import baxter_revolute, random_tree, tree_states, two_arm_tree

import support
from support.tree_budget import tree_error_budget

STATES = 300 if support.LONG else 40
MAX_WORD, MIN_WORD = (1 << 31) - 1, -(1 << 31)


def _words(registers):
    return [{name: int(word) for name, word in regs.items()} for regs in registers]


def _fixed(golden, q, qd, qdd, f_ext=None):
    return np.array([golden.step(q[k], qd[k], qdd[k],
                                 None if f_ext is None else f_ext[k]).tau
                     for k in range(len(q))])


@pytest.mark.parametrize("robot", [load_robot("ur5"), load_robot("puma560"),
                                   random_robot(1, 3), random_robot(7, 4)],
                         ids=["ur5", "puma560", "random1", "random7"])
def test_chain_gives_the_chain_golden_words_register_for_register(robot):
    chain, tree = GoldenChain(robot), GoldenTree(robot)
    assert tree.tree.is_chain and tree.tree.n == robot.n
    assert tree.constants == chain.constants
    q, qd, qdd = tree_states(robot, STATES, 11)
    rng = np.random.default_rng(5)
    for k in range(STATES):
        f_ext = rng.uniform(-50, 50, (robot.n, 6)) if k % 2 else None
        a = chain.step(q[k], qd[k], qdd[k], f_ext, keep_registers=True)
        b = tree.step(q[k], qd[k], qdd[k], f_ext, keep_registers=True)
        assert b.tau_words.tolist() == a.tau_words.tolist()
        assert b.node_tau_words.tolist() == a.tau_words.tolist()
        assert b.overflow.tolist() == a.overflow.tolist()
        assert np.array_equal(b.base_wrench, a.base_wrench)
        assert _words(b.registers) == _words(a.registers)


def test_chain_saturation_gives_the_chain_golden_words_and_flags():
    robot = load_robot("ur5")
    q = np.zeros((3, 6))
    qdd = np.zeros((3, 6))
    qdd[0, 1], qdd[1, 1], qdd[2, 0] = 30000.0, -30000.0, 5000.0
    # (Q15.16 everywhere: these accelerations fit its qdd word and saturate its tau)
    batch = rnea_fixed(robot, q, q, qdd, fmt=Q15_16)
    tree = GoldenTree(robot, Q15_16)
    for k in range(3):
        result = tree.step(q[k], q[k], qdd[k])
        assert result.tau_words.tolist() == batch.tau_words[k].tolist()
        assert result.overflow.tolist() == batch.overflow[k].tolist()
    assert batch.overflow.any()


def test_two_arm_tree_is_laid_out_on_14_nodes_with_one_mount_node():
    robot = two_arm_tree()
    tree = node_tree(robot)
    assert robot.n == 13 and tree.n == 14
    assert tree.parents == (-1, 0, 1, 2, 3, 4, 5, 0, 7, 8, 9, 10, 11, 12)
    assert tree.link_node == (0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13)
    assert tree.mount_node == (-1,) * 7 + (7,) + (-1,) * 5
    assert tree.children[0] == (1, 7) and tree.roots == (0,)
    mount = tree.links[7]
    assert mount.mass == 0 and mount.a == 0.5 and mount.offset == pytest.approx(np.pi)
    constants = encode_tree(robot)
    assert constants[7]["m"] == 0 and constants[7]["I_zz"] == 0


def _check_within_budget(robot, states, seed, f_ext=None, qd_max=None):
    q, qd, qdd = tree_states(robot, states, seed)
    if qd_max is not None:
        qd = np.clip(qd, -qd_max, qd_max)
    golden = GoldenTree(robot)
    error = np.abs(_fixed(golden, q, qd, qdd, f_ext)
                   - rnea(robot, q, qd, qdd, f_ext=f_ext))
    budget = tree_error_budget(robot, q, qd, qdd)
    if f_ext is not None:
        # The wrench's own rounding (half an LSB of its format per component) reaches every
        # ancestor with a lever of at most the robot's reach; the budget's path term covers it
        # with one more node.
        half = 2.0 ** -(microprogram().registers["f_ext_x"].format.fraction_bits + 1)
        budget = budget + 6 * half * 4
    worst = np.unravel_index(np.argmax(error / budget), error.shape)
    assert np.all(error <= budget), (robot.name, worst, error[worst], budget[worst])
    return error.max(), (error / budget).max()


@pytest.mark.parametrize("head", [False, True])
def test_two_arm_tree_matches_float_rnea_within_the_budget(head):
    _check_within_budget(two_arm_tree(head=head), STATES, 3)


def test_two_arm_tree_with_external_wrenches_matches_float_rnea_within_the_budget():
    robot = two_arm_tree()
    rng = np.random.default_rng(8)
    f_ext = np.concatenate([rng.uniform(-50, 50, (STATES, robot.n, 3)),
                            rng.uniform(-5, 5, (STATES, robot.n, 3))], axis=-1)
    _check_within_budget(robot, STATES, 4, f_ext)


def test_baxter_without_fingers_matches_float_rnea_within_the_budget():
    try:
        robot = baxter_revolute()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    tree = node_tree(robot)
    assert robot.n == 15 and tree.n == 17 and len(tree.roots) == 3
    # The URDF's head limit of 10,000 rad/s is a placeholder beyond the qd word (Q5.26, ±32
    # rad/s): the states use pi rad/s there (the arms' limits, 1.5 and 4 rad/s, stay).
    _check_within_budget(robot, STATES, 5, qd_max=np.minimum(
        [link.limits.qd_max for link in robot.links], np.pi))


# (links, seed): nodes <= 16 (mount nodes included); seeds chosen so that the normal run has
# branch points of 3 and more children, several roots and mounts.
RANDOM = [(2, 0), (4, 0), (7, 1), (11, 0), (16, 0)]
if support.LONG:
    RANDOM += [(links, seed) for links in (3, 7, 11, 12, 16) for seed in range(2, 12)]


@pytest.mark.parametrize("links,seed", RANDOM)
def test_random_tree_up_to_16_nodes_matches_float_rnea_within_the_budget(links, seed):
    robot = random_tree(links, seed, max_nodes=16)
    assert node_tree(robot).n <= 16
    _check_within_budget(robot, STATES // 2, seed)


def test_random_trees_cover_branches_mounts_and_several_roots():
    trees = [node_tree(random_tree(links, seed, max_nodes=16))
             for links, seed in RANDOM if links >= 7]
    assert any(max(len(c) for c in t.children) >= 3 for t in trees)
    assert any(len(t.roots) >= 2 for t in trees)
    assert sum(any(m >= 0 for m in t.mount_node) for t in trees) >= 2


def test_a_massless_branch_leaves_the_other_path_bit_identical_to_its_chain():
    """An independent check of broadcast and merge: with the left arm massless, the merge adds
    exact zeros, so the torso and the right arm give the words of the cut chain."""
    robot = two_arm_tree()
    massless = [replace(link, mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)))
                if link.name.startswith("left") else link for link in robot.links]
    robot = replace(robot, links=tuple(massless))
    path = truncate(robot, "right_" + load_robot("ur5").links[-1].name)
    chain, tree = GoldenChain(path), GoldenTree(robot)
    q, qd, qdd = tree_states(robot, STATES, 6)
    for k in range(STATES):
        a = chain.step(q[k, :7], qd[k, :7], qdd[k, :7])
        b = tree.step(q[k], qd[k], qdd[k])
        assert b.tau_words[:7].tolist() == a.tau_words.tolist()


def test_merge_is_the_exact_sum_saturated_once():
    big = (1 << 30) + 5
    words, flag = merge_backward([[big, -big, 1, 2, 3, MIN_WORD],
                                  [big, -big, -1, 5, 7, 0],
                                  [-big, big, 0, 0, 0, 0]])
    # exact: big + big - big = big fits although the partial sum big + big does not
    assert words == [big, -big, 0, 7, 10, MIN_WORD] and not flag
    words, flag = merge_backward([[big] * 6, [big] * 6])
    assert words == [MAX_WORD] * 6 and flag
    words, flag = merge_backward([[-big] * 6, [-big] * 6])
    assert words == [MIN_WORD] * 6 and flag
    assert merge_backward([]) == ([0] * 6, False)
    assert merge_backward([[1, 2, 3, 4, 5, 6]]) == ([1, 2, 3, 4, 5, 6], False)


def test_a_saturated_merge_flags_the_parent_only_and_clamps_its_wrench():
    # Two leaves on one root, each pulled by 20,000 N: each fits Q15.16, their sum does not.
    leaf = dict(mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.eye(3) * 0.01)
    robot = Robot("fork", (Link("root", a=0.1), Link("left", a=0.2, **leaf),
                           Link("right", a=0.2, **leaf, mount=(0.0, 0.1, 0.0, 0.0))),
                  parents=(-1, 0, 0))
    f_ext = np.zeros((3, 6))
    f_ext[1, 0] = f_ext[2, 0] = 20000.0
    golden = GoldenTree(robot, Q15_16)    # (Q15.16 everywhere: 20,000 N fit its f_ext word)
    zeros = np.zeros(3)
    result = golden.step(zeros, zeros, zeros, f_ext, keep_registers=True)
    root = result.registers[0]
    assert result.node_overflow.tolist() == [True, False, False, False]
    assert result.overflow.tolist() == [True, False, False]
    assert int(root["f_in_x"]) == MAX_WORD
    # below saturation the same fork is within the budget of the float model
    f_ext[1, 0] = f_ext[2, 0] = 2000.0
    result = golden.step(zeros, zeros, zeros, f_ext)
    assert not result.overflow.any()
    assert np.allclose(result.tau, rnea(robot, zeros, zeros, zeros, f_ext=f_ext), atol=1e-3)


def test_base_wrench_is_the_sum_over_the_roots_and_the_weight_at_rest():
    try:
        robot = baxter_revolute()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    zeros = np.zeros(robot.n)
    result = GoldenTree(robot).step(zeros, zeros, zeros)
    weight = sum(link.mass for link in robot.links) * np.linalg.norm(robot.gravity)
    assert np.linalg.norm(result.base_wrench[:3]) == pytest.approx(weight, rel=1e-5)


def test_another_word_format_runs_the_tree_within_its_budget():
    fmt = QFormat(11, 20)
    robot = two_arm_tree()
    golden = GoldenTree(robot, fmt)
    q, qd, qdd = tree_states(robot, 10, 9)
    error = np.abs(_fixed(golden, q, qd, qdd) - rnea(robot, q, qd, qdd))
    assert np.all(error <= tree_error_budget(robot, q, qd, qdd, fraction_bits=20))
    # four more fractional bits than Q15.16 shrink every source but the sine table's (the same)
    coarse = np.abs(_fixed(GoldenTree(robot, Q15_16), q, qd, qdd) - rnea(robot, q, qd, qdd))
    assert error.max() < coarse.max()


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="Robot"):
        node_tree("ur5")
    with pytest.raises(TypeError, match="QFormat"):
        GoldenTree(two_arm_tree(), fmt="Q15.16")
    golden = GoldenTree(two_arm_tree())
    with pytest.raises(ValueError, match=r"q must have shape \(13,\)"):
        golden.step(np.zeros(14), np.zeros(13), np.zeros(13))
    with pytest.raises(ValueError, match=r"f_ext must have shape \(13, 6\)"):
        golden.step(np.zeros(13), np.zeros(13), np.zeros(13), np.zeros((14, 6)))
    qd = np.zeros(13)
    qd[8] = 1e6
    with pytest.raises(FixedPointRangeError, match="node 10 qd"):
        golden.step(np.zeros(13), qd, np.zeros(13))
