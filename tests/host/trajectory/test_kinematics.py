"""Kinematics and joint-space inertia of linkdyn.host.trajectory checked against Pinocchio.

URDF robots from example-robot-data (UR5, Panda without fingers) are loaded with
``linkdyn.model.load_robot``; Pinocchio loads the same files. Compared at 200 random states
inside the joint limits (fixed seeds), tolerance 1e-9 relative:

* tool pose == Pinocchio's frame placement of the tip link,
* tool Jacobian == ``computeFrameJacobian(..., LOCAL_WORLD_ALIGNED)``,
* ``H(q)`` (composite rigid body algorithm) == Pinocchio's ``crba`` (upper triangle mirrored).

Also checked without Pinocchio: ``H`` against columns of our ``rnea``, ``Jdot qd`` against
finite differences, Jacobians at link origins, the rotation error and the virtual model.
"""

import math

import numpy as np
import pytest

from linkdyn.model import load_robot, rnea
from linkdyn.model import kinematics as K
from linkdyn.host.trajectory.ik import virtual_robot

pin = pytest.importorskip("pinocchio")

TOLERANCE = 1e-9
SAMPLES = 200

URDF_ROBOTS = {
    # name: (path in example-robot-data, tip, Pinocchio joints to lock)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "tool0", ()),
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand_tcp",
              ("panda_finger_joint1", "panda_finger_joint2")),
}


def _robots_dir():
    from linkdyn.model.reference import example_robot_data_dir
    try:
        return example_robot_data_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))


def _pinocchio(key):
    relative, tip, lock = URDF_ROBOTS[key]
    path = _robots_dir() / relative
    robot = load_robot(path, tip=tip)
    model = pin.buildModelFromUrdf(str(path))
    if lock:
        model = pin.buildReducedModel(model, [model.getJointId(n) for n in lock],
                                      pin.neutral(model))
    # Our chain's joints are Pinocchio's revolute joints in the same order (no continuous ones).
    assert model.nq == model.nv == robot.n
    return robot, model, model.getFrameId(tip)


def _states(robot, seed, count=SAMPLES):
    rng = np.random.default_rng(seed)
    low, high = robot.q_limits(default=math.pi)
    return rng.uniform(low, high, (count, robot.n))


@pytest.mark.parametrize("key", list(URDF_ROBOTS))
def test_tool_pose_jacobian_and_inertia_match_pinocchio(key):
    robot, model, frame = _pinocchio(key)
    data = model.createData()
    q = _states(robot, seed=sum(map(ord, key)))
    frames, tool = K.forward_kinematics(robot, q)       # batched over all states at once
    jac = K.jacobian(robot, q, frames=frames)
    inertia = K.joint_space_inertia(robot, q, frames=frames)
    worst = {"pose": 0.0, "jacobian": 0.0, "inertia": 0.0}
    for k in range(len(q)):
        pin.framesForwardKinematics(model, data, q[k])
        pose = data.oMf[frame].homogeneous
        worst["pose"] = max(worst["pose"], np.max(np.abs(pose - tool[k])))
        j_pin = pin.computeFrameJacobian(model, data, q[k], frame, pin.LOCAL_WORLD_ALIGNED)
        worst["jacobian"] = max(worst["jacobian"],
                                np.max(np.abs(j_pin - jac[k])) / np.max(np.abs(j_pin)))
        m = pin.crba(model, data, q[k])
        m = np.triu(m) + np.triu(m, 1).T
        worst["inertia"] = max(worst["inertia"],
                               np.max(np.abs(m - inertia[k])) / np.max(np.abs(m)))
    print(key, {k: f"{v:.2e}" for k, v in worst.items()})
    for what, error in worst.items():
        assert error < TOLERANCE, (key, what, error)


@pytest.mark.parametrize("key", list(URDF_ROBOTS))
def test_link_origin_jacobians_match_pinocchio(key):
    """The Jacobian at the origin of DH frame i (on joint i+1's axis) equals Pinocchio's
    LOCAL_WORLD_ALIGNED frame Jacobian of a frame placed there on link i."""
    robot, model, _ = _pinocchio(key)
    q = _states(robot, seed=11, count=20)
    frames = K.link_frames(robot, q)
    data = model.createData()
    worst = 0.0
    for i in range(1, robot.n + 1):
        joint = model.frames[model.getFrameId(robot.links[i - 1].name, pin.BODY)].parentJoint
        for k in range(len(q)):
            pin.forwardKinematics(model, data, q[k])
            # Put an operational frame at the DH origin, fixed to the joint (link) i.
            placement = data.oMi[joint].inverse() * pin.SE3(frames[k, i, :3, :3],
                                                           frames[k, i, :3, 3])
            probe = pin.Frame(f"probe{i}_{k}", joint, placement, pin.OP_FRAME)
            model_k = model.copy()
            fid = model_k.addFrame(probe)
            data_k = model_k.createData()
            j_pin = pin.computeFrameJacobian(model_k, data_k, q[k], fid, pin.LOCAL_WORLD_ALIGNED)
            ours = K.jacobian(robot, q[k], link=i)
            worst = max(worst, np.max(np.abs(j_pin - ours)))
    assert worst < TOLERANCE


