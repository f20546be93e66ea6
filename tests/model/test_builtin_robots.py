"""The built-in robots reproduce their published sources.

* Puma 560: gravity torques equal the Robotics Toolbox's published ``rne`` values at ``qz`` and
  ``qn`` (to the 4 decimals published); friction is RTB's, referred to the link side.
* UR5 / UR10: the kinematics equal the example-robot-data URDF (imported with ``load_urdf`` and,
  independently, Pinocchio), masses and centres of mass equal Universal Robots' published table,
  the inertias are the URDF's inertias re-expressed in the DH frames.
"""

import math

import numpy as np
import pytest

from linkdyn.model import BUILTIN_ROBOTS, load_robot, regressor, rnea
from linkdyn.model.library import robot_source

# Published by Universal Robots, "DH parameters for calculations of kinematics and dynamics".
UR_PUBLISHED = {
    "ur5": dict(
        a=[0, -0.425, -0.39225, 0, 0, 0], d=[0.089159, 0, 0, 0.10915, 0.09465, 0.0823],
        mass=[3.7, 8.393, 2.33, 1.219, 1.219, 0.1879],
        com=[[0, -0.02561, 0.00193], [0.2125, 0, 0.11336], [0.15, 0.0, 0.0265],
             [0, -0.0018, 0.01634], [0, 0.0018, 0.01634], [0, 0, -0.001159]],
        qd_max_deg=[180, 180, 180, 180, 180, 180]),
    "ur10": dict(
        a=[0, -0.612, -0.5723, 0, 0, 0], d=[0.1273, 0, 0, 0.163941, 0.1157, 0.0922],
        mass=[7.1, 12.7, 4.27, 2.0, 2.0, 0.365],
        com=[[0.021, 0.0, 0.027], [0.38, 0.0, 0.158], [0.24, 0.0, 0.068],
             [0.0, 0.007, 0.018], [0.0, 0.007, 0.018], [0, 0, -0.026]],
        qd_max_deg=[120, 120, 180, 180, 180, 180]),
}
UR_ALPHA = [math.pi / 2, 0, 0, math.pi / 2, -math.pi / 2, 0]

# Robotics Toolbox mdl_puma560 (motor side): gear ratio G, viscous B, Coulomb Tc (+, -).
PUMA_G = [-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686]
PUMA_B = [1.48e-3, .817e-3, 1.38e-3, 71.2e-6, 82.6e-6, 36.7e-6]
PUMA_TC = [[0.395, -0.435], [0.126, -0.071], [0.132, -0.105], [11.2e-3, -16.9e-3],
           [9.26e-3, -14.5e-3], [3.96e-3, -10.5e-3]]
PUMA_QN = [0, math.pi / 4, math.pi, 0, math.pi / 4, 0]

# The URDF's base_link is UR's "Base" frame turned by pi about z (joint base_link-base_fixed).
UR_BASE_IN_BASE_LINK = np.diag([-1.0, -1.0, 1.0, 1.0])


def _ur_urdf(name):
    from linkdyn.model.reference import example_robot_data_dir
    try:
        directory = example_robot_data_dir()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    return directory / "ur_description" / "urdf" / f"{name}_robot.urdf"


def _tool_pose(robot, q):
    from linkdyn.model.kinematics import tool_pose
    return tool_pose(robot, q)


def test_builtin_robots_load_and_cite_their_source():
    for name in BUILTIN_ROBOTS:
        robot = load_robot(name)
        assert robot.name == name and robot.n == 6
        assert len(robot_source(name)) > 200


@pytest.mark.parametrize("q, published", [
    ([0.0] * 6, [0, 37.4837, 0.2489, 0, 0, 0]),
    (PUMA_QN, [0, 31.6399, 6.0351, 0, 0.0283, 0]),
], ids=["qz", "qn"])
def test_puma560_gravity_torques_match_robotics_toolbox(q, published):
    puma = load_robot("puma560")
    assert puma.gravity.tolist() == [0.0, 0.0, -9.81]
    zero = np.zeros(6)
    tau = rnea(puma.without_friction(), q, zero, zero)
    np.testing.assert_allclose(tau, published, rtol=0, atol=0.5e-4)
    # The regressor (same per-link code) gives the same numbers.
    y = regressor(puma.without_friction(), q, zero, zero)
    np.testing.assert_allclose(y @ puma.without_friction().parameters(), tau, atol=1e-12)


