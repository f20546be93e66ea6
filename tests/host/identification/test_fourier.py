"""Fourier excitation trajectories (paper eq. 23, Fig. 9) and the panda-gaz2019 trajectory."""

import numpy as np
import pytest

from linkdyn.host.identification.fourier import (FadedTrajectory, FourierTrajectory,
                                                  fourier_basis, smooth_step)
from linkdyn.host.identification.panda_gaz2019 import Gaz2019Trajectory


def _random_fourier(seed, n=3, harmonics=5, period=10.0):
    rng = np.random.default_rng(seed)
    return FourierTrajectory(rng.uniform(-1, 1, n), rng.uniform(-0.3, 0.3, (n, harmonics)),
                             rng.uniform(-0.3, 0.3, (n, harmonics)), 2 * np.pi / period)


def _central_difference(function, t, h=1e-5):
    return (function(t + h) - function(t - h)) / (2 * h)


def test_fourier_trajectory_is_eq_23():
    trajectory = _random_fourier(0)
    t = np.linspace(0, 13, 57)
    q, _, _ = trajectory.evaluate(t)
    w = trajectory.omega_f
    expected = trajectory.q0 + sum(
        trajectory.a[:, h - 1] * np.sin(h * w * t)[:, None]
        + trajectory.b[:, h - 1] * np.cos(h * w * t)[:, None] for h in range(1, 6))
    np.testing.assert_allclose(q, expected, rtol=0, atol=1e-14)


def test_fourier_trajectory_derivatives_match_finite_differences():
    trajectory = _random_fourier(1)
    t = np.linspace(0.1, 9.9, 41)
    q, qd, qdd = trajectory.evaluate(t)
    np.testing.assert_allclose(qd, _central_difference(lambda s: trajectory.evaluate(s)[0], t),
                               atol=1e-8)
    np.testing.assert_allclose(qdd, _central_difference(lambda s: trajectory.evaluate(s)[1], t),
                               atol=1e-8)


def test_fourier_trajectory_is_periodic():
    trajectory = _random_fourier(2, period=7.5)
    t = np.linspace(0, 7.5, 11)
    for a, b in zip(trajectory.evaluate(t), trajectory.evaluate(t + trajectory.period)):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_velocity_form_matches_swevers_coefficients():
    rng = np.random.default_rng(3)
    a_v, b_v = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    w = 0.15 * np.pi
    trajectory = FourierTrajectory.from_velocity_coefficients([0.1, -0.2], a_v, b_v, w)
    t = np.linspace(0, 20, 33)
    h = np.arange(1, 5)
    expected = np.cos(np.outer(t, h * w)) @ a_v.T + np.sin(np.outer(t, h * w)) @ b_v.T
    np.testing.assert_allclose(trajectory.evaluate(t)[1], expected, atol=1e-12)


def test_smooth_step_boundary_conditions():
    assert smooth_step(0.0) == 0.0 and smooth_step(1.0) == 1.0
    for order in (1, 2):
        assert smooth_step(0.0, order) == 0.0 and smooth_step(1.0, order) == 0.0
    u = np.linspace(0.01, 0.99, 50)
    np.testing.assert_allclose(smooth_step(u, 1), _central_difference(smooth_step, u, 1e-6),
                               atol=1e-7)


