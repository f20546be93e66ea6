"""Invalid robot descriptions are rejected with a message naming the link and the value."""

import math

import numpy as np
import pytest

from linkdyn.model import (BUILTIN_ROBOTS, Friction, JointLimits, Link, Robot,
                           RobotDescriptionError, load_robot)

GOOD_INERTIA = np.diag([0.02, 0.03, 0.04])


def _link(name="elbow", **kwargs):
    values = dict(a=0.3, d=0.1, alpha=math.pi / 2, mass=2.0, com=[0.1, 0.0, 0.02],
                  inertia=GOOD_INERTIA)
    values.update(kwargs)
    return Link(name, **values)


def _robot(**kwargs):
    return Robot("arm", (_link("shoulder"), _link("elbow")), **kwargs)


def test_a_valid_link_and_robot_are_accepted():
    robot = _robot()
    assert robot.n == 2 and robot.links[1].mass == 2.0


def test_negative_mass_is_rejected_naming_link_and_value():
    with pytest.raises(RobotDescriptionError, match=r"link 'elbow' mass must be >= 0, not -1\.5"):
        _link(mass=-1.5)


def test_negative_mass_in_parameters_is_rejected():
    with pytest.raises(RobotDescriptionError, match=r"link 'wrist' mass .*-0\.5"):
        Link.from_parameters("wrist", [-0.5, 0, 0, 0, 0.01, 0, 0, 0.01, 0, 0.01])


@pytest.mark.parametrize("field, value", [
    ("a", math.nan), ("d", math.nan), ("alpha", math.inf), ("offset", math.nan),
    ("mass", math.nan), ("com", [0.0, math.nan, 0.0]),
    ("inertia", [[0.02, 0, 0], [0, math.nan, 0], [0, 0, 0.04]]),
])
def test_nan_or_infinity_in_a_link_is_rejected(field, value):
    with pytest.raises(RobotDescriptionError) as error:
        _link(**{field: value})
    message = str(error.value)
    assert "link 'elbow'" in message
    assert "nan" in message or "inf" in message


@pytest.mark.parametrize("field", ["coulomb", "viscous", "offset", "steepness"])
def test_nan_in_friction_is_rejected(field):
    with pytest.raises(RobotDescriptionError, match=rf"friction {field} .*nan"):
        Friction(**{field: math.nan})


@pytest.mark.parametrize("field", ["q_min", "q_max", "qd_max", "qdd_max", "tau_max"])
def test_nan_in_limits_is_rejected(field):
    with pytest.raises(RobotDescriptionError, match=rf"joint limit {field} .*nan"):
        JointLimits(**{field: math.nan})


def test_nan_in_parameters_is_rejected():
    with pytest.raises(RobotDescriptionError, match=r"link 'wrist' parameters .*nan"):
        Link.from_parameters("wrist", [1.0, math.nan, 0, 0, 0.01, 0, 0, 0.01, 0, 0.01])


@pytest.mark.parametrize("field", ["gravity", "base", "tool"])
def test_nan_in_the_robot_is_rejected(field):
    value = [0.0, math.nan, -9.81] if field == "gravity" else np.eye(4)
    if field != "gravity":
        value[0, 3] = math.nan
    with pytest.raises(RobotDescriptionError, match=rf"robot 'arm' {field} .*nan"):
        _robot(**{field: value})


def test_non_symmetric_inertia_is_rejected_naming_link_and_value():
    inertia = [[0.02, 0.005, 0], [0, 0.03, 0], [0, 0, 0.04]]
    with pytest.raises(RobotDescriptionError,
                       match=r"link 'elbow' inertia must be symmetric, not .*0\.005"):
        _link(inertia=inertia)


def test_non_positive_semi_definite_inertia_is_rejected():
    with pytest.raises(RobotDescriptionError,
                       match=r"link 'elbow' inertia must be positive semi-definite.*-0\.01"):
        _link(inertia=np.diag([-0.01, 0.03, 0.04]))


def test_off_diagonal_terms_that_make_the_inertia_indefinite_are_rejected():
    inertia = [[0.02, 0.05, 0], [0.05, 0.03, 0], [0, 0, 0.04]]
    with pytest.raises(RobotDescriptionError, match=r"link 'elbow' inertia must be positive"):
        _link(inertia=inertia)


