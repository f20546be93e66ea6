"""Estimation on synthetic data from the float model of the UR5 (ground truth known)."""

import numpy as np
import pytest

from linkdyn.model import load_robot, regressor, rnea, save_robot
from linkdyn.host.identification.base_parameters import base_parameters
from linkdyn.host.identification.estimation import (
    is_physically_consistent, ordinary_least_squares, physically_consistent_least_squares,
    pseudo_inertia, pseudo_inertia_eigenvalues, select_steepness, weighted_least_squares)
from linkdyn.host.identification.pipeline import (IdentificationOptions, identify,
                                                  with_steepness)

from support.identification import synthetic_measurements, ur5_with_friction

#: Noise of the synthetic torques: 0.2 % of each joint's RMS torque (0.07 N·m on the shoulder).
NOISE = 0.002


@pytest.fixture(scope="module")
def ur5():
    return ur5_with_friction()


@pytest.fixture(scope="module")
def base(ur5):
    return base_parameters(ur5)


@pytest.fixture(scope="module")
def system(ur5, base):
    """Base regressor of 20 s at 500 Hz, noise-free and noisy torques, the true base vector."""
    measurements, tau = synthetic_measurements(ur5, seed=0, noise=NOISE)
    y = base.base_regressor(regressor(ur5, measurements.q, measurements.qd, measurements.qdd))
    return y, tau, measurements.tau, base.from_standard(ur5.parameters())


def test_least_squares_recover_the_base_parameters_exactly_without_noise(system):
    y, tau, _, true = system
    for estimate in (ordinary_least_squares(y, tau), weighted_least_squares(y, tau)):
        error = np.abs(estimate.base - true)
        # Relative 1e-8 on every base parameter (absolute for the structural zeros).
        assert np.all(error <= 1e-8 * np.maximum(np.abs(true), 1.0)), error.max()


def test_weighted_least_squares_recover_the_base_parameters_within_one_percent(system):
    y, _, noisy, true = system
    estimate = weighted_least_squares(y, noisy)
    significant = np.abs(true) >= 1e-2 * np.abs(true).max()
    assert significant.sum() >= 30
    relative = np.abs(estimate.base - true)[significant] / np.abs(true)[significant]
    assert relative.max() < 0.01, relative.max()
    # Every parameter (also the small and the structurally zero ones) within 4 standard
    # deviations of the estimator's own covariance: unbiased, honest uncertainty.
    z = np.abs(estimate.base - true) / estimate.base_std
    assert z.max() < 4.0, z.max()
    assert np.linalg.norm(estimate.base - true) / np.linalg.norm(true) < 0.01
    # The weights are the inverse noise levels (the noise's share of each joint's RMS).
    sigma = NOISE * np.sqrt(np.mean(system[1] ** 2, axis=0))
    np.testing.assert_allclose(1 / estimate.weights, sigma, rtol=0.05)


def test_physically_consistent_estimate_is_feasible_and_fits(ur5, base, system):
    y, tau, noisy, true = system
    nominal = ur5.parameters() * 1.1  # a wrong prior: only the undetermined directions use it
    for torques, tolerance in ((tau, 1e-6), (noisy, 0.01)):
        wls = weighted_least_squares(y, torques)
        estimate = physically_consistent_least_squares(y, torques, base.projection, ur5.n,
                                                       weights=wls.weights, nominal=nominal)
        assert estimate.status == "optimal"
        eigenvalues = pseudo_inertia_eigenvalues(estimate.parameters, ur5.n)
        assert np.all(eigenvalues >= 1e-6 - 1e-8), eigenvalues  # the margin, within tolerance
        assert is_physically_consistent(estimate.parameters, ur5.n)
        friction = estimate.parameters[10 * ur5.n:].reshape(ur5.n, 3)
        assert np.all(friction[:, :2] >= -1e-9)
        # The true parameters are feasible, so the SDP keeps the least-squares fit.
        significant = np.abs(true) >= 1e-2 * np.abs(true).max()
        relative = np.abs(estimate.base - true)[significant] / np.abs(true)[significant]
        assert relative.max() < tolerance, relative.max()
        # And the parameters form a valid robot whose torques are the fit's.
        identified = ur5.with_parameters(estimate.parameters)
        np.testing.assert_allclose(rnea(identified, *_states(ur5)),
                                   _base_torques(ur5, base, estimate.base), atol=1e-8)


def _states(robot):
    rng = np.random.default_rng(9)
    return tuple(rng.uniform(-2, 2, (50, robot.n)) for _ in range(3))


