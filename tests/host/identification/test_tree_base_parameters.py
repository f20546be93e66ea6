"""Base parameters of a kinematic tree (Baxter: head, two arms, prismatic fingers).

The number of base parameters equals the rank of Pinocchio's joint torque regressor stacked over
random states (plus the three friction columns of every joint), and the base regressor with the
projected parameters reproduces the inverse dynamics on other states.
"""

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from linkdyn.host.identification.base_parameters import (base_parameters,  # noqa: E402
                                                         random_states)
from linkdyn.model import regressor, rnea  # noqa: E402
from linkdyn.model.reference import example_robot_data_dir  # noqa: E402
from linkdyn.model.rnea import friction_regressor  # noqa: E402
from linkdyn.model.urdf import load_urdf  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*has a <mimic> tag:UserWarning")

BAXTER = "baxter_description/urdf/baxter.urdf"


def _baxter():
    try:
        path = example_robot_data_dir() / BAXTER
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    return path, load_urdf(path)


def _pinocchio_rank(path, robot, q, qd, qdd, tolerance=1e-9):
    """Rank of Pinocchio's stacked regressor with our friction columns, columns scaled to unit
    norm after dropping those at rounding-noise level (as base_parameters does)."""
    model = pin.buildModelFromUrdf(str(path))
    data = model.createData()
    joints = [model.joints[model.getJointId(name)] for name in robot.joint_names]
    assert all(joint.nq == 1 for joint in joints)
    rows = []
    for k in range(len(q)):
        q_pin, v, a = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        for i, joint in enumerate(joints):
            q_pin[joint.idx_q], v[joint.idx_v], a[joint.idx_v] = q[k, i], qd[k, i], qdd[k, i]
        y = np.asarray(pin.computeJointTorqueRegressor(model, data, q_pin, v, a))
        rows.append(y[[joint.idx_v for joint in joints]])
    n = robot.n
    friction = np.zeros((len(q), n, 3 * n))
    values = friction_regressor(qd, robot.steepness)
    for i in range(n):
        friction[:, i, 3 * i:3 * i + 3] = values[:, i]
    phi = np.concatenate([np.concatenate(rows), friction.reshape(-1, 3 * n)], axis=1)
    scale = np.linalg.norm(phi, axis=0)
    keep = scale > tolerance * scale.max()
    singular = np.linalg.svd(phi[:, keep] / scale[keep], compute_uv=False)
    return int(np.sum(singular > tolerance * singular[0]))


def test_tree_base_parameters_match_pinocchio_rank_and_reproduce_rnea():
    path, robot = _baxter()
    base = base_parameters(robot)
    q, qd, qdd = random_states(robot, 400, np.random.default_rng(7))
    assert base.count == _pinocchio_rank(path, robot, q, qd, qdd)
    assert base.count < 13 * robot.n
    tau = rnea(robot, q, qd, qdd)
    y_base = base.base_regressor(regressor(robot, q, qd, qdd))
    beta = base.from_standard(robot.parameters())
    assert np.max(np.abs(y_base @ beta - tau)) / np.max(np.abs(tau)) < 1e-9