def test_puma560_friction_is_robotics_toolbox_friction_on_the_link_side():
    puma = load_robot("puma560")
    for link, g, b, tc in zip(puma.links, PUMA_G, PUMA_B, PUMA_TC):
        coulomb = np.mean(np.abs(tc)) * abs(g)
        assert link.friction.viscous == pytest.approx(b * g * g, rel=1e-12)
        # F_c atan(k qd) tends to F_c pi / 2 = RTB's Coulomb torque at the link.
        assert link.friction.coulomb * math.pi / 2 == pytest.approx(coulomb, rel=1e-12)
        assert link.friction.steepness == 100.0 and link.friction.offset == 0.0
    # rnea adds it: RTB's Coulomb torque, smoothed by atan(k qd) / (pi / 2), plus viscous.
    qd = np.array([1.0, -0.5, 0.02, -0.001, 2.0, 0.0])
    zero = np.zeros(6)
    friction = rnea(puma, zero, qd, zero) - rnea(puma.without_friction(), zero, qd, zero)
    expected = [np.mean(np.abs(tc)) * abs(g) * math.atan(100 * v) / (math.pi / 2) + b * g * g * v
                for g, b, tc, v in zip(PUMA_G, PUMA_B, PUMA_TC, qd)]
    np.testing.assert_allclose(friction, expected, rtol=1e-12, atol=1e-12)


def test_puma560_keeps_robotics_toolbox_values_except_the_documented_inertia_fixes():
    puma = load_robot("puma560")
    np.testing.assert_array_equal(puma.dh[:, 0], [0, 0.4318, 0.0203, 0, 0, 0])
    np.testing.assert_array_equal(puma.dh[:, 1], [0, 0, 0.15005, 0.4318, 0, 0])
    np.testing.assert_allclose(puma.dh[:, 2], [math.pi / 2, 0, -math.pi / 2, math.pi / 2,
                                               -math.pi / 2, 0], rtol=0, atol=1e-15)
    assert [link.mass for link in puma.links] == [0, 17.4, 4.8, 0.82, 0.34, 0.09]
    inertias = [np.diag(link.inertia).tolist() for link in puma.links]
    assert inertias == [[0.175, 0.35, 0.175],           # RTB: (0, 0.35, 0)
                        [0.13, 0.524, 0.539],
                        [0.066, 0.086, 0.02],            # RTB: (0.066, 0.086, 0.0125)
                        [1.8e-3, 1.3e-3, 1.8e-3],
                        [0.3e-3, 0.4e-3, 0.3e-3],
                        [0.15e-3, 0.15e-3, 0.04e-3]]
    source = robot_source("puma560")
    assert "0.175" in source and "0.0125" in source and "triangle" in source


def test_puma560_link1_inertia_fix_changes_no_joint_torque():
    """Link 1 only turns about its y axis: its Ixx and Izz do not enter any torque."""
    puma = load_robot("puma560").without_friction()
    rng = np.random.default_rng(5)
    q, qd, qdd = (rng.uniform(-2, 2, (50, 6)) for _ in range(3))
    parameters = puma.parameters()
    changed = parameters.copy()
    changed[4] += 0.1   # I_xx of link 1
    changed[9] += 0.2   # I_zz of link 1
    y = regressor(puma, q, qd, qdd)
    np.testing.assert_allclose(y @ changed, y @ parameters, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["ur5", "ur10"])
def test_ur_dh_masses_and_centres_of_mass_are_the_published_values(name):
    robot = load_robot(name)
    published = UR_PUBLISHED[name]
    assert robot.dh[:, 0].tolist() == published["a"]
    assert robot.dh[:, 1].tolist() == published["d"]
    assert robot.dh[:, 2].tolist() == UR_ALPHA
    assert robot.dh[:, 3].tolist() == [0.0] * 6
    assert [link.mass for link in robot.links] == published["mass"]
    assert [link.com.tolist() for link in robot.links] == published["com"]
    assert [link.limits.qd_max for link in robot.links] == [
        math.radians(v) for v in published["qd_max_deg"]]
    assert all(link.limits.q_min == -2 * math.pi and link.limits.q_max == 2 * math.pi
               for link in robot.links)