@pytest.mark.parametrize("rest", [None, np.array([0.3, -0.4, 0.2])])
def test_faded_trajectory_starts_and_ends_at_rest_and_is_smooth(rest):
    fourier = _random_fourier(4)
    faded = FadedTrajectory(fourier, rest=rest)
    rest_pose = fourier.q0 if rest is None else rest
    assert faded.duration == pytest.approx(3 * fourier.period)
    q, qd, qdd = faded.evaluate(np.array([0.0, faded.duration]))
    np.testing.assert_allclose(q, [rest_pose, rest_pose], atol=1e-12)
    np.testing.assert_allclose(qd, 0, atol=1e-12)
    np.testing.assert_allclose(qdd, 0, atol=1e-12)
    # Inside the excitation interval it is the Fourier trajectory, shifted by the fade.
    start, end = faded.excitation_interval
    t = np.linspace(start, end, 23)
    for a, b in zip(faded.evaluate(t), fourier.evaluate(t - start)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    # Continuity across the fade boundaries (position, velocity, acceleration).
    for boundary in (start, end):
        before = faded.evaluate(np.array([boundary - 1e-9]))
        after = faded.evaluate(np.array([boundary + 1e-9]))
        for a, b in zip(before, after):
            np.testing.assert_allclose(a, b, atol=1e-6)
    # Analytic derivatives everywhere, fades included.
    t = np.linspace(0.05, faded.duration - 0.05, 301)
    q, qd, qdd = faded.evaluate(t)
    np.testing.assert_allclose(qd, _central_difference(lambda s: faded.evaluate(s)[0], t),
                               atol=1e-7)
    np.testing.assert_allclose(qdd, _central_difference(lambda s: faded.evaluate(s)[1], t),
                               atol=1e-7)


def test_linear_map_reproduces_the_trajectory():
    fourier = _random_fourier(5)
    for rest in (None, np.array([0.1, 0.2, 0.3])):
        faded = FadedTrajectory(fourier, rest=rest, periods=2, fade=4.0)
        t = np.linspace(0, faded.duration, 101)
        for order, expected in enumerate(faded.evaluate(t)):
            g, offset = faded.linear_map(t, order)
            np.testing.assert_allclose(g @ fourier.coefficients.T + offset, expected,
                                       atol=1e-13)


def test_fourier_basis_shape_and_order_check():
    assert fourier_basis(np.zeros(4), 5, 1.0).shape == (4, 11)
    with pytest.raises(ValueError, match="order"):
        fourier_basis(np.zeros(4), 5, 1.0, order=3)


@pytest.mark.parametrize("kwargs, message", [
    ({"omega_f": 0.0}, "omega_f"),
    ({"a": np.zeros((2, 5))}, "shape"),
    ({"q0": [0.0, np.nan, 0.0]}, "finite"),
])
def test_fourier_trajectory_rejects_bad_arguments(kwargs, message):
    arguments = {"q0": np.zeros(3), "a": np.zeros((3, 5)), "b": np.zeros((3, 5)),
                 "omega_f": 1.0}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        FourierTrajectory(**arguments)


def test_faded_trajectory_rejects_bad_periods():
    with pytest.raises(ValueError, match="periods"):
        FadedTrajectory(_random_fourier(6), periods=0)


def test_gaz2019_trajectory_is_consistent_and_continuous():
    rng = np.random.default_rng(7)
    trajectory = Gaz2019Trajectory(rng.uniform(-1, 1, 7), rng.uniform(-0.5, 0.5, (7, 5)),
                                   rng.uniform(-0.5, 0.5, (7, 5)), 0.15 * np.pi, start=0.02)
    t = np.linspace(-0.5, 22.0, 4001)
    q, qd, qdd = trajectory.evaluate(t)
    np.testing.assert_allclose(qd, _central_difference(lambda s: trajectory.evaluate(s)[0], t),
                               atol=1e-6)
    np.testing.assert_allclose(qdd, _central_difference(lambda s: trajectory.evaluate(s)[1], t),
                               atol=1e-5)
    # Starts at rest at q_start, ends at rest.
    np.testing.assert_allclose(q[0], trajectory.q_start)
    np.testing.assert_allclose(qd[[0, -1]], 0, atol=1e-12)
    # Velocity continuous at the ramp boundaries (0.5 s and 20.5 s after the start).
    for boundary in (0.52, 20.52):
        before = trajectory.evaluate(np.array([boundary - 1e-9]))[1]
        after = trajectory.evaluate(np.array([boundary + 1e-9]))[1]
        np.testing.assert_allclose(before, after, atol=1e-6)
