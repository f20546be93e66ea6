"""Kinematic trees and prismatic joints in the float model, checked against Pinocchio.

Whole trees from example-robot-data -- Baxter (head, both arms, the four prismatic gripper
fingers), Talos (a whole humanoid, its floating base fixed: legs, torso, arms, head, grippers) and
TIAGo (prismatic torso lift, head, arm, the five-finger hand) -- and random trees of up to 30
revolute, continuous and prismatic joints written as URDF text here, loaded into both linkdyn and
Pinocchio. Random states, fixed seeds, tolerance 1e-9 relative:

* ``rnea`` against ``pin.rnea``;
* ``regressor`` against ``pin.computeJointTorqueRegressor`` through the per-body parameter map
  (``Y_pin[:, body j] = Y_ours[:, link j] @ M_j``, see ``test_urdf_pinocchio.py``), and both
  regressors against both inverse dynamics;
* ``rnea == regressor @ parameters`` with friction on every joint (revolute and prismatic);
* ``rnea`` with an external wrench on every link against ``pin.rnea`` with ``fext``;
* ``forward_recursion`` (angular velocity and acceleration of every node) against Pinocchio's;
* random serial chains with prismatic joints (the chain code of the regressor);
* the tree regressor path against the chain path on the same chain (a robot file chain with a
  mount, made a tree by one massless extra root).

Plus the validation of parent lists and the refusal of the fixed-point model and the chain-only
kinematics. ``LINKDYN_LONG=1`` adds more states, more random trees and the larger URDFs.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

import support

pin = pytest.importorskip("pinocchio")

from linkdyn.model import (Friction, Link, Robot, RobotDescriptionError, load_robot,  # noqa: E402
                           regressor, rnea, save_robot)
from linkdyn.model.golden import rnea_fixed  # noqa: E402
from linkdyn.model.kinematics import jacobian, link_frames  # noqa: E402
from linkdyn.model.library import truncate  # noqa: E402
from linkdyn.model.reference import example_robot_data_dir  # noqa: E402
from linkdyn.model.urdf import load_urdf  # noqa: E402

from support.pinocchio import PinocchioReference  # noqa: E402

LONG = support.LONG
TOLERANCE = 1e-9
STATES = 400 if LONG else 60

REAL_TREES = {
    # name: URDF path in example-robot-data
    "baxter": "baxter_description/urdf/baxter.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "tiago": "tiago_description/robots/tiago.urdf",
}
LONG_TREES = {
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
    "tiago_dual": "tiago_description/robots/tiago_dual.urdf",
}


def _robots_dir():
    try:
        return example_robot_data_dir()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


# Baxter's and TIAGo's fingers carry <mimic> tags: independent joints here and in Pinocchio.
# Random oblique axes are now and then nearly parallel with a far common normal: load_urdf warns
# that such DH parameters are ill-conditioned (they still match Pinocchio to 1e-9).
pytestmark = [pytest.mark.filterwarnings("ignore:.*has a <mimic> tag:UserWarning"),
              pytest.mark.filterwarnings("ignore:.*DH parameters are ill-conditioned:UserWarning")]
_load = load_urdf


# ----------------------------------------------------------------------------------------------
# Pinocchio side
# ----------------------------------------------------------------------------------------------

class Reference(PinocchioReference):
    """Pinocchio's model of a URDF, joints matched to our nodes by ``Robot.joint_names``."""

    def __init__(self, path, robot):
        model = pin.buildModelFromUrdf(str(path))
        super().__init__(model, [model.getJointId(name) for name in robot.joint_names], robot)

    def joint_in_dh(self):
        """Per node: pose of the Pinocchio joint frame in our DH frame of that node (q = 0)."""
        return super().joint_in_dh(link_frames(self.robot, np.zeros(self.robot.n)))