def _base_torques(robot, base, beta):
    return base.base_regressor(regressor(robot, *_states(robot))) @ beta


def test_physically_consistent_estimate_repairs_infeasible_least_squares(ur5, base, system):
    # With a tenth of the data and 20 % noise the least-squares solution is not realisable
    # (some pseudo-inertia has a negative eigenvalue); the SDP's is.
    y, _, _, true = system
    measurements, tau = synthetic_measurements(ur5, seed=4, duration=2.0, rate=100.0,
                                               noise=0.2)
    y = base.base_regressor(regressor(ur5, measurements.q, measurements.qd, measurements.qdd))
    wls = weighted_least_squares(y, measurements.tau)
    estimate = physically_consistent_least_squares(y, measurements.tau, base.projection, ur5.n,
                                                   weights=wls.weights,
                                                   nominal=ur5.parameters())
    assert is_physically_consistent(estimate.parameters, ur5.n)
    consistent_ls = [is_physically_consistent(candidate, ur5.n) for candidate in
                     _standard_candidates(base, wls.base, ur5.parameters())]
    assert not any(consistent_ls)


def _standard_candidates(base, beta, nominal):
    """Standard vectors with base parameters beta: pi_d = 0, and pi_d from the nominal robot."""
    first = base.to_standard(beta)
    second = nominal.copy()
    second[base.independent] = 0.0
    second[base.independent] = beta - base.from_standard(second)
    return first, second


def test_pseudo_inertia_of_real_links_is_positive_definite():
    robot = load_robot("ur5")
    for link in robot.links:
        j = pseudo_inertia(link.parameters())
        assert np.linalg.eigvalsh(j).min() > 0
        assert j[3, 3] == link.mass
    # A link whose centre of mass is outside its own inertia ellipsoid is not realisable.
    bad = robot.links[1].parameters().copy()
    bad[1] *= 50.0
    assert np.linalg.eigvalsh(pseudo_inertia(bad)).min() < 0


def test_steepness_search_finds_the_true_friction_steepness(base):
    robot = ur5_with_friction(steepness=40.0)
    measurements, _ = synthetic_measurements(robot, seed=5, noise=NOISE)
    y = base.base_regressor(regressor(robot, measurements.q, measurements.qd, measurements.qdd))
    coulomb = [list(base.independent).index(10 * robot.n + 3 * i) for i in range(robot.n)]
    fixed = np.setdiff1d(np.arange(base.count), coulomb)
    search = select_steepness(y[..., fixed], measurements.qd, measurements.tau)
    assert search.steepness == pytest.approx(40.0, rel=0.05)
    assert search.best_cost <= search.cost.min() + 1e-15


def test_identify_recovers_the_ur5_and_its_robot_file_round_trips(ur5, tmp_path):
    measurements, _ = synthetic_measurements(ur5, seed=6, noise=NOISE)
    # The prior differs from the truth; friction is unknown to it.
    prior = ur5.without_friction().with_parameters(ur5.parameters()[:60] * 1.2)
    options = IdentificationOptions(cutoff=None, acceleration="measured")
    result = identify(prior, measurements, options)
    assert result.physically_consistent
    assert result.steepness == pytest.approx(50.0, rel=0.1)
    noise = NOISE * np.sqrt(np.mean(measurements.tau ** 2, axis=0))
    # Validation on the last 30 %: the identified model is at the noise level, the prior not.
    assert np.all(result.errors["identified"].rms < 1.2 * noise)
    assert np.all(result.errors["nominal"].rms > 2 * result.errors["identified"].rms)
    path = save_robot(result.identified, tmp_path / "identified.json")
    loaded = load_robot(path)
    states = _states(ur5)
    np.testing.assert_allclose(rnea(loaded, *states), rnea(result.identified, *states),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(rnea(loaded, *states), rnea(with_steepness(ur5, result.steepness),
                                                           *states),
                               rtol=0.02, atol=0.05)


def test_estimators_reject_bad_input(base):
    with pytest.raises(ValueError, match="shape"):
        ordinary_least_squares(np.zeros((10, 6, 54)), np.zeros((10, 5)))
    with pytest.raises(ValueError, match="fewer equations"):
        ordinary_least_squares(np.zeros((2, 6, 54)), np.zeros((2, 6)))
    with pytest.raises(np.linalg.LinAlgError, match="excite"):
        ordinary_least_squares(np.zeros((100, 6, 54)), np.zeros((100, 6)))
    with pytest.raises(ValueError, match="weights"):
        weighted_least_squares(np.ones((100, 6, 3)), np.ones((100, 6)), weights=[1, 2])
