"""Excitation optimisation (paper eq. 24) for the UR5: 5 harmonics, 10 s period.

The optimised trajectory is checked here at 1 ms against every limit with this file's own
sampling and forward kinematics, not the optimiser's.
"""

import numpy as np
import pytest

from linkdyn.model import load_robot
from linkdyn.host.identification.base_parameters import base_parameters
from linkdyn.host.identification.excitation import (
    CartesianBox, ExcitationLimits, _BoxConstraints, _JointConstraints, _Objective,
    _constraint_times, check_trajectory, excitation_criterion, optimise_excitation,
    random_start)

from support.identification import UR5_HOME

#: Paper Sect. 4.1: the origins of the last two links stay 0.25 m above the table.
Z_MIN = 0.25


@pytest.fixture(scope="module")
def ur5():
    return load_robot("ur5")


@pytest.fixture(scope="module")
def limits(ur5):
    boxes = (CartesianBox(5, lower=[-np.inf, -np.inf, Z_MIN]),
             CartesianBox(6, lower=[-np.inf, -np.inf, Z_MIN]))
    return ExcitationLimits.from_robot(ur5, boxes=boxes)


@pytest.fixture(scope="module")
def optimised(ur5, limits):
    # Small and fast: 40 samples per period in the criterion, 15 SLSQP iterations. The full run
    # (100 samples, 100 iterations) is `linkdyn excite` (docs/identification.md).
    return optimise_excitation(ur5, harmonics=5, period=10.0, limits=limits, center=UR5_HOME,
                               samples=40, max_iterations=15, seed=1, progress=False)


def _dh_origins(robot, q):
    """World positions of the DH frame origins, written out independently: (K, n + 1, 3)."""
    k = q.shape[0]
    transform = np.broadcast_to(robot.base, (k, 4, 4)).copy()
    origins = [transform[:, :3, 3].copy()]
    for i, link in enumerate(robot.links):
        theta = q[:, i] + link.offset
        a = np.zeros((k, 4, 4))
        ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(link.alpha), np.sin(link.alpha)
        a[:, 0] = np.stack([ct, -st * ca, st * sa, link.a * ct], axis=1)
        a[:, 1] = np.stack([st, ct * ca, -ct * sa, link.a * st], axis=1)
        a[:, 2, 1:] = [sa, ca, link.d]
        a[:, 3, 3] = 1.0
        transform = transform @ a
        origins.append(transform[:, :3, 3].copy())
    return np.stack(origins, axis=1)


def test_optimised_ur5_excitation_satisfies_every_limit_at_1_ms(ur5, limits, optimised):
    trajectory = optimised.trajectory
    assert trajectory.fourier.harmonics == 5
    assert trajectory.fourier.period == pytest.approx(10.0)
    assert trajectory.duration == pytest.approx(30.0)  # fade-in, one period, fade-out
    t = np.arange(0, 30000 + 1) * 1e-3
    q, qd, qdd = trajectory.evaluate(t)
    # The analytic derivatives are the derivatives of the positions at this sampling.
    np.testing.assert_allclose(np.gradient(q, 1e-3, axis=0)[1:-1], qd[1:-1], atol=2e-5)
    np.testing.assert_allclose(np.gradient(qd, 1e-3, axis=0)[1:-1], qdd[1:-1], atol=2e-4)
    for i, link in enumerate(ur5.links):
        assert np.all(q[:, i] >= link.limits.q_min) and np.all(q[:, i] <= link.limits.q_max)
        assert np.max(np.abs(qd[:, i])) <= link.limits.qd_max
        assert np.max(np.abs(qdd[:, i])) <= 10.0  # the default acceleration limit
    origins = _dh_origins(ur5, q)
    assert np.min(origins[:, 5, 2]) >= Z_MIN
    assert np.min(origins[:, 6, 2]) >= Z_MIN
    # Starts and ends at rest.
    np.testing.assert_allclose(qd[[0, -1]], 0, atol=1e-12)
    # The library's own check agrees.
    assert optimised.check.ok and optimised.check.samples == t.size


def test_optimised_ur5_excitation_improves_the_criterion(ur5, limits, optimised):
    assert optimised.value < optimised.initial_value - 10.0  # det grows by > e^10
    # Recomputed independently of the optimiser's bookkeeping, on a finer sampling.
    base = base_parameters(ur5)
    before = excitation_criterion(ur5, optimised.initial, samples=200, base=base)
    after = excitation_criterion(ur5, optimised.trajectory, samples=200, base=base)
    assert after < before - 10.0
    assert optimised.condition < optimised.initial_condition
    # The random start was feasible too.
    assert check_trajectory(ur5, optimised.initial, limits).ok


def test_criterion_gradient_and_constraint_jacobians_are_exact(ur5, limits):
    start = random_start(ur5, limits, 2, 2 * np.pi / 10, np.random.default_rng(2),
                         center=UR5_HOME)
    x = start.fourier.coefficients.ravel()
    base = base_parameters(ur5)
    step = 1e-6 * np.eye(x.size)

    def numeric(function):
        return np.stack([(function(x + e) - function(x - e)) / 2e-6 for e in step], axis=-1)

    for criterion in ("d-optimality", "condition"):
        objective = _Objective(ur5, base.independent, 2, 2 * np.pi / 10, 30, criterion)
        np.testing.assert_allclose(objective.gradient(x), numeric(objective.value),
                                   rtol=1e-5, atol=1e-5)
    times = _constraint_times(start, 0.1)
    for constraints in (_JointConstraints(start, limits, times, 0.01),
                        _BoxConstraints(ur5, start, limits, times, 0.01)):
        np.testing.assert_allclose(constraints.jacobian(x), numeric(constraints.value),
                                   rtol=1e-5, atol=1e-6)


def test_excitation_rejects_bad_arguments(ur5, limits):
    with pytest.raises(ValueError, match="harmonics"):
        optimise_excitation(ur5, harmonics=0, progress=False)
    with pytest.raises(ValueError, match="criterion"):
        optimise_excitation(ur5, criterion="a-optimality", progress=False)
    with pytest.raises(ValueError, match="box"):
        # The stretched-out zero pose puts the wrist at 0.09 m: below the box.
        optimise_excitation(ur5, limits=limits, center=np.full(6, 1e-3), progress=False,
                            max_iterations=1)
    with pytest.raises(ValueError, match="frame"):
        CartesianBox(0)
    with pytest.raises(ValueError, match="lower"):
        CartesianBox(2, lower=[0, 0, 1], upper=[1, 1, 0])
