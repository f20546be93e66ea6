"""The host on a tree of nodes (docs/trees.md), on the software board: INFO reports the board's
topology, ``Board.load_robot`` loads a tree robot node by node (mount nodes included) and
refuses a robot whose topology differs, ``Board.rnea`` takes the robot's joints and returns its
links' torques, word for word those of :class:`linkdyn.model.golden_tree.GoldenTree`.

The software board is the protocol's reference engine on the chain model wired as the tree
(:class:`linkdyn.sim.chain_model.ChainModel` with the spec's parents); the real simulated board
is tests/host/test_tree_board.py.
"""

from dataclasses import replace

import numpy as np
import pytest

from linkdyn.host.board import Board, CertificateWarning, IncompatibleBoardError
from linkdyn.model import load_robot
from linkdyn.model.golden_tree import GoldenTree, node_tree
from linkdyn.sim.tree_cases import baxter_revolute, random_tree, tree_states, two_arm_tree

from support.host import ReferenceSerial

pytestmark = pytest.mark.filterwarnings("ignore::linkdyn.host.board.CertificateWarning")


def _tree_board(robot):
    tree = node_tree(robot)
    return Board(ReferenceSerial(tree.n, parents=tree.parents), timeout=0.2, settle=0.001)


def _golden(golden, q, qd, qdd, f_ext=None):
    results = [golden.step(q[k], qd[k], qdd[k], None if f_ext is None else f_ext[k])
               for k in range(len(q))]
    return (np.array([r.tau_words for r in results]), np.array([r.overflow for r in results]),
            np.array([r.node_tau_words for r in results]))


def _robots():
    robots = [two_arm_tree(), two_arm_tree(head=True), random_tree(11, 3, max_nodes=16)]
    try:
        robots.append(baxter_revolute())
        # Prismatic nodes through the host: TIAGo's torso (a chain), Baxter whole (its four
        # prismatic fingers on mount nodes).
        import warnings
        from linkdyn.model.reference import example_robot_data_dir
        root = example_robot_data_dir()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            robots.append(replace(load_robot(str(root / "baxter_description/urdf/baxter.urdf")),
                                  name="baxter"))
    except FileNotFoundError:           # example-robot-data is an optional dependency
        pass
    return robots


@pytest.mark.parametrize("robot", _robots(), ids=lambda robot: robot.name)
def test_host_computes_a_tree_robot_as_the_golden_tree(robot):
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, 16, 20261201)
    # URDF velocity limits beyond the qd word (Baxter's head: 10,000 rad/s, a placeholder)
    # are sampled within pi rad/s; the others stay within their limits.
    beyond = [(link.limits.qd_max or 0.0) > golden.registers.qformat("qd").max_value
              for link in robot.links]
    qd = np.where(beyond, np.clip(qd, -np.pi, np.pi), qd)
    with _tree_board(robot) as board:
        info = board.info()
        assert info.parents == golden.tree.parents and not info.is_chain
        with pytest.warns(CertificateWarning, match="covers serial chains"):
            board.load_robot(robot)
        result = board.rnea(q, qd, qdd)
        single = board.rnea(q[3], qd[3], qdd[3])
    tau_words, overflow, node_words = _golden(golden, q, qd, qdd)
    assert result.tau.shape == (16, robot.n)
    assert np.array_equal(result.tau_words, tau_words)
    assert np.array_equal(result.overflow, overflow)
    assert np.array_equal(result.node_tau_words, node_words)
    assert np.array_equal(result.tau, golden.registers.decode("tau", tau_words))
    assert np.array_equal(single.tau_words, tau_words[3])
    assert single.node_tau_words.shape == (golden.tree.n,)


def test_host_passes_external_wrenches_of_the_links_to_their_nodes():
    robot = two_arm_tree()
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, 6, 5)
    rng = np.random.default_rng(5)
    f_ext = rng.uniform(-20, 20, (6, robot.n, 6))
    with _tree_board(robot) as board:
        board.load_robot(robot)
        result = board.rnea(q, qd, qdd, f_ext)
        after = board.rnea(q, qd, qdd)          # the wrench registers zeroed again
    tau_words, overflow, _ = _golden(golden, q, qd, qdd, f_ext)
    assert np.array_equal(result.tau_words, tau_words)
    assert np.array_equal(result.overflow, overflow)
    assert np.array_equal(after.tau_words, _golden(golden, q, qd, qdd)[0])
    assert not np.array_equal(after.tau_words, tau_words)


def test_a_saturating_branch_point_flags_the_links_of_its_node():
    # Heavy arms (three times the masses, within the mass format) accelerated at 450 rad/s^2
    # (within the qdd format): the torso (node 0, the branch point) saturates.
    robot = two_arm_tree()
    heavy = tuple(replace(link, mass=link.mass * 3.0, com=link.com, inertia=link.inertia)
                  if i else link for i, link in enumerate(robot.links))
    robot = replace(robot, links=heavy)
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, 4, 9)
    qdd = np.sign(qdd) * 450.0
    with _tree_board(robot) as board:
        board.load_robot(robot)
        result = board.rnea(q, qd, qdd)
    tau_words, overflow, _ = _golden(golden, q, qd, qdd)
    assert overflow.any() and overflow[:, 0].any()   # saturates, the torso's links too
    assert np.array_equal(result.tau_words, tau_words)
    assert np.array_equal(result.overflow, overflow)
    assert result.saturated


