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
from linkdyn.host.trajectory.kinematics import tool_pose
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
    path = JointPath.from_waypoints([[0.0, 0.3, 2.5, 0.0, 0.4, 0.0],
                                     [0.6, 0.6, 2.0, 0.5, 0.2, 0.4],
                                     [1.2, 0.2, 2.4, 1.0, 0.7, 0.2],
                                     [1.5, 0.5, 2.9, 0.4, 0.3, -0.3]])
    # Test limits (the built-in Puma has no speed, acceleration or torque limits).
    limits = Limits.from_robot(robot, velocity=2.0, acceleration=[6, 6, 6, 12, 12, 12],
                               torque=[60, 100, 40, 8, 8, 6])
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
    lp_law = time_optimal_lp(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000)
    difference = abs(toppra_law.duration - lp_law.duration) / toppra_law.duration
    print(f"toppra {toppra_law.duration:.5f} s, LP {lp_law.duration:.5f} s, "
          f"difference {100 * difference:.3f} %")
    assert difference < 0.01
    # The same discretisation in both gives the same optimum (to the solvers' tolerance).
    lp_same = time_optimal_lp(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000,
                              scheme="interpolation")
    assert lp_same.duration == pytest.approx(toppra_law.duration, rel=1e-4)
    # Time-optimal: some limit is active along the whole path (at every grid point one of the
    # velocity or acceleration rows is within 2 % of its bound).
    dynamics = path_dynamics(ur10, eight_path, toppra_law.s)
    sd = toppra_law.sd[:-1]
    sdd = toppra_law.sdd
    velocity = np.max(np.abs(dynamics.dq[:-1] * sd[:, None]) / limits.velocity, axis=1)
    acceleration = np.max(np.abs(dynamics.dq[:-1] * sdd[:, None] + dynamics.ddq[:-1]
                                 * (sd ** 2)[:, None]) / limits.acceleration, axis=1)
    active = np.maximum(velocity, acceleration)[5:-5]
    assert np.min(active) > 0.95 * MARGIN
    report = _check(ur10, sample(eight_path, toppra_law, 1000), limits, tmp_path)
    print(report.as_dict()["ratios"])
    assert report.ok, report.as_dict()
    assert report.checks["acceleration"].ratio > 0.95      # the check is not vacuous


def test_toppra_and_linear_program_agree_with_friction(puma, tmp_path):
    robot, path, limits = puma
    toppra_law = time_optimal(robot, path, limits.scaled(MARGIN), gridpoints=800)
    lp_law = time_optimal_lp(robot, path, limits.scaled(MARGIN), gridpoints=800)
    assert toppra_law.iterations > 1            # friction needed the fixed point
    assert abs(toppra_law.duration - lp_law.duration) < 0.01 * toppra_law.duration
    # Friction costs time: the same path without it is faster.
    frictionless = time_optimal(robot.without_friction(), path, limits.scaled(MARGIN),
                                gridpoints=800)
    assert frictionless.duration < toppra_law.duration
    report = _check(robot, sample(path, toppra_law, 1000), limits, tmp_path)
    print(report.as_dict()["ratios"])
    assert report.ok, report.as_dict()
    assert max(report.checks["torque"].ratio, report.checks["acceleration"].ratio) > 0.95


def test_jerk_limited_method_holds_its_limits_at_every_sample(puma, tmp_path):
    robot, path, limits = puma
    limits = Limits(limits.velocity, limits.acceleration, limits.torque, 40.0)
    law = jerk_limited(robot, path, limits, step=0.004, margin=MARGIN)
    # The output is the discrete system of eq. (2.15) driven by the jerk inputs.
    T = law.step
    s, v, a = law.state[:-1].T
    u = law.jerk
    assert np.allclose(law.state[1:, 0], s + T * v + T * T * a / 2 + T ** 3 * u / 6, atol=1e-9)
    assert np.allclose(law.state[1:, 1], v + T * a + T * T * u / 2, atol=1e-7)
    assert np.allclose(law.state[1:, 2], a + T * u, atol=1e-9)
    assert law.state[0, 1] == law.state[-1, 1] == 0.0
    assert law.state[-1, 0] == path.s_end
    report = _check(robot, sample(path, law, 1000), limits, tmp_path, jerk=True)
    print(law.duration, law.tests, law.fallbacks, report.as_dict()["ratios"])
    assert report.ok, report.as_dict()
    assert report.checks["jerk"].ratio > 0.95               # the jerk limit is what shapes it
    optimal = time_optimal(robot, path, limits.scaled(MARGIN), gridpoints=800)
    assert law.duration > optimal.duration


def test_jerk_limited_method_approaches_the_time_optimum(ur10, eight_path, tmp_path):
    """Without a practical jerk limit the online method ends within 2 % of toppra's optimum,
    with a tight one it is slower; its limits hold at every 1 kHz sample."""
    limits = Limits.from_robot(ur10, acceleration=3.0)
    optimal = time_optimal(ur10, eight_path, limits.scaled(MARGIN), gridpoints=1000).duration
    durations = {}
    for jerk in (1e4, 30.0):
        bounded = Limits(limits.velocity, limits.acceleration, limits.torque, jerk)
        law = jerk_limited(ur10, eight_path, bounded, step=0.005, margin=MARGIN)
        durations[jerk] = law.duration
        if jerk == 30.0:
            report = _check(ur10, sample(eight_path, law, 1000), bounded, tmp_path, jerk=True)
            assert report.ok, report.as_dict()
    print(f"time-optimal {optimal:.4f} s, jerk-limited {durations}")
    assert optimal <= durations[1e4] < 1.02 * optimal
    assert durations[30.0] > durations[1e4]


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
