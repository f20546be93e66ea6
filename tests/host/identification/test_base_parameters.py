"""Base parameters (numerical reduction by QR with column pivoting) and DH forward kinematics."""

import re

import numpy as np
import pytest

from linkdyn.model import load_robot, regressor
from linkdyn.host.identification.base_parameters import base_parameters, random_states
from linkdyn.model.kinematics import jacobian, link_origins

from support.identification import panda_robot


@pytest.fixture(scope="module")
def ur5():
    return load_robot("ur5")


@pytest.fixture(scope="module")
def ur5_base(ur5):
    return base_parameters(ur5)


def test_ur5_has_36_inertial_base_parameters_like_the_paper(ur5, ur5_base):
    # Paper Sect. 4.1: a 6-DOF arm's 60 inertial parameters reduce to 36 combined ones; the
    # 3 friction parameters per joint (eq. 20) are all identifiable.
    assert ur5_base.count == 36 + 18
    friction = [name for name in ur5_base.names if name.startswith("F_")]
    assert len(friction) == 18
    # Link 1 turns about a fixed vertical axis: only its moment about that axis matters.
    assert {"m_1", "mc_x_1", "mc_y_1", "mc_z_1"} <= set(ur5_base.unidentifiable)


def test_panda_has_43_inertial_base_parameters():
    base = base_parameters(panda_robot())
    assert base.count == 43 + 21


@pytest.mark.parametrize("method", ["preference", "norm"])
def test_base_regressor_reproduces_every_torque(ur5, method):
    base = base_parameters(ur5, method=method)
    rng = np.random.default_rng(11)
    q, qd, qdd = random_states(ur5, 200, rng)  # states the reduction has not seen
    y = regressor(ur5, q, qd, qdd)
    for _ in range(3):
        pi = rng.normal(size=y.shape[-1])
        full = y @ pi
        reduced = base.base_regressor(y) @ base.from_standard(pi)
        np.testing.assert_allclose(reduced, full, rtol=0, atol=1e-10 * np.abs(full).max())
    # The base regressor has full column rank.
    assert np.linalg.matrix_rank(base.base_regressor(y).reshape(-1, base.count)) == base.count


def test_both_pivoting_methods_find_the_same_rank(ur5, ur5_base):
    assert base_parameters(ur5, method="norm").count == ur5_base.count


def test_base_parameter_names_are_linear_combinations(ur5_base):
    # e.g. "mc_x_2 - 0.425 m_2 - 0.425 m_3 - ..." for the parallel axes 2 and 3 of the UR5.
    pattern = re.compile(r"^[A-Za-z_]+_\d+( [+-] (\d+(\.\d+)?(e-?\d+)? )?[A-Za-z_]+_\d+)*$")
    for name in ur5_base.names:
        assert pattern.match(name), name
    regrouped = [name for name in ur5_base.names if name.startswith("mc_x_2 ")]
    assert regrouped and "0.425 m_3" in regrouped[0]


def test_to_standard_is_a_right_inverse_of_the_projection(ur5_base):
    beta = np.random.default_rng(2).normal(size=ur5_base.count)
    np.testing.assert_allclose(ur5_base.from_standard(ur5_base.to_standard(beta)), beta,
                               atol=1e-12)


def test_random_states_respect_position_limits():
    robot = panda_robot()
    q, qd, qdd = random_states(robot, 500, np.random.default_rng(0))
    low, high = robot.q_limits()
    assert np.all(q >= low) and np.all(q <= high)
    assert np.all(np.abs(qd) <= [l.limits.qd_max for l in robot.links])


def test_base_parameters_rejects_bad_arguments(ur5):
    with pytest.raises(TypeError):
        base_parameters("ur5")
    with pytest.raises(ValueError, match="method"):
        base_parameters(ur5, method="magic")
    with pytest.raises(ValueError, match="samples"):
        base_parameters(ur5, samples=3)


def test_origin_jacobian_matches_finite_differences(ur5):
    q = np.random.default_rng(4).uniform(-2, 2, ur5.n)
    for frame in (3, 5, 6):
        position_jacobian = jacobian(ur5, q, frame)[:3]
        numeric = np.stack([(link_origins(ur5, q + 1e-6 * e)[frame]
                             - link_origins(ur5, q - 1e-6 * e)[frame]) / 2e-6
                            for e in np.eye(ur5.n)], axis=1)
        np.testing.assert_allclose(position_jacobian, numeric, atol=1e-8)