def parameter_map(transform):
    """The 10x10 M with pi_ours = M pi_pin for a body whose joint frame has pose ``transform``
    in our DH frame (Pinocchio orders the inertia Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    rotation, p = transform[:3, :3], transform[:3, 3]
    columns = []
    for pi_pin in np.eye(10):
        m, h = pi_pin[0], pi_pin[1:4]
        ixx, ixy, iyy, ixz, iyz, izz = pi_pin[4:10]
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        h_i = rotation @ h
        inertia_i = (rotation @ inertia @ rotation.T + m * (p @ p * np.eye(3) - np.outer(p, p))
                     + 2 * (p @ h_i) * np.eye(3) - np.outer(h_i, p) - np.outer(p, h_i))
        columns.append([m, *(h_i + m * p), inertia_i[0, 0], inertia_i[0, 1], inertia_i[0, 2],
                        inertia_i[1, 1], inertia_i[1, 2], inertia_i[2, 2]])
    return np.array(columns).T


def random_states(robot, rng, count):
    low, high = robot.q_limits()
    low, high = np.maximum(low, -math.pi), np.minimum(high, math.pi)
    q = rng.uniform(low, high, (count, robot.n))
    qd = rng.uniform(-2.0, 2.0, (count, robot.n))
    qdd = rng.uniform(-10.0, 10.0, (count, robot.n))
    return q, qd, qdd


def compare(path, robot, seed, count=STATES):
    """All comparisons of one tree with Pinocchio; return the relative errors."""
    reference = Reference(path, robot)
    robot = replace(robot, gravity=np.array(reference.model.gravity.linear))
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_states(robot, rng, count)
    n = robot.n
    tau = rnea(robot, q, qd, qdd)
    y = regressor(robot, q, qd, qdd)
    tau_pin = np.stack([reference.rnea(*s) for s in zip(q, qd, qdd)])
    y_pin = np.stack([reference.regressor(*s) for s in zip(q, qd, qdd)])
    pi_pin = reference.parameters()
    scale = np.max(np.abs(tau_pin))
    errors = {
        "rnea": np.max(np.abs(tau - tau_pin)) / scale,
        "Y_ours pi_ours": np.max(np.abs(y @ robot.parameters() - tau_pin)) / scale,
        "Y_pin pi_pin": np.max(np.abs(y_pin @ pi_pin - tau)) / scale,
    }
    maps = [parameter_map(t) for t in reference.joint_in_dh()]
    mapped = np.concatenate([y[:, :, 10 * i:10 * i + 10] @ maps[i] for i in range(n)], axis=2)
    errors["Y_ours M == Y_pin"] = np.max(np.abs(mapped - y_pin)) / np.max(np.abs(y_pin))
    ours_from_pin = np.concatenate([maps[i] @ pi_pin[10 * i:10 * i + 10] for i in range(n)])
    errors["M pi_pin == pi_ours"] = (np.max(np.abs(ours_from_pin - robot.parameters()[:10 * n]))
                                     / np.max(np.abs(pi_pin)))
    # Friction on every joint: the regressor's friction columns and rnea's friction agree.
    frictional = replace(robot, links=tuple(
        replace(link, friction=Friction(*rng.uniform(-2.0, 2.0, 3), steepness=50.0))
        for link in robot.links))
    tau_f = rnea(frictional, q, qd, qdd)
    errors["rnea == Y pi (friction)"] = (np.max(np.abs(regressor(frictional, q, qd, qdd)
                                                       @ frictional.parameters() - tau_f))
                                         / np.max(np.abs(tau_f)))
    return errors


def assert_small(errors, tolerance=TOLERANCE):
    bad = {key: value for key, value in errors.items() if not value < tolerance}
    assert not bad, f"relative errors above {tolerance}: {bad} (all: {errors})"


# ----------------------------------------------------------------------------------------------
# Real trees
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(REAL_TREES) + (list(LONG_TREES) if LONG else []))
def test_whole_tree_rnea_and_regressor_match_pinocchio(name):
    path = _robots_dir() / {**REAL_TREES, **LONG_TREES}[name]
    robot = _load(path)
    assert not robot.is_chain
    assert_small(compare(path, robot, seed=sum(map(ord, name))))


@pytest.mark.parametrize("name", ["baxter", "tiago"])
def test_external_wrenches_on_a_tree_match_pinocchio(name):
    """``f_ext`` (the wrench each link exerts on its environment, about the origin of its DH
    frame, in it) against Pinocchio's ``fext`` (the force acting on each joint's body, about the
    joint origin, in the joint frame)."""
    path = _robots_dir() / REAL_TREES[name]
    robot = _load(path)
    reference = Reference(path, robot)
    robot = replace(robot, gravity=np.array(reference.model.gravity.linear))
    rng = np.random.default_rng(11)
    q, qd, qdd = random_states(robot, rng, 20)
    f_ext = rng.uniform(-20.0, 20.0, (20, robot.n, 6))
    tau = rnea(robot, q, qd, qdd, f_ext=f_ext)
    transforms = reference.joint_in_dh()
    model, data = reference.model, reference.data
    worst = 0.0
    for k in range(20):
        forces = [pin.Force.Zero() for _ in range(model.njoints)]
        for i, j in enumerate(reference.joint_ids):
            rotation, p = transforms[i][:3, :3], transforms[i][:3, 3]
            force, moment = -f_ext[k, i, :3], -f_ext[k, i, 3:]
            forces[j] = pin.Force(rotation.T @ force, rotation.T @ (moment - np.cross(p, force)))
        tau_pin = np.asarray(pin.rnea(model, data, reference.configuration(q[k]),
                                      reference.tangent(qd[k]), reference.tangent(qdd[k]),
                                      forces))[reference.idx_v]
        worst = max(worst, np.max(np.abs(tau[k] - tau_pin)) / np.max(np.abs(tau_pin)))
    assert worst < TOLERANCE


@pytest.mark.parametrize("name", ["baxter", "tiago"])
def test_forward_recursion_on_a_tree_matches_pinocchio_velocities(name):
    """``omega_i`` and ``omega_dot_i`` of every node (frame i) are the body's angular velocity and
    acceleration of Pinocchio's joint frame, rotated into our DH frame."""
    from linkdyn.model import forward_recursion
    path = _robots_dir() / REAL_TREES[name]
    robot = _load(path)
    reference = Reference(path, robot)
    rotations = [t[:3, :3] for t in reference.joint_in_dh()]
    rng = np.random.default_rng(13)
    q, qd, qdd = random_states(robot, rng, 10)
    nodes = forward_recursion(robot, q, qd, qdd)
    model, data = reference.model, reference.data
    worst = 0.0
    for k in range(10):
        pin.forwardKinematics(model, data, reference.configuration(q[k]),
                              reference.tangent(qd[k]), reference.tangent(qdd[k]))
        for i, j in enumerate(reference.joint_ids):
            _, omega, omega_dot, _ = nodes[i]
            worst = max(worst,
                        np.max(np.abs(omega[k] - rotations[i] @ data.v[j].angular)),
                        np.max(np.abs(omega_dot[k] - rotations[i] @ data.a[j].angular)))
    assert worst < 1e-9


