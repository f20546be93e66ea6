"""Time parameterisation along joint paths (seed 002 chapters 1-2).

* toppra and the independent linear program give the same time-optimal duration (within 1 %)
  on the UR10's figure-eight path and on a Puma 560 path with friction;
* every generated trajectory, exported as CSV at 1 kHz, satisfies its velocity, acceleration,
  jerk and torque limits at every sample by the independent checker (finite differences of the
  file and our rnea), not by the generator;
* the jerk-limited online method is never faster than the time-optimal one without jerk limit
  and approaches it as the jerk limit grows.
"""

import numpy as np
import pytest

from linkdyn.model import load_robot
from linkdyn.host.trajectory import ik, paths
from linkdyn.host.trajectory.export import read_csv, write_csv
from linkdyn.host.trajectory.jerk import jerk_limited
from linkdyn.host.trajectory.joint_path import JointPath
from linkdyn.model.kinematics import tool_pose
from linkdyn.host.trajectory.timing import (Limits, TimingError, path_dynamics, sample,
                                            time_optimal, time_optimal_lp)
from linkdyn.host.trajectory.verify import check_trajectory

MARGIN = 0.98          # generators use 98 % of the limits; the checker the limits themselves


@pytest.fixture(scope="module")
def ur10():
    return load_robot("ur10")


@pytest.fixture(scope="module")
def eight_path(ur10):
    """The geometric joint path of a 0.3 m figure-eight tracked with the Jacobian inverse."""
    q0 = ik.well_conditioned_configuration(ur10)
    pose = tool_pose(ur10, q0)
    cartesian = paths.figure_eight(pose[:3, 3], pose[:3, :3], size=0.3, period=4.0, rate=250)
    return JointPath.from_samples(ik.track(ur10, cartesian, "jinv", q0=q0).q)


@pytest.fixture(scope="module")
def puma():
    robot = load_robot("puma560")
    assert robot.has_friction
    path = JointPath.from_waypoints([[0.0, 0.3, -2.5, 0.0, 0.4, 0.0],
                                     [0.6, 0.6, -2.0, 0.5, 0.2, 0.4],
                                     [1.2, 0.2, -2.4, 1.0, 0.7, 0.2],
                                     [1.5, 0.5, -2.9, 0.4, 0.3, -0.3]])
    # Test limits (the built-in Puma has no speed, acceleration or torque limits), tight enough
    # for the torque limits, friction included, to shape the time law.
    limits = Limits.from_robot(robot, velocity=2.0, acceleration=[6, 6, 6, 12, 12, 12],
                               torque=[40, 60, 25, 3, 3, 2])
    return robot, path, limits


def _check(robot, trajectory, limits, tmp_path, jerk=False):
    csv = write_csv(tmp_path / "trajectory.csv", trajectory.t, trajectory.q, trajectory.qd,
                    trajectory.qdd)
    t, q, qd, qdd = read_csv(csv, n=robot.n)
    return check_trajectory(robot, t, q, velocity=limits.velocity,
                            acceleration=limits.acceleration, torque=limits.torque,
                            jerk=limits.jerk if jerk else None, qd=qd, qdd=qdd)


def test_toppra_and_linear_program_agree_on_the_ur10_eight(ur10, eight_path, tmp_path):
    limits = Limits.from_robot(ur10, acceleration=3.0)
    toppra_law = time_optimal(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000)
    lp_law = time_optimal_lp(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000,
                             scheme="interpolation")
    lp_collocation = time_optimal_lp(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000)
    difference = abs(toppra_law.duration - lp_law.duration) / toppra_law.duration
    print(f"toppra {toppra_law.duration:.6f} s, LP {lp_law.duration:.6f} s "
          f"({100 * difference:.2e} %), LP collocation {lp_collocation.duration:.6f} s")
    # Same discretisation, independent solvers: the same optimum (measured 1e-6 relative).
    assert difference < 0.01
    assert difference < 1e-4
    # The collocation discretisation differs by O(grid step) (measured 0.08 %).
    assert abs(lp_collocation.duration - toppra_law.duration) < 0.01 * toppra_law.duration
    # Time-optimal: on every segment a velocity or acceleration limit is active at one of its
    # ends (bang-bang, seed 002 Sect. 1.3.3).
    dynamics = path_dynamics(ur10, eight_path, toppra_law.s)
    x = toppra_law.sd ** 2
    u = toppra_law.sdd
    ratio = []
    for end in (slice(None, -1), slice(1, None)):
        velocity = np.abs(dynamics.dq[end]) * np.sqrt(x[end])[:, None] / limits.velocity
        acceleration = np.abs(dynamics.dq[end] * u[:, None] + dynamics.ddq[end] * x[end][:, None])
        ratio.append(np.maximum(np.max(velocity, axis=1),
                                np.max(acceleration / limits.acceleration, axis=1)))
    active = np.maximum(*ratio) > 0.99 * MARGIN
    print(f"segments with an active limit: {100 * np.mean(active):.1f} %")
    assert np.mean(active) > 0.97        # all but the few where the profile switches
    report = _check(ur10, sample(eight_path, toppra_law, 1000), limits, tmp_path)
    print(report.as_dict()["ratios"])
    assert report.ok, report.as_dict()
    assert report.checks["acceleration"].ratio > 0.95      # the check is not vacuous