def test_load_robot_refuses_a_robot_whose_topology_differs_from_the_boards():
    robot = two_arm_tree()
    # The left arm (its mount node 7) on the right arm's third link instead of the torso.
    moved = replace(robot, parents=tuple(3 if i == 7 else p
                                         for i, p in enumerate(robot.parents)))
    assert node_tree(moved).n == node_tree(robot).n
    with _tree_board(robot) as board:
        with pytest.raises(ValueError, match=r"node 7 \(the mount node of joint "
                                             r"'left_shoulder_link'\) has parent node 3 in the "
                                             r"robot, node 0 on the board"):
            board.load_robot(moved)
        with pytest.raises(ValueError, match=r"has 6 joints, the board 14 nodes"):
            board.load_robot(load_robot("ur5"))
        with pytest.raises(ValueError, match=r"has 14 joints on 16 nodes"):
            board.load_robot(two_arm_tree(head=True))
        assert board.robot is None              # nothing was loaded
    # A chain robot of the same node count on a tree board: the first branch is named.
    flat = replace(robot, links=tuple(replace(link, mount=np.zeros(4)) for link in robot.links))
    assert node_tree(flat).parents == flat.parents          # 13 nodes, no mount nodes
    chain = replace(flat, parents=tuple(range(-1, flat.n - 1)))
    with Board(ReferenceSerial(flat.n, parents=flat.parents), timeout=0.2) as board:
        with pytest.raises(ValueError, match=r"node 7 \(joint 'left_shoulder_link'\) has "
                                             r"parent node 6 in the robot, node 0 on the board"):
            board.load_robot(chain)


def test_a_tree_robot_is_refused_by_a_chain_board():
    robot = two_arm_tree()
    with Board(ReferenceSerial(14), timeout=0.2) as board:
        assert board.info().is_chain and board.info().parents == tuple(range(-1, 13))
        with pytest.raises(ValueError, match=r"node 7 \(the mount node of joint "
                                             r"'left_shoulder_link'\) has parent node 0 in the "
                                             r"robot, node 6 on the board"):
            board.load_robot(robot)


def test_tree_states_must_have_the_robots_joint_count():
    robot = two_arm_tree()
    with _tree_board(robot) as board:
        board.load_robot(robot)
        with pytest.raises(ValueError, match=r"q must have shape \(13,\) or \(K, 13\) for the "
                                             r"robot 'two_arm_tree' \(13 joints on 14 nodes\)"):
            board.rnea(np.zeros(14), np.zeros(14), np.zeros(14))
        with pytest.raises(ValueError, match=r"f_ext must have shape \(13, 6\)"):
            board.rnea(np.zeros(13), np.zeros(13), np.zeros(13), np.zeros((14, 6)))


def test_info_reports_the_topology_and_refuses_words_that_are_no_tree():
    robot = baxter_revolute() if _has_baxter() else two_arm_tree(torso=False, head=True)
    tree = node_tree(robot)
    port = ReferenceSerial(tree.n, parents=tree.parents)
    with Board(port, timeout=0.2) as board:
        info = board.info()
        assert info.parents == tree.parents
        assert "a tree of nodes (parents -1," in str(info)
    # A board whose topology words name a parent after its child (a damaged build).
    port = ReferenceSerial(4, parents=(-1, 0, 1, 2))
    port.engine._info["PARENTS_0"] = 0x05020100
    with Board(port, timeout=0.2) as board:
        with pytest.raises(IncompatibleBoardError, match=r"topology words .* not a tree of 4 "
                                                         r"nodes: Parent of node 3"):
            board.info()


def _has_baxter():
    try:
        baxter_revolute()
    except FileNotFoundError:
        return False
    return True


def test_a_chain_board_reports_the_chain_and_loads_as_before():
    from support.host import fake_chain_tau_words
    robot = load_robot("ur5")
    port = ReferenceSerial(6)
    with Board(port, timeout=0.2) as board:
        assert board.info().parents == (-1, 0, 1, 2, 3, 4, 5)[:6]
        board.load_robot(robot)
        q = np.full((2, 6), 0.25)
        result = board.rnea(q, q, q)
    assert result.node_tau_words is None and result.node_overflow is None
    from linkdyn.model.golden import encode_base_motion, encode_robot
    rmap = port.spec.registers
    expected, _ = fake_chain_tau_words(port.spec, encode_robot(robot), encode_base_motion(robot),
                                       *(rmap.encode(name, q) for name in ("q", "qd", "qdd")))
    assert np.array_equal(result.tau_words, expected)
