"""The demo's trajectory respects the robot's limits, and a trajectory that does not is refused
before anything is streamed (the defect: ``make demo`` drove the UR5 to 500 N·m on joint 2, whose
URDF effort limit is 150 N·m, and 126 rad/s^2).

References: the limits of example-robot-data's UR5 URDF (150/150/150/28/28/28 N·m, 3.15/3.2
rad/s) and Pinocchio's RNEA for the peak torques, independent of linkdyn.model.rnea."""

from dataclasses import replace

import numpy as np
import pytest

from linkdyn.host import demo
from linkdyn.host.demo import TrajectoryLimitError, check_limits, demo_trajectory
from linkdyn.model.reference import example_robot_urdf, load_reference_robot

UR5 = replace(load_reference_robot("ur5"), gravity=np.array(demo.PINOCCHIO_GRAVITY))


def test_the_ur5_urdf_limits_are_the_published_ones():
    assert [link.limits.tau_max for link in UR5.links] == [150, 150, 150, 28, 28, 28]
    assert [link.limits.qd_max for link in UR5.links] == [3.15] * 3 + [3.2] * 3


def test_the_default_demo_trajectory_is_within_the_ur5_limits():
    t, q, qd, qdd = demo_trajectory(UR5.n, 3.0, 1000)
    use = check_limits(UR5, t, q, qd, qdd)
    assert max(use["effort"]) < 0.9 and max(use["velocity"]) < 0.9
    assert max(use["position"]) < 1
    # The same peak torques by Pinocchio (independent RNEA), within the effort limits.
    pinocchio = pytest.importorskip("pinocchio")
    model = pinocchio.buildModelFromUrdf(str(example_robot_urdf("ur5")))
    data = model.createData()
    tau = np.array([pinocchio.rnea(model, data, *state) for state in zip(q, qd, qdd)])
    limit = np.array([150, 150, 150, 28, 28, 28])
    assert np.all(np.max(np.abs(tau), axis=0) < 0.9 * limit)
    np.testing.assert_allclose(np.max(np.abs(tau), axis=0) / limit, use["effort"], atol=1e-6)


def test_a_trajectory_beyond_the_effort_limit_is_refused_with_joint_quantity_and_time():
    t, q, qd, qdd = demo_trajectory(UR5.n, 1.0, 1000)        # three times as fast
    with pytest.raises(TrajectoryLimitError, match=r"joint \d (velocity|torque \(float "
                                                   r"model\)) reaches .* at t = .* s, the "
                                                   r"robot's (velocity|effort) limit is"):
        check_limits(UR5, t, q, qd, qdd)


def test_each_kind_of_limit_is_checked():
    t, q, qd, qdd = demo_trajectory(UR5.n, 3.0, 1000)
    fast = qd.copy()
    fast[100, 3] = 3.3
    with pytest.raises(TrajectoryLimitError, match=r"joint 4 velocity reaches 3.3 rad/s at "
                                                   r"t = 0.100 s, the robot's velocity limit "
                                                   r"is 3.2 rad/s"):
        check_limits(UR5, t, q, fast, qdd)
    far = q.copy()
    far[7, 2] = 3.2
    with pytest.raises(TrajectoryLimitError, match=r"joint 3 position 3.2 rad at t = 0.007 s "
                                                   r"is outside the joint range"):
        check_limits(UR5, t, far, qd, qdd)
    hard = qdd.copy()
    hard[50, 1] = 400.0
    with pytest.raises(TrajectoryLimitError, match=r"joint \d torque \(float model\) reaches "
                                                   r".* N·m at t = 0.050 s, the robot's effort "
                                                   r"limit is 150 N·m"):
        check_limits(UR5, t, q, qd, hard)


def test_the_demo_refuses_before_starting_a_board(monkeypatch, tmp_path, capsys):
    import linkdyn.sim

    def no_board(*args, **kwargs):
        raise AssertionError("a board was started for a trajectory beyond the limits")

    monkeypatch.setattr(linkdyn.sim, "SimulatedBoard", no_board, raising=False)
    assert demo.main(["--out", str(tmp_path), "--seconds", "1"]) == 2
    err = capsys.readouterr().err
    assert "breaks the limits of" in err and "Traceback" not in err
