"""URDF import checked against Pinocchio: inverse dynamics, regressor and kinematics.

Real arms from ``example-robot-data`` (UR5, UR10, Panda without fingers, Unitree Z1, xArm7,
Kinova Jaco j2s6s200) and hand-written URDFs with degenerate axes, 500 random states per robot
inside the joint limits, fixed seeds. Tolerance: 1e-9 relative.

Pinocchio's regressor has, per joint body, the columns
``(m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)`` about the joint frame origin, in the
joint frame (= the URDF child link frame); ours has ``(m, mc, Ixx, Ixy, Ixz, Iyy, Iyz, Izz)``
about the origin of DH frame ``i``, in frame ``i``. A body's parameters in the two frames are
related by a linear map ``pi_ours = M_i pi_pin`` (rigid transform of a spatial inertia), so the
regressors must satisfy ``Y_pin[:, body j] = Y_ours[:, link i] @ M_i`` exactly.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from linkdyn.model import Link, rnea, regressor  # noqa: E402
from linkdyn.model.reference import example_robot_data_dir  # noqa: E402
from linkdyn.model.kinematics import link_frames  # noqa: E402
from linkdyn.model.urdf import load_urdf  # noqa: E402

from support.pinocchio import PinocchioReference  # noqa: E402

TOLERANCE = 1e-9
SAMPLES = 500


def _robots_dir():
    """The example-robot-data ``robots`` folder."""
    try:
        return example_robot_data_dir()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


ROBOTS = {
    # name: (URDF path in example-robot-data, tip, Pinocchio joints to lock)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", None, ()),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", None, ()),
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand",
              ("panda_finger_joint1", "panda_finger_joint2")),
    "z1": ("z1_description/urdf/z1.urdf", None, ()),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", None, ()),
    "kinova": ("kinova_description/robots/kinova.urdf", None, ()),
}


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------

class Reference(PinocchioReference):
    """A Pinocchio model of a URDF with the mapping from our links to its joints."""

    def __init__(self, path, robot, lock=(), tip=None):
        model = pin.buildModelFromUrdf(str(path))
        if lock:
            model = pin.buildReducedModel(model, [model.getJointId(n) for n in lock],
                                          pin.neutral(model))
        # Our link i is the URDF child link of chain joint i: its Pinocchio body frame's parent
        # joint is the matching Pinocchio joint.
        super().__init__(model, [model.frames[model.getFrameId(link.name, pin.BODY)].parentJoint
                                 for link in robot.links], robot)
        self.tip = tip or robot.links[-1].name

    def joint_in_dh(self):
        """Per link: pose (4x4) of the Pinocchio joint frame in our DH frame i (constant)."""
        return super().joint_in_dh(independent_dh_frames(self.robot, np.zeros(self.robot.n)))


def independent_dh_frames(robot, q):
    """DH frame poses 0..n from the per-node algorithm of docs/architecture.md (R = Rz Rx,
    r = (a, d sa, d ca) in frame i)."""
    frames = [robot.base]
    for link, angle in zip(robot.links, q):
        theta = angle + link.offset
        ct, st = math.cos(theta), math.sin(theta)
        ca, sa = math.cos(link.alpha), math.sin(link.alpha)
        rz = np.array([[ct, -st, 0], [st, ct, 0], [0, 0, 1]])
        rx = np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
        step = np.eye(4)
        step[:3, :3] = rz @ rx
        step[:3, 3] = step[:3, :3] @ np.array([link.a, link.d * sa, link.d * ca])
        frames.append(frames[-1] @ step)
    return frames


def pinocchio_to_ours(pi_pin, transform):
    """Map one body's Pinocchio parameters (joint frame J) to ours (DH frame i).

    ``transform`` is the pose of J in frame i: x_i = R x_J + p. Linear in ``pi_pin``.
    """
    rotation, p = transform[:3, :3], transform[:3, 3]
    m, h = pi_pin[0], pi_pin[1:4]
    ixx, ixy, iyy, ixz, iyz, izz = pi_pin[4:10]
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    h_i = rotation @ h
    inertia_i = (rotation @ inertia @ rotation.T + m * (p @ p * np.eye(3) - np.outer(p, p))
                 + 2 * (p @ h_i) * np.eye(3) - np.outer(h_i, p) - np.outer(p, h_i))
    return np.array([m, *(h_i + m * p), inertia_i[0, 0], inertia_i[0, 1], inertia_i[0, 2],
                     inertia_i[1, 1], inertia_i[1, 2], inertia_i[2, 2]])


def parameter_map(transform):
    """The 10x10 matrix M with pi_ours = M pi_pin."""
    return np.stack([pinocchio_to_ours(e, transform) for e in np.eye(10)], axis=1)


def random_states(robot, rng, count=SAMPLES):
    low, high = robot.q_limits()
    qd_max = np.array([l.limits.qd_max or math.pi for l in robot.links])
    q = rng.uniform(low, high, (count, robot.n))
    qd = rng.uniform(-qd_max, qd_max, (count, robot.n))
    qdd = rng.uniform(-10.0, 10.0, (count, robot.n))
    return q, qd, qdd


def random_body(rng):
    """A random physically consistent body: mass, com, inertia about the com (a rotated
    diagonal built from positive second moments, so the triangle inequalities hold)."""
    mass = rng.uniform(0.1, 5.0)
    com = rng.uniform(-0.3, 0.3, 3)
    s = rng.uniform(1e-3, 5e-2, 3)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    inertia = q @ np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]]) @ q.T
    return mass, com, 0.5 * (inertia + inertia.T)


def compare(robot, reference, seed):
    """Run every comparison; return the maximum relative errors found."""
    model = reference.model
    gravity = np.array(model.gravity.linear)
    robot = replace(robot, gravity=gravity)
    rng = np.random.default_rng(seed)
    q, qd, qdd = random_states(robot, rng)
    n = robot.n

    tau = rnea(robot, q, qd, qdd)
    y = regressor(robot, q, qd, qdd)
    tau_pin = np.stack([reference.rnea(*s) for s in zip(q, qd, qdd)])
    y_pin = np.stack([reference.regressor(*s) for s in zip(q, qd, qdd)])
    pi_pin = reference.parameters()
    scale = np.max(np.abs(tau_pin))

    errors = {}
    # 1. Inverse dynamics.
    errors["rnea"] = np.max(np.abs(tau - tau_pin)) / scale
    errors["rnea per state"] = np.max(np.max(np.abs(tau - tau_pin), axis=1)
                                      / np.max(np.abs(tau_pin), axis=1))
    # 2. Both regressors reproduce both inverse dynamics.
    errors["Y_ours pi_ours"] = np.max(np.abs(y @ robot.parameters() - tau_pin)) / scale
    errors["Y_pin pi_pin"] = np.max(np.abs(y_pin @ pi_pin - tau)) / scale
    # 3. The regressors themselves, through the per-link parameter map.
    transforms = reference.joint_in_dh()
    maps = [parameter_map(t) for t in transforms]
    mapped = np.concatenate([y[:, :, 10 * i:10 * i + 10] @ maps[i] for i in range(n)], axis=2)
    errors["Y_ours M == Y_pin"] = np.max(np.abs(mapped - y_pin)) / np.max(np.abs(y_pin))
    # Sanity: the map sends Pinocchio's parameters to ours.
    ours_from_pin = np.concatenate([maps[i] @ pi_pin[10 * i:10 * i + 10] for i in range(n)])
    errors["M pi_pin == pi_ours"] = (np.max(np.abs(ours_from_pin - robot.parameters()[:10 * n]))
                                     / np.max(np.abs(pi_pin)))
    # 4. Random physically consistent links: the same body expressed in both frames gives the
    #    same torques through both regressors, Pinocchio's rnea and ours.
    worst = 0.0
    for trial in range(5):
        pin_model = model.copy()
        pi_ours, pi_pin_random = [], []
        for i, j in enumerate(reference.joint_ids):
            mass, com, inertia = random_body(rng)
            body = pin.Inertia(mass, com, inertia)
            pin_model.inertias[j] = body
            pi_pin_random.append(body.toDynamicParameters())
            rotation, p = transforms[i][:3, :3], transforms[i][:3, 3]
            pi_ours.append(Link(f"random{i}", mass=mass, com=rotation @ com + p,
                                inertia=rotation @ inertia @ rotation.T).parameters())
        pi_ours, pi_pin_random = np.concatenate(pi_ours), np.concatenate(pi_pin_random)
        lhs = y[:, :, :10 * n] @ pi_ours
        rhs = y_pin @ pi_pin_random
        tau_random = np.stack([reference.rnea(*s, model=pin_model) for s in zip(q, qd, qdd)])
        tau_random_ours = rnea(robot.with_parameters(pi_ours), q, qd, qdd)
        scale_random = np.max(np.abs(tau_random))
        worst = max(worst, np.max(np.abs(lhs - rhs)) / scale_random,
                    np.max(np.abs(lhs - tau_random)) / scale_random,
                    np.max(np.abs(tau_random_ours - tau_random)) / scale_random)
    errors["random links"] = worst
    # 5. Kinematics: the tool frame is the tip link frame, z_{i-1} is joint i's axis.
    data = model.createData()
    worst = 0.0
    for s in range(20):
        q_pin = reference.configuration(q[s])
        pin.computeJointJacobians(model, data, q_pin)
        pin.updateFramePlacements(model, data)
        frames = link_frames(robot, q[s])
        assert np.allclose(frames, independent_dh_frames(robot, q[s]), rtol=0, atol=1e-12)
        tip = data.oMf[model.getFrameId(reference.tip)].homogeneous
        worst = max(worst, np.max(np.abs(frames[-1] @ robot.tool - tip)))
        for i, j in enumerate(reference.joint_ids):
            placement = data.oMi[j]
            # The joint's own Jacobian column in its local frame is its motion subspace.
            jacobian = np.asarray(pin.getJointJacobian(model, data, j, pin.LOCAL))
            local = jacobian.reshape(6, -1)[:, reference.idx_v[i]]
            axis = placement.rotation @ (local[3:6] / np.linalg.norm(local[3:6]))
            worst = max(worst, np.max(np.abs(frames[i][:3, 2] - axis)))
            offset = placement.translation - frames[i][:3, 3]
            worst = max(worst, np.linalg.norm(offset - (offset @ axis) * axis))
    errors["kinematics (m, rad)"] = worst
    return errors


# ----------------------------------------------------------------------------------------------
# Real robots
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("snap", [True, False], ids=["snapped", "exact"])
@pytest.mark.parametrize("key", list(ROBOTS))
def test_robot_matches_pinocchio(key, snap):
    relative, tip, lock = ROBOTS[key]
    path = _robots_dir() / relative
    robot = load_urdf(path, tip=tip) if snap else load_urdf(path, tip=tip, snap_tolerance=0)
    reference = Reference(path, robot, lock, tip)
    errors = compare(robot, reference, seed=sum(map(ord, key)))
    print(key, "snapped" if snap else "exact", {k: f"{v:.2e}" for k, v in errors.items()})
    for what, error in errors.items():
        assert error < TOLERANCE, (key, what, error)
    if not snap:
        # Without snapping the conversion is exact up to rounding.
        assert errors["rnea"] < 1e-12


def test_tool_frame_through_fixed_joints():
    """tip= a link attached through fixed joints: the tool transform includes them."""
    for relative, tip, lock in [("ur_description/urdf/ur5_robot.urdf", "tool0", ()),
                                ("panda_description/urdf/panda.urdf", "panda_hand_tcp",
                                 ("panda_finger_joint1", "panda_finger_joint2"))]:
        path = _robots_dir() / relative
        robot = load_urdf(path, tip=tip)
        reference = Reference(path, robot, lock, tip)
        model, data = reference.model, reference.data
        rng = np.random.default_rng(7)
        q, qd, qdd = random_states(robot, rng, 50)
        for s in range(50):
            pin.framesForwardKinematics(model, data, reference.configuration(q[s]))
            tip_pose = data.oMf[model.getFrameId(tip)].homogeneous
            # m and rad; the UR5's snapped pi/2 (5e-12 rad off in the URDF) shows here.
            assert np.allclose(link_frames(robot, q[s])[-1] @ robot.tool, tip_pose,
                               rtol=0, atol=TOLERANCE)
        gravity = np.array(model.gravity.linear)
        tau = rnea(robot, q, qd, qdd, gravity=gravity)
        tau_pin = np.stack([reference.rnea(*s) for s in zip(q, qd, qdd)])
        assert np.max(np.abs(tau - tau_pin)) / np.max(np.abs(tau_pin)) < TOLERANCE


def test_ur5_dh_table():
    """The UR5 comes out as its published DH table (up to the sign of a_2, a_3: our x_1, x_2
    point from axis i to axis i+1)."""
    robot = load_urdf(_robots_dir() / "ur_description/urdf/ur5_robot.urdf", tip="tool0")
    half = math.pi / 2
    expected = np.array([[0, 0.089159, half], [0.425, 0, 0], [0.39225, 0, 0],
                         [0, 0.10915, half], [0, 0.09465, half], [0, 0.0823, 0]])
    assert np.allclose(robot.dh[:, :3], expected, rtol=0, atol=1e-12)
    # Snapping gives exact structural values.
    assert robot.dh[0, 2] == half and robot.dh[1, 1] == 0.0 and robot.dh[5, 0] == 0.0
    assert [l.name for l in robot.links] == ["shoulder_link", "upper_arm_link", "forearm_link",
                                             "wrist_1_link", "wrist_2_link", "wrist_3_link"]
    assert robot.links[0].limits.q_max == pytest.approx(2 * math.pi, abs=1e-10)
    assert robot.links[0].limits.tau_max == 150.0 and robot.links[5].limits.qd_max == 3.2
    assert not robot.has_friction


def test_continuous_joints_have_no_position_limits():
    robot = load_urdf(_robots_dir() / "kinova_description/robots/kinova.urdf")
    types = {l.name: (l.limits.q_min, l.limits.q_max) for l in robot.links}
    assert types["j2s6s200_link_1"] == (None, None)        # continuous
    assert types["j2s6s200_link_2"] == pytest.approx((0.820304748437, 5.46288055874))


# ----------------------------------------------------------------------------------------------
# Hand-written URDFs against Pinocchio
# ----------------------------------------------------------------------------------------------

def _link(name, mass=None, xyz="0 0 0", rpy="0 0 0", inertia=(0.01, 0.0, 0.0, 0.02, 0.0, 0.03)):
    if mass is None:
        return f'<link name="{name}"/>'
    ixx, ixy, ixz, iyy, iyz, izz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{xyz}" rpy="{rpy}"/>'
            f'<mass value="{mass}"/><inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" '
            f'iyz="{iyz}" izz="{izz}"/></inertial></link>')


def _joint(name, parent, child, kind="revolute", xyz="0 0 0", rpy="0 0 0", axis="0 0 1",
           limit='<limit lower="-2.5" upper="2.5" velocity="3" effort="50"/>'):
    axis_tag = f'<axis xyz="{axis}"/>' if kind != "fixed" else ""
    limit_tag = limit if kind in ("revolute", "prismatic", "continuous") else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>{axis_tag}{limit_tag}'
            f'</joint>')


def _write(tmp_path, body, name="test"):
    path = tmp_path / f"{name}.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n')
    return path


GENERAL_INERTIA = (0.031, 0.004, -0.006, 0.042, 0.003, 0.027)


def _check_against_pinocchio(path, tip=None, lock=(), seed=3):
    robot = load_urdf(path, tip=tip)
    reference = Reference(path, robot, lock, tip)
    errors = compare(robot, reference, seed)
    for what, error in errors.items():
        assert error < TOLERANCE, (path.name, what, error)
    return robot, errors


def test_rotated_inertial_origin(tmp_path):
    """<inertial><origin rpy> rotates the inertia: checked against Pinocchio on the same file,
    and the check is sensitive (the same file without the rpy gives different torques)."""
    def urdf(rpy_a, rpy_b):
        return "\n".join([
            _link("base"),
            _link("l1", 2.0, "0.05 0.1 0.2", rpy_a, GENERAL_INERTIA),
            _link("l2", 1.5, "0.3 -0.02 0.01", rpy_b, GENERAL_INERTIA),
            _link("l3", 0.8, "0.0 0.05 0.1", "0.3 -1.1 2.0", GENERAL_INERTIA),
            _joint("j1", "base", "l1", xyz="0 0 0.3"),
            _joint("j2", "l1", "l2", xyz="0 0.1 0.2", rpy="1.5707963267948966 0 0"),
            _joint("j3", "l2", "l3", xyz="0.4 0 0", axis="0 -1 0"),
        ])
    rotated = _write(tmp_path, urdf("0.7 -0.4 1.2", "-1.0 0.5 0.25"), "rotated")
    plain = _write(tmp_path, urdf("0 0 0", "0 0 0"), "plain")
    robot, _ = _check_against_pinocchio(rotated)
    robot_plain = load_urdf(plain)
    q, qd, qdd = random_states(robot, np.random.default_rng(5), 50)
    difference = np.max(np.abs(rnea(robot, q, qd, qdd) - rnea(robot_plain, q, qd, qdd)))
    assert difference > 1e-3 * np.max(np.abs(rnea(robot, q, qd, qdd)))


def test_rotated_inertial_origin_analytic(tmp_path):
    """A single link whose DH frame 1 is its URDF frame: rpy (0, 0, pi/2) swaps Ixx and Iyy."""
    path = _write(tmp_path, "\n".join([
        _link("base"),
        _link("l1", 2.0, "0.1 0.2 0.3", "0 0 1.5707963267948966", (1.0, 0.0, 0.0, 2.0, 0.0, 3.0)),
        _joint("j1", "base", "l1"),
    ]))
    robot = load_urdf(path)
    link = robot.links[0]
    assert np.allclose(robot.base, np.eye(4), atol=1e-15)
    assert (link.a, link.d, link.alpha, link.offset) == (0.0, 0.0, 0.0, 0.0)
    assert np.allclose(link.com, [0.1, 0.2, 0.3], atol=1e-15)
    assert np.allclose(link.inertia, np.diag([2.0, 1.0, 3.0]), atol=1e-15)


def test_degenerate_axes_against_pinocchio(tmp_path):
    """Coincident, antiparallel, parallel, intersecting and skew consecutive axes, negative axis
    signs, continuous joints, fixed joints inside the chain, a movable side branch locked at 0."""
    body = "\n".join([
        _link("world"),
        _link("base", 1.0, "0 0 0.05"),
        _link("a", 1.2, "0.01 0.02 0.05", "0.1 0.2 0.3", GENERAL_INERTIA),
        _link("b", 0.9, "0.02 0.0 0.1", "0 0.4 0", GENERAL_INERTIA),     # coincident with a
        _link("c", 1.1, "0.1 0.03 0.0", "0.5 0 0", GENERAL_INERTIA),     # antiparallel to b
        _link("c_fixed", 0.4, "0.05 0 0", "0 0 0.2", GENERAL_INERTIA),   # fixed on c
        _link("d", 1.3, "0.2 0.0 0.02", "0 0 0", GENERAL_INERTIA),       # parallel to c, offset
        _link("e", 0.7, "0.0 0.1 0.0", "0.3 0.3 0.3", GENERAL_INERTIA),  # intersecting d
        _link("f", 0.6, "0.0 0.0 0.08", "0 0 0", GENERAL_INERTIA),       # skew to e
        _link("side", 0.3, "0.02 0.02 0.02", "0 0 0", GENERAL_INERTIA),  # movable side branch
        _link("g", 0.5, "0.01 0.01 0.05", "1 0 0", GENERAL_INERTIA),     # continuous
        _link("tool"),
        _joint("fix_world", "world", "base", "fixed", xyz="0.1 -0.2 0.05", rpy="0 0 0.4"),
        _joint("ja", "base", "a", xyz="0.02 0.03 0.1", rpy="0.2 0.1 0"),
        _joint("jb", "a", "b", xyz="0 0 0.15", rpy="0 0 0.7"),
        _joint("jc", "b", "c", xyz="0 0 0.1", rpy="0 0 -0.3", axis="0 0 -1"),
        _joint("jc_fixed", "c", "c_fixed", "fixed", xyz="0.1 0 0.05", rpy="0.3 0 0"),
        _joint("jd", "c_fixed", "d", xyz="0.2 0.1 0", rpy="-0.3 0 0"),
        _joint("je", "d", "e", xyz="0 0 0.1", rpy="0 1.5707963267948966 0", axis="0 0 -1"),
        _joint("jf", "e", "f", xyz="0.05 0.1 0", rpy="0.4 0 0", axis="1 0 0"),
        _joint("jside", "f", "side", xyz="0.03 0 0", axis="0 1 0"),
        _joint("jg", "f", "g", "continuous", xyz="0 0.1 0.2", rpy="0 0 0", axis="0 0.6 0.8"),
        _joint("jtool", "g", "tool", "fixed", xyz="0 0 0.1", rpy="0.1 0.2 0.3"),
    ])
    path = _write(tmp_path, body, "degenerate")
    robot, _ = _check_against_pinocchio(path, tip="tool", lock=("jside",))
    assert [l.name for l in robot.links] == ["a", "b", "c", "d", "e", "f", "g"]
    dh = robot.dh
    # Row i is link i+1: the step from axis i+1 to axis i+2.
    assert dh[0, 0] == 0.0 and dh[0, 1] == 0.0 and dh[0, 2] == 0.0    # a, b coincident
    assert dh[1, 0] == 0.0 and dh[1, 1] == 0.0 and dh[1, 2] == math.pi  # b, c antiparallel
    assert dh[2, 1] == 0.0 and dh[2, 0] > 0 and dh[2, 2] == math.pi   # c, d parallel: d = 0
    assert dh[3, 0] == 0.0 and dh[3, 2] != 0.0                          # d, e intersecting
    assert dh[4, 0] > 0 and dh[5, 0] > 0                                # skew
    assert dh[0, 3] == 0.0                                              # offset_1 = 0
    assert dh[6, 0] == 0.0 and dh[6, 2] == 0.0 and dh[6, 3] == 0.0      # frame n


def test_single_joint_against_pinocchio(tmp_path):
    path = _write(tmp_path, "\n".join([
        _link("base", 1.0), _link("l1", 2.0, "0.1 0.2 0.3", "0.3 0.2 0.1", GENERAL_INERTIA),
        _joint("j1", "base", "l1", xyz="0.1 0.2 0.3", rpy="0.4 -0.2 1.0", axis="1 1 0"),
    ]))
    robot, _ = _check_against_pinocchio(path)
    assert robot.n == 1


def test_fixed_joint_merge_against_pinocchio(tmp_path):
    """Fixed joints (with rotated origins and rotated inertials) merge like Pinocchio does."""
    path = _write(tmp_path, "\n".join([
        _link("base"),
        _link("l1", 2.0, "0.05 0 0.1", "0.2 0 0", GENERAL_INERTIA),
        _link("l1_motor", 0.5, "0.02 0.01 0", "0 0.3 0", GENERAL_INERTIA),
        _link("l1_cover", 0.2, "0 0.01 0.03", "0 0 0.9", GENERAL_INERTIA),
        _link("l2", 1.0, "0.2 0 0", "0 0 0", GENERAL_INERTIA),
        _joint("j1", "base", "l1", xyz="0 0 0.2"),
        _joint("m1", "l1", "l1_motor", "fixed", xyz="0.1 0.05 0.2", rpy="0.5 -0.3 0.2"),
        _joint("c1", "l1_motor", "l1_cover", "fixed", xyz="0 0.1 0", rpy="0 0 1.2"),
        _joint("j2", "l1", "l2", xyz="0 0.1 0.3", rpy="1.5707963267948966 0 0"),
    ]))
    _check_against_pinocchio(path)