def test_inertia_equals_rnea_columns_and_is_batched():
    robot = load_robot("puma560")
    q = _states(robot, seed=3, count=50)
    inertia = K.joint_space_inertia(robot, q)
    rigid = robot.without_friction()
    zero = np.zeros_like(q)
    columns = np.stack([rnea(rigid, q, zero, np.broadcast_to(np.eye(robot.n)[j], q.shape),
                             gravity=np.zeros(3)) for j in range(robot.n)], axis=-1)
    assert np.max(np.abs(inertia - columns)) < 1e-12 * np.max(np.abs(columns))
    assert np.allclose(inertia, np.swapaxes(inertia, -1, -2), rtol=0, atol=0)
    assert np.all(np.linalg.eigvalsh(inertia) > 0)
    # Batch shapes: (2, 25, n) in, (2, 25, n, n) out, equal to the flat batch.
    assert np.array_equal(K.joint_space_inertia(robot, q.reshape(2, 25, -1)),
                          inertia.reshape(2, 25, robot.n, robot.n))


def test_jacobian_dot_qd_matches_finite_differences():
    robot = load_robot("ur10")
    rng = np.random.default_rng(5)
    h = 1e-6
    for _ in range(20):
        q = rng.uniform(-math.pi, math.pi, robot.n)
        qd = rng.normal(size=robot.n)
        derivative = (K.jacobian(robot, q + h * qd) - K.jacobian(robot, q - h * qd)) / (2 * h)
        assert np.allclose(K.jacobian_dot_qd(robot, q, qd), derivative @ qd, rtol=0, atol=1e-8)


def test_tool_velocity_is_jacobian_times_qd():
    """The Jacobian is the derivative of the tool pose (independent of the CRBA/Pinocchio)."""
    robot = load_robot("ur5")
    rng = np.random.default_rng(8)
    q, qd = rng.uniform(-3, 3, robot.n), rng.normal(size=robot.n)
    h = 1e-6
    plus, minus = K.tool_pose(robot, q + h * qd), K.tool_pose(robot, q - h * qd)
    linear = (plus[:3, 3] - minus[:3, 3]) / (2 * h)
    spin = (plus[:3, :3] - minus[:3, :3]) / (2 * h) @ K.tool_pose(robot, q)[:3, :3].T
    angular = np.array([spin[2, 1], spin[0, 2], spin[1, 0]])
    assert np.allclose(K.jacobian(robot, q) @ qd, np.concatenate([linear, angular]), atol=1e-8)


def test_rotation_error_is_the_rotation_vector():
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(2)
    for angle in [0.0, 1e-9, 0.3, 2.0, math.pi - 1e-9, math.pi]:
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        base = Rotation.random(random_state=4).as_matrix()
        desired = Rotation.from_rotvec(angle * axis).as_matrix() @ base
        error = K.rotation_error(desired, base)
        assert np.isclose(np.linalg.norm(error), angle, atol=1e-8)
        assert np.allclose(Rotation.from_rotvec(error).as_matrix() @ base, desired, atol=1e-8)


def test_jacobian_rejects_bad_input():
    robot = load_robot("ur5")
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 6\)"):
        K.jacobian(robot, np.zeros(5))
    with pytest.raises(ValueError, match="no link 'elbow'"):
        K.jacobian(robot, np.zeros(6), link="elbow")
    with pytest.raises(ValueError, match="0..6"):
        K.jacobian(robot, np.zeros(6), link=7)
    with pytest.raises(TypeError, match="Robot"):
        K.tool_pose("ur5", np.zeros(6))


def test_virtual_model_decouples_the_end_effector():
    """Seed 001 Sect. 3.3: as gamma grows, J H_v^-1 J^T -> diag(1/m_e, 1/ip_e) = E."""
    robot = load_robot("ur10")
    q = _states(robot, seed=9, count=100)
    jac = K.jacobian(robot, q)
    previous = np.inf
    for gamma in (1.0, 10.0, 100.0, 1e4, 1e6):
        virtual = virtual_robot(robot, gamma)
        h = K.joint_space_inertia(virtual, q)
        mapped = jac @ np.linalg.solve(h, np.swapaxes(jac, -1, -2))
        distance = np.median(np.max(np.abs(mapped - np.eye(6)), axis=(-2, -1)))
        assert distance < previous
        previous = distance
    assert previous < 1e-4
    # Masses: every link m_e / gamma, the end-effector adds m_e at the tool origin.
    virtual = virtual_robot(robot, 50.0)
    assert [l.mass for l in virtual.links[:-1]] == [1 / 50] * 5
    assert virtual.links[-1].mass == pytest.approx(1 + 1 / 50)
    assert not virtual.has_friction and np.all(virtual.gravity == 0)