def test_baxter_tree_has_both_arms_head_and_prismatic_fingers():
    robot = _load(_robots_dir() / REAL_TREES["baxter"])
    names = robot.joint_names
    assert robot.n == 19
    for side in ("left", "right"):
        arm = [names.index(f"{side}_{j}") for j in ("s0", "s1", "e0", "e1", "w0", "w1", "w2")]
        assert robot.parents[arm[0]] == -1
        assert [robot.parents[i] for i in arm[1:]] == arm[:-1]
        fingers = [names.index(f"{side[0]}_gripper_{f}_finger_joint") for f in "lr"]
        assert [robot.parents[i] for i in fingers] == [arm[-1]] * 2
        assert all(robot.links[i].joint_type == "prismatic" for i in fingers)
    assert robot.parents[names.index("head_pan")] == -1


def test_tiago_torso_is_prismatic_and_carries_head_and_arm():
    robot = _load(_robots_dir() / REAL_TREES["tiago"])
    torso = robot.joint_names.index("torso_lift_joint")
    assert robot.links[torso].joint_type == "prismatic"
    carried = {robot.joint_names[i] for i in robot.children[torso]}
    assert carried == {"head_1_joint", "arm_1_joint"}


def test_tip_still_gives_the_chain():
    path = _robots_dir() / REAL_TREES["baxter"]
    chain = _load(path, tip="left_wrist")
    assert chain.is_chain
    assert chain.joint_names == tuple(f"left_{j}" for j in ("s0", "s1", "e0", "e1", "w0", "w1",
                                                            "w2"))
    tree = load_robot(path)
    assert tree.n == 19 and not tree.is_chain


# ----------------------------------------------------------------------------------------------
# Random trees
# ----------------------------------------------------------------------------------------------