def test_triangle_inequality_violation_is_rejected_naming_the_moments():
    # The Robotics Toolbox's Puma 560 link 3: 0.0125 + 0.066 < 0.086.
    with pytest.raises(RobotDescriptionError,
                       match=r"link 'elbow' inertia violates the triangle inequality.*0\.086"):
        _link(inertia=np.diag([0.066, 0.086, 0.0125]))


def test_triangle_inequality_at_equality_is_accepted():
    assert _link(inertia=np.diag([0.175, 0.35, 0.175])).inertia[1, 1] == 0.35


def test_zero_mass_with_a_first_moment_is_rejected():
    with pytest.raises(RobotDescriptionError,
                       match=r"link 'wrist' has zero mass but a first moment \[0\.1, 0\.0, 0\.0\]"):
        Link.from_parameters("wrist", [0.0, 0.1, 0, 0, 0.01, 0, 0, 0.01, 0, 0.01])


def test_inertia_about_the_centre_of_mass_must_be_realisable_from_parameters():
    # Inertia about the origin smaller than m |c|^2 allows: not realisable about the centre.
    with pytest.raises(RobotDescriptionError, match=r"link 'wrist' inertia"):
        Link.from_parameters("wrist", [1.0, 0.5, 0, 0, 0.01, 0, 0, 0.01, 0, 0.01])


@pytest.mark.parametrize("field", ["base", "tool"])
@pytest.mark.parametrize("problem", ["scaled", "reflection", "last_row", "shape"])
def test_bad_transforms_are_rejected(field, problem):
    transform = np.eye(4)
    if problem == "scaled":
        transform[:3, :3] *= 1.01
    elif problem == "reflection":
        transform[2, 2] = -1.0
    elif problem == "last_row":
        transform[3, 0] = 0.5
    else:
        transform = np.eye(3)
    with pytest.raises(RobotDescriptionError, match=rf"robot 'arm' {field}"):
        _robot(**{field: transform})


def test_a_proper_rigid_transform_is_accepted():
    c, s = math.cos(0.3), math.sin(0.3)
    base = np.array([[c, -s, 0, 0.1], [s, c, 0, 0.2], [0, 0, 1, 0.3], [0, 0, 0, 1]])
    assert np.array_equal(_robot(base=base).base, base)


def test_prismatic_joint_is_accepted():
    links = (_link("shoulder"), _link("slider", joint_type="prismatic"))
    assert Robot("arm", links).has_prismatic


def test_unknown_joint_type_is_rejected():
    with pytest.raises(RobotDescriptionError, match=r"link 'elbow' joint type .*'spherical'"):
        _link(joint_type="spherical")


def test_repeated_link_names_are_rejected():
    with pytest.raises(RobotDescriptionError, match=r"repeated link names"):
        Robot("arm", (_link("elbow"), _link("elbow")))


def test_a_robot_needs_links():
    with pytest.raises(RobotDescriptionError, match=r"robot 'arm' must have at least one link"):
        Robot("arm", ())


def test_friction_and_limits_are_checked():
    with pytest.raises(RobotDescriptionError, match=r"steepness must be positive, not -1\.0"):
        Friction(steepness=-1.0)
    with pytest.raises(RobotDescriptionError, match=r"q_min 1\.0 is above q_max -1\.0"):
        JointLimits(q_min=1.0, q_max=-1.0)
    with pytest.raises(RobotDescriptionError, match=r"qd_max must be positive, not 0\.0"):
        JointLimits(qd_max=0.0)


def test_unknown_builtin_robot_is_rejected_listing_the_builtins():
    with pytest.raises(RobotDescriptionError) as error:
        load_robot("ur3")
    message = str(error.value)
    assert "'ur3'" in message
    for name in BUILTIN_ROBOTS:
        assert name in message


def test_missing_robot_file_raises_file_not_found_with_the_path(tmp_path):
    path = tmp_path / "missing.json"
    with pytest.raises(FileNotFoundError, match="missing.json"):
        load_robot(path)
    with pytest.raises(FileNotFoundError, match="missing.urdf"):
        load_robot(tmp_path / "missing.urdf")


def test_builtin_names_are_case_insensitive_and_tip_cuts_the_chain():
    robot = load_robot("UR5", tip="forearm_link")
    assert robot.n == 3 and robot.links[-1].name == "forearm_link"
    assert np.array_equal(robot.tool, np.eye(4))
    with pytest.raises(RobotDescriptionError, match=r"no link 'hand'.*wrist_3_link"):
        load_robot("ur5", tip="hand")