def test_toppra_and_linear_program_agree_with_friction(puma, tmp_path):
    robot, path, limits = puma
    toppra_law = time_optimal(robot, path, limits.scaled(MARGIN), gridpoints=500)
    lp_law = time_optimal_lp(robot, path, limits.scaled(MARGIN), gridpoints=500,
                             scheme="interpolation")
    print(f"toppra {toppra_law.duration:.6f} s ({toppra_law.iterations} friction passes), "
          f"LP {lp_law.duration:.6f} s ({lp_law.iterations})")
    assert toppra_law.iterations > 1            # friction bounds were refined
    assert abs(toppra_law.duration - lp_law.duration) < 1e-3 * toppra_law.duration
    # Friction costs time here: the same path without it is faster.
    frictionless = time_optimal(robot.without_friction(), path, limits.scaled(MARGIN),
                                gridpoints=500)
    assert frictionless.duration < 0.9 * toppra_law.duration
    report = _check(robot, sample(path, toppra_law, 1000), limits, tmp_path)
    print(report.as_dict()["ratios"])
    assert report.ok, report.as_dict()
    assert report.checks["torque"].ratio > 0.95             # the torque limits are active


def test_jerk_limited_method_holds_its_limits_at_every_sample(puma, tmp_path):
    robot, path, limits = puma
    limits = Limits(limits.velocity, limits.acceleration, limits.torque, 40.0)
    law = jerk_limited(robot, path, limits, step=0.008, margin=MARGIN)
    # The output is the discrete system of eq. (2.15) driven by the jerk inputs, from rest at
    # the start to rest (sd <= 1e-6, sdd = 0) within 1e-6 of the end of the path.
    T = law.step
    s, v, a = law.state[:-1].T
    u = law.jerk
    assert np.allclose(law.state[1:, 0], s + T * v + T * T * a / 2 + T ** 3 * u / 6, rtol=0,
                       atol=1e-12)
    assert np.allclose(law.state[1:, 1], v + T * a + T * T * u / 2, rtol=0, atol=1e-12)
    assert np.allclose(law.state[1:, 2], a + T * u, rtol=0, atol=1e-9)
    assert np.all(law.state[:, 1] >= 0)
    assert tuple(law.state[0]) == (path.s_start, 0.0, 0.0)
    assert 0 <= law.state[-1, 1] <= 1e-6 and law.state[-1, 2] == 0.0
    assert abs(law.state[-1, 0] - path.s_end) <= 1e-6
    report = _check(robot, sample(path, law, 1000), limits, tmp_path, jerk=True)
    print(law.duration, law.tests, law.fallbacks, report.as_dict()["ratios"])
    assert report.ok, report.as_dict()
    assert report.checks["jerk"].ratio > 0.95               # the jerk limit is what shapes it
    optimal = time_optimal(robot, path, limits.scaled(MARGIN), gridpoints=500)
    assert law.duration > optimal.duration


def test_jerk_limited_method_approaches_the_time_optimum(ur10, eight_path):
    """Without a practical jerk limit the online method ends within 2 % of toppra's optimum
    (never below it); with a tight one it is slower. (Its limits at every sample are checked
    on the Puma above and, on this path, by the command-line test.)"""
    limits = Limits.from_robot(ur10, acceleration=3.0)
    optimal = time_optimal(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000).duration
    durations = {}
    for jerk in (1e4, 30.0):
        bounded = Limits(limits.velocity, limits.acceleration, limits.torque, jerk)
        durations[jerk] = jerk_limited(ur10, eight_path, bounded, step=0.008,
                                       margin=MARGIN).duration
    print(f"time-optimal {optimal:.4f} s, jerk-limited {durations}")
    # Measured: 2.7469 s; 2.784 s (+1.3 %) with 1e4 rad/s^3, 3.048 s with 30 rad/s^3.
    assert optimal <= durations[1e4] < 1.02 * optimal
    assert durations[30.0] > 1.05 * durations[1e4]


def test_timing_rejects_impossible_limits(puma):
    robot, path, limits = puma
    # Gravity alone exceeds a 1 N·m shoulder torque: no admissible time law at all.
    weak = Limits(limits.velocity, limits.acceleration, [1.0] * 6, limits.jerk)
    with pytest.raises(TimingError):
        time_optimal(robot, path, weak, gridpoints=200)
    with pytest.raises(TimingError):
        time_optimal_lp(robot, path, weak, gridpoints=200)
    with pytest.raises(ValueError, match="positive"):
        Limits.from_robot(robot, velocity=-1.0)
    with pytest.raises(ValueError, match="jerk"):
        jerk_limited(robot, path, Limits.from_robot(robot, velocity=1.0))