@pytest.mark.parametrize("name", ["ur5", "ur10"])
@pytest.mark.parametrize("tip", ["tool0", None])
def test_ur_kinematics_equal_the_example_robot_data_urdf(name, tip):
    """Tool pose over random q: built-in (UR base, flange) vs the imported URDF (base_link).

    With the default tip the URDF chain ends at wrist_3_link, whose frame is the flange frame
    ``tool0`` moved back by the URDF's fixed joint wrist_3_link -> tool0.
    """
    from linkdyn.model.urdf import load_urdf
    path = _ur_urdf(name)
    builtin = load_robot(name)
    urdf = load_urdf(path, tip=tip)
    assert urdf.n == 6 and [link.name for link in urdf.links] == [
        link.name for link in builtin.links]
    flange_in_tip = np.eye(4)
    if tip is None:
        # wrist_3_link -> tool0: rpy (-pi/2, 0, 0), xyz (0, d6, 0)
        flange_in_tip[:3, :3] = [[1, 0, 0], [0, 0, 1], [0, -1, 0]]
        flange_in_tip[1, 3] = builtin.links[-1].d
    rng = np.random.default_rng(11)
    for q in rng.uniform(-2 * math.pi, 2 * math.pi, (100, 6)):
        expected = UR_BASE_IN_BASE_LINK @ _tool_pose(builtin, q)
        np.testing.assert_allclose(_tool_pose(urdf, q) @ flange_in_tip, expected,
                                   rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["ur5", "ur10"])
def test_ur_kinematics_equal_pinocchio_on_the_urdf(name):
    pinocchio = pytest.importorskip("pinocchio")
    model = pinocchio.buildModelFromUrdf(str(_ur_urdf(name)))
    data = model.createData()
    base, flange = model.getFrameId("base"), model.getFrameId("tool0")
    builtin = load_robot(name)
    rng = np.random.default_rng(12)
    for q in rng.uniform(-2 * math.pi, 2 * math.pi, (100, 6)):
        pinocchio.framesForwardKinematics(model, data, q)
        expected = np.linalg.inv(data.oMf[base].homogeneous) @ data.oMf[flange].homogeneous
        np.testing.assert_allclose(_tool_pose(builtin, q), expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["ur5", "ur10"])
def test_ur_inertias_are_the_urdf_inertias_in_the_dh_frames(name):
    from linkdyn.model.kinematics import link_frames
    from linkdyn.model.urdf import load_urdf
    builtin = load_robot(name)
    urdf = load_urdf(_ur_urdf(name))
    builtin_frames = UR_BASE_IN_BASE_LINK @ link_frames(builtin, np.zeros(builtin.n))
    urdf_frames = link_frames(urdf, np.zeros(urdf.n))
    for i, (ours, theirs) in enumerate(zip(builtin.links, urdf.links), start=1):
        ours_world = builtin_frames[i][:3, :3] @ ours.inertia @ builtin_frames[i][:3, :3].T
        theirs_world = urdf_frames[i][:3, :3] @ theirs.inertia @ urdf_frames[i][:3, :3].T
        np.testing.assert_allclose(ours_world, theirs_world, rtol=0, atol=1e-10)


def test_example_robot_data_trees_load_by_name():
    import warnings
    from linkdyn.model.reference import example_robot_data_dir
    try:
        root = example_robot_data_dir()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        by_name = load_robot("Baxter")
        by_path = load_robot(str(root / "baxter_description/urdf/baxter.urdf"))
    assert by_name.n == by_path.n == 19 and not by_name.is_chain and by_name.has_prismatic
    assert by_name.parents == by_path.parents and by_name.joint_names == by_path.joint_names
    q = np.linspace(-0.5, 0.5, by_name.n)
    assert np.array_equal(rnea(by_name, q, q, q), rnea(by_path, q, q, q))