def _random_urdf(rng, joints, chain=False):
    """URDF text of a random tree (``chain``: a serial chain): ``joints`` movable joints
    (revolute, continuous, prismatic; axis-aligned or oblique axes, some on or parallel to their
    parent's axis), fixed joints in between, random consistent inertias, some massless links."""
    links = ["base"]
    text = ['<robot name="random">', '<link name="base"/>']
    body = []

    def inertial(rng):
        if rng.random() < 0.1:
            return ""
        mass = rng.uniform(0.1, 3.0)
        com = rng.uniform(-0.2, 0.2, 3)
        s = rng.uniform(1e-3, 3e-2, 3)
        ixx, iyy, izz = s[1] + s[2], s[0] + s[2], s[0] + s[1]
        rpy = rng.uniform(-math.pi, math.pi, 3)
        return (f'<inertial><origin xyz="{com[0]} {com[1]} {com[2]}" '
                f'rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/><mass value="{mass}"/>'
                f'<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/>'
                f'</inertial>')

    def origin(rng):
        if rng.random() < 0.4:     # axis-aligned: right angles, parallel and coincident axes
            xyz = rng.choice([0.0, 0.0, 0.1, -0.25, 0.3], 3)
            rpy = rng.choice([0.0, math.pi / 2, -math.pi / 2, math.pi], 3)
        else:
            xyz = rng.uniform(-0.3, 0.3, 3)
            rpy = rng.uniform(-math.pi, math.pi, 3)
        return f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'

    count = 0
    while count < joints:
        parent = links[-1] if chain else links[int(rng.integers(len(links)))]
        child = f"l{len(links)}"
        if rng.random() < 0.15:
            kind = "fixed"
        else:
            kind = rng.choice(["revolute", "continuous", "prismatic", "prismatic"] if chain
                              else ["revolute", "revolute", "continuous", "prismatic"])
            count += 1
        axis = (rng.choice([[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, -1]]) if rng.random() < 0.5
                else rng.normal(size=3))
        limit = ('<limit lower="-0.5" upper="0.5" effort="10" velocity="1"/>'
                 if kind == "prismatic" else
                 '<limit lower="-3" upper="3" effort="10" velocity="2"/>'
                 if kind == "revolute" else "")
        body.append(f'<link name="{child}">{inertial(rng)}</link>')
        body.append(f'<joint name="j{len(links)}" type="{kind}"><parent link="{parent}"/>'
                    f'<child link="{child}"/>{origin(rng)}'
                    f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>{limit}</joint>')
        links.append(child)
    return "\n".join(text + body + ["</robot>"])


RANDOM_TREES = [(seed, joints) for seed, joints in
                enumerate([2, 3, 5, 8, 12, 16, 20, 24, 30, 30] + ([30] * 40 if LONG else []))]


@pytest.mark.parametrize("seed, joints", RANDOM_TREES)
def test_random_tree_matches_pinocchio(tmp_path, seed, joints):
    rng = np.random.default_rng(1000 + seed)
    path = tmp_path / f"random{seed}.urdf"
    path.write_text(_random_urdf(rng, joints), encoding="utf-8")
    robot = load_urdf(path)
    assert robot.n == joints
    assert_small(compare(path, robot, seed=seed, count=STATES // 2))


@pytest.mark.parametrize("seed", range(4 if not LONG else 20))
def test_random_chain_with_prismatic_joints_matches_pinocchio(tmp_path, seed):
    """Serial chains go through the chain code of the regressor (two row buffers)."""
    rng = np.random.default_rng(2000 + seed)
    path = tmp_path / f"chain{seed}.urdf"
    path.write_text(_random_urdf(rng, 8, chain=True), encoding="utf-8")
    robot = load_urdf(path)
    assert robot.is_chain and robot.has_prismatic
    assert_small(compare(path, robot, seed=seed, count=STATES // 2))


def test_random_trees_cover_branches_mounts_and_prismatic_joints(tmp_path):
    """The random trees above are trees: branch points, mounts and prismatic joints occur."""
    seen = {"branch": 0, "mount": 0, "prismatic": 0, "prismatic root": 0}
    for seed, joints in RANDOM_TREES:
        path = tmp_path / f"random{seed}.urdf"
        path.write_text(_random_urdf(np.random.default_rng(1000 + seed), joints),
                        encoding="utf-8")
        robot = load_urdf(path)
        seen["branch"] += sum(len(c) > 1 for c in robot.children)
        seen["mount"] += sum(link.has_mount for link in robot.links)
        seen["prismatic"] += sum(link.joint_type == "prismatic" for link in robot.links)
        seen["prismatic root"] += sum(link.joint_type == "prismatic" and p < 0
                                      for link, p in zip(robot.links, robot.parents))
    assert all(value >= 3 for value in seen.values()), seen


# ----------------------------------------------------------------------------------------------
# Chain path against tree path; robot files; truncation
# ----------------------------------------------------------------------------------------------

def test_tree_regressor_path_equals_chain_path_with_a_mount():
    """The right arm of Baxter cut from the tree is a chain whose first link has a mount; with
    one massless extra root the same links go through the tree code: same torques, same Y."""
    tree = _load(_robots_dir() / REAL_TREES["baxter"])
    arm = truncate(tree, "right_wrist")
    assert arm.is_chain and arm.links[0].has_mount
    extra = Link("extra", a=0.1, d=0.2, alpha=0.3)
    as_tree = replace(arm, links=arm.links + (extra,), parents=arm.parents + (-1,),
                      joint_names=arm.joint_names + ("extra",))
    assert not as_tree.is_chain
    rng = np.random.default_rng(5)
    q, qd, qdd = random_states(as_tree, rng, 50)
    n = arm.n
    y_chain = regressor(arm, q[:, :n], qd[:, :n], qdd[:, :n])
    y_tree = regressor(as_tree, q, qd, qdd)
    np.testing.assert_allclose(y_tree[:, :n, :10 * n], y_chain[:, :, :10 * n],
                               rtol=0, atol=1e-12 * np.max(np.abs(y_chain)))
    np.testing.assert_allclose(rnea(as_tree, q, qd, qdd)[:, :n],
                               rnea(arm, q[:, :n], qd[:, :n], qdd[:, :n]), rtol=1e-12, atol=1e-12)


def test_cut_arm_matches_pinocchio_with_the_rest_massless():
    """``truncate`` of a tree: the path to the tip, its mount kept; Pinocchio with the other
    bodies massless and their joints at zero gives the same torques."""
    path = _robots_dir() / REAL_TREES["baxter"]
    tree = _load(path)
    arm = truncate(tree, "right_wrist")
    reference = Reference(path, tree)
    model = reference.model.copy()
    kept = set(arm.joint_names)
    for name, j in zip(tree.joint_names, reference.joint_ids):
        if name not in kept:
            model.inertias[j] = pin.Inertia.Zero()
    arm = replace(arm, gravity=np.array(model.gravity.linear))
    rng = np.random.default_rng(9)
    q, qd, qdd = random_states(arm, rng, 30)
    index = [tree.joint_names.index(name) for name in arm.joint_names]
    full = np.zeros((30, tree.n)), np.zeros((30, tree.n)), np.zeros((30, tree.n))
    for array, values in zip(full, (q, qd, qdd)):
        array[:, index] = values
    tau_pin = np.stack([reference.rnea(*s, model=model) for s in zip(*full)])[:, index]
    tau = rnea(arm, q, qd, qdd)
    assert np.max(np.abs(tau - tau_pin)) / np.max(np.abs(tau_pin)) < TOLERANCE


def test_tree_survives_a_robot_file(tmp_path):
    tree = _load(_robots_dir() / REAL_TREES["tiago"])
    again = load_robot(save_robot(tree, tmp_path / "tiago.json"))
    assert again.parents == tree.parents and again.joint_names == tree.joint_names
    assert all(np.array_equal(a.mount, b.mount) and a.joint_type == b.joint_type
               for a, b in zip(again.links, tree.links))
    rng = np.random.default_rng(2)
    q, qd, qdd = random_states(tree, rng, 10)
    np.testing.assert_array_equal(rnea(again, q, qd, qdd), rnea(tree, q, qd, qdd))


def test_info_describes_the_tree():
    from linkdyn.model.__main__ import describe
    text = describe(_load(_robots_dir() / REAL_TREES["baxter"]))
    assert "19 joints (4 prismatic), standard DH, a tree with 3 roots" in text
    rows = [line.split() for line in text.splitlines()]
    assert ["9", "r_gripper_l_finger", "8", "prismatic", "r_gripper_l_finger_joint"] in rows
    assert describe(load_robot("ur5")).startswith("robot 'ur5': 6 revolute joints")


def test_chain_file_has_no_tree_fields(tmp_path):
    text = save_robot(load_robot("ur5"), tmp_path / "ur5.json").read_text()
    assert '"parent"' not in text and '"mount"' not in text and '"joint_name"' not in text


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------

def _links(n):
    return tuple(Link(f"l{i}", a=0.1, mass=1.0) for i in range(n))


@pytest.mark.parametrize("parents, pattern", [
    ((-1, 0, 3, 1), r"parents\[2\] \(link 'l2'\) is link 3 \('l3'\): every parent must come "
                    r"before its child"),
    ((-1, 1, 0, 1), r"parents\[1\] \(link 'l1'\) is itself"),
    ((-1, 0, 1, 7), r"parents\[3\] \(link 'l3'\) is 7, out of range"),
    ((-1, 0, -2, 1), r"parents\[2\] \(link 'l2'\) is -2, out of range"),
    ((-1, 0, 1), r"parents must have one entry per link \(4\), not 3"),
    ((-1, 0, 1.0, 2), r"parents\[2\] \(link 'l2'\) must be an integer, not 1.0"),
    ((-1, 0, True, 2), r"parents\[2\] \(link 'l2'\) must be an integer, not True"),
    ("0123", r"parents must be a sequence of 4 integers"),
    (5, r"parents must be a sequence of 4 integers, not 5"),
])
def test_bad_parents_are_refused(parents, pattern):
    with pytest.raises(RobotDescriptionError, match=pattern):
        Robot("tree", _links(4), parents=parents)


def test_a_cycle_cannot_be_written():
    # 1 -> 2 -> 1: one of the two parents is not before its child.
    with pytest.raises(RobotDescriptionError, match=r"parents\[1\] .* is link 2 .* cannot hold "
                                                    r"a cycle"):
        Robot("tree", _links(3), parents=(-1, 2, 1))


@pytest.mark.parametrize("names, pattern", [
    (("a", "b"), r"joint_names must have one entry per link \(3\), not 2"),
    (("a", "", "c"), r"joint_names\[1\] must be a non-empty string"),
    (("a", "b", "a"), r"joint_names repeat"),
])
def test_bad_joint_names_are_refused(names, pattern):
    with pytest.raises(RobotDescriptionError, match=pattern):
        Robot("tree", _links(3), joint_names=names)


def test_robot_file_parent_must_be_an_index(tmp_path):
    robot = Robot("tree", _links(3), parents=(-1, 0, 0))
    path = save_robot(robot, tmp_path / "tree.json")
    assert load_robot(path).parents == (-1, 0, 0)
    path.write_text(path.read_text().replace('"parent": 0', '"parent": "l0"'))
    with pytest.raises(RobotDescriptionError, match=r"field 'parent' must be an integer link "
                                                    r"index"):
        load_robot(path)


def test_fixed_point_chain_refuses_trees_and_takes_prismatic_joints_jacobian_refuses_both():
    tree = Robot("tree", _links(3), parents=(-1, 0, 0))
    slider = Robot("slider", (Link("s", joint_type="prismatic", mass=1.0),))
    zeros = np.zeros(tree.n)
    # A tree runs on GoldenTree (tests/model/test_golden_tree.py), not on the chain of nodes.
    with pytest.raises(NotImplementedError, match="runs serial chains without mounts"):
        rnea_fixed(tree, zeros, zeros, zeros)
    # A vertical slider at rest holds its weight, m g = 9.80665 N: g and the product are each
    # rounded once to Q15.16 (half an LSB each), so within one LSB, 2**-16 N.
    zero = np.zeros(1)
    tau = rnea_fixed(slider, zero, zero, zero).tau
    assert abs(tau[0] - rnea(slider, zero, zero, zero)[0]) <= 2.0 ** -16
    assert abs(rnea(slider, zero, zero, zero)[0] - 9.80665) < 1e-12
    for robot in (tree, slider):
        with pytest.raises(NotImplementedError, match="serial chains of revolute joints only"):
            jacobian(robot, np.zeros(robot.n))


def test_a_defaulted_chain_stays_a_chain_when_replace_changes_its_links():
    chain = Robot("chain", _links(3))
    longer = replace(chain, links=_links(4))
    assert longer.parents == (-1, 0, 1, 2) and longer.joint_names == ("l0", "l1", "l2", "l3")
    assert load_robot("ur5").parents == tuple(range(-1, 5))
    assert replace(load_robot("ur5"), links=load_robot("ur5").links[:3]).is_chain
    # A tree (or names) given explicitly does not follow other links: that would guess.
    tree = Robot("tree", _links(3), parents=(-1, 0, 0))
    with pytest.raises(RobotDescriptionError, match=r"parents must have one entry per link"):
        replace(tree, links=_links(4))
    named = Robot("named", _links(2), joint_names=("j0", "j1"))
    with pytest.raises(RobotDescriptionError, match=r"joint_names must have one entry per link"):
        replace(named, links=_links(3))
