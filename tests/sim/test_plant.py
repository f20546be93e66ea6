"""The MuJoCo plant (linkdyn.sim.plant) against independent references.

* forward dynamics against Pinocchio's ``aba`` on the same URDF (UR5, Panda without fingers),
  random states inside the joint limits, gravity equal, friction off;
* ``mj_inverse`` against linkdyn's float ``rnea`` of the same file;
* the tool site against linkdyn's forward kinematics (same joint order, sign and zero);
* joint damping from the URDF against ``-d qd`` through linkdyn's joint-space inertia;
* effort-limit clipping, encoder quantisation, seeded noise;
* a payload against ``rnea`` with the payload as an external wrench / as extra link parameters;
* a disturbance force against ``J^T F`` (linkdyn's Jacobian and joint-space inertia);
* the wrist force/torque sensor in static cases (a held disturbance, pressing on the plate);
* URDF friction against ``-f sign(qd)``, perturbed link parameters against linkdyn of the
  perturbed URDF, integration along a trajectory driven by linkdyn's torques;
* clear errors for bad input, and a picture when an OpenGL is available.

Fixed seeds; the whole file runs in a few seconds.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

# Before anything imports mujoco: the plant module picks a headless OpenGL for the pictures.
import linkdyn.sim.plant as plant_module  # noqa: E402  (mujoco is a dependency of the sim extra)

from linkdyn.model import rnea  # noqa: E402
from linkdyn.model.kinematics import (jacobian, joint_space_inertia, link_frames,  # noqa: E402
                                      tool_pose)
from linkdyn.model.reference import REFERENCE_URDFS, load_reference_robot  # noqa: E402
from linkdyn.model.urdf import load_urdf  # noqa: E402

Plant, Plate, PlantError = plant_module.Plant, plant_module.Plate, plant_module.PlantError

ROBOTS = ("ur5", "panda")
SAMPLES = 200


def _plant(name, **kwargs):
    try:
        return Plant.from_reference(name, **kwargs)
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


@pytest.fixture(scope="module", params=ROBOTS)
def rigid(request):
    """A plant without friction, damping or quantisation (rigid-body dynamics only)."""
    return _plant(request.param, friction=False, encoder_counts=None)


@pytest.fixture(scope="module")
def ur5():
    return _plant("ur5", friction=False, encoder_counts=None)


def random_states(plant, count, seed):
    """Joint states inside the position limits (at most +-pi), velocities inside +-qd_max."""
    rng = np.random.default_rng(seed)
    low, high = plant.robot.q_limits(default=math.pi)
    low, high = np.maximum(low, -math.pi) + 0.01, np.minimum(high, math.pi) - 0.01
    qd_max = np.array([l.limits.qd_max or 2.0 for l in plant.robot.links])
    q = rng.uniform(low, high, (count, plant.n))
    qd = rng.uniform(-qd_max, qd_max, (count, plant.n))
    qdd = rng.uniform(-5.0, 5.0, (count, plant.n))
    tau = rng.uniform(-0.9, 0.9, (count, plant.n)) * plant.tau_max
    return q, qd, qdd, tau


def hold_torque(plant, q, force=np.zeros(3)):
    """linkdyn's torque that holds the arm still at q while the tool exerts ``force`` (N)."""
    return (rnea(plant.robot, q, np.zeros(plant.n), np.zeros(plant.n))
            + jacobian(plant.robot, q)[:3].T @ force)


# ----------------------------------------------------------------------------------------------
# Dynamics and kinematics against Pinocchio and linkdyn
# ----------------------------------------------------------------------------------------------

def test_plant_accelerations_match_pinocchio_aba(rigid):
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(str(rigid.urdf_path))
    locked = [model.getJointId(name) for name in model.names[1:]
              if name not in rigid.joint_names]
    if locked:
        model = pin.buildReducedModel(model, locked, pin.neutral(model))
    assert list(model.names[1:]) == rigid.joint_names
    assert model.nq == model.nv == rigid.n
    model.gravity.linear = rigid.gravity
    np.testing.assert_array_equal(rigid.gravity, rigid.robot.gravity)
    data = model.createData()
    for q, qd, _, tau in zip(*random_states(rigid, SAMPLES, seed=1)):
        expected = pin.aba(model, data, q, qd, tau)
        got = rigid.forward_dynamics(q, qd, tau)
        np.testing.assert_allclose(got, expected, rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(expected).max()))


def test_mj_inverse_matches_linkdyn_rnea(rigid):
    q, qd, qdd, _ = random_states(rigid, SAMPLES, seed=2)
    expected = rnea(rigid.robot, q, qd, qdd)
    got = np.array([rigid.inverse_dynamics(*state) for state in zip(q, qd, qdd)])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


@pytest.mark.parametrize("offset", [(0.0, 0.0, 0.0), (0.02, 0.15, -0.03)])
def test_tool_site_matches_linkdyn_forward_kinematics(offset):
    """Same joint order, sign and zero: MuJoCo's tool site is linkdyn's tool pose.

    Exactly (1e-13) against the URDF's own numbers (``snap_tolerance=0``); against the plant's
    robot (default snapping: URDF angles written 5e-12 rad off pi/2 become pi/2) to the size of
    that snap times the reach (~1e-11 m).
    """
    for name in ROBOTS:
        plant = _plant(name, tool_offset=offset)
        if not any(offset):   # the default plant's robot is the reference robot itself
            np.testing.assert_array_equal(plant.robot.tool, load_reference_robot(name).tool)
        unsnapped = load_urdf(plant.urdf_path, tip=REFERENCE_URDFS[name][1],
                              snap_tolerance=0)
        translation = np.eye(4)
        translation[:3, 3] = offset
        unsnapped = replace(unsnapped, tool=unsnapped.tool @ translation)
        q, qd, _, _ = random_states(plant, 50, seed=3)
        for state in zip(q, qd):
            plant.reset(*state)
            np.testing.assert_allclose(plant.end_effector_pose(),
                                       tool_pose(unsnapped, state[0]), rtol=0, atol=1e-13)
            expected = tool_pose(plant.robot, state[0])
            np.testing.assert_allclose(plant.end_effector_position(), expected[:3, 3],
                                       rtol=0, atol=1e-10)
            np.testing.assert_allclose(plant.end_effector_pose(), expected, rtol=0, atol=1e-10)


def test_urdf_damping_is_viscous_joint_torque():
    """Panda's <dynamics damping="0.003">: MuJoCo adds -0.003 qd (checked through linkdyn's M)."""
    plant = _plant("panda", encoder_counts=None)
    rigid = _plant("panda", encoder_counts=None, friction=False)
    np.testing.assert_array_equal(plant.model.dof_damping, np.full(7, 0.003))
    np.testing.assert_array_equal(rigid.model.dof_damping, np.zeros(7))
    custom = _plant("panda", encoder_counts=None, damping=np.arange(7) * 0.5,
                    frictionloss=np.full(7, 0.2))
    np.testing.assert_array_equal(custom.model.dof_damping, np.arange(7) * 0.5)
    np.testing.assert_array_equal(custom.model.dof_frictionloss, np.full(7, 0.2))
    for q, qd, _, tau in zip(*random_states(plant, 20, seed=4)):
        difference = plant.forward_dynamics(q, qd, tau) - rigid.forward_dynamics(q, qd, tau)
        np.testing.assert_allclose(joint_space_inertia(plant.robot, q) @ difference,
                                   -0.003 * qd, rtol=0, atol=1e-10)


def test_urdf_friction_is_dry_friction_of_that_level_on_moving_joints():
    """frictionloss f: on a moving joint MuJoCo applies -f sign(qd) (checked with linkdyn's rnea).

    MuJoCo's dry friction is a soft constraint pulling the joint velocity to zero with a force
    bounded by f; it is Coulomb friction while the torque does not decelerate the joint faster
    than the constraint's reference (about qd / 0.01 s): here |qd| >= 0.5 rad/s, |qdd| <= 1.
    """
    level = np.array([2.0, 1.5, 1.0, 0.5, 0.3, 0.2])
    plant = _plant("ur5", encoder_counts=None, gravity=[0.0, 0.0, 0.0], frictionloss=level)
    rng = np.random.default_rng(11)
    q = random_states(plant, 20, seed=11)[0]
    qd = rng.uniform(0.5, 2.0, q.shape) * rng.choice([-1.0, 1.0], q.shape)
    qdd = rng.uniform(-1.0, 1.0, q.shape)
    tau = rnea(plant.robot, q, qd, qdd) + level * np.sign(qd)
    for state in zip(q, qd, tau, qdd):
        np.testing.assert_allclose(plant.forward_dynamics(*state[:3]), state[3], rtol=0,
                                   atol=1e-8)
    # At rest below the level the joint is held, up to the creep of the soft constraint.
    q0 = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2])
    plant.reset(q0)
    plant.run(np.array([1.5, 0, 0, 0, 0, 0]), 1000)
    assert abs(plant.state.q[0] - q0[0]) < 1e-3
    free = _plant("ur5", encoder_counts=None, gravity=[0.0, 0.0, 0.0], friction=False)
    free.reset(q0)
    free.run(np.array([1.5, 0, 0, 0, 0, 0]), 1000)
    assert abs(free.state.q[0] - q0[0]) > 0.1        # without friction it turns


def test_plant_gravity_is_the_robot_gravity():
    plant = _plant("ur5")
    np.testing.assert_array_equal(plant.gravity, [0.0, 0.0, -9.80665])
    tilted = Plant.from_urdf(plant.urdf_path, gravity=[0.5, 0.0, -9.7])
    np.testing.assert_array_equal(tilted.gravity, tilted.robot.gravity)
    np.testing.assert_array_equal(tilted.gravity, [0.5, 0.0, -9.7])


def test_step_advances_one_control_period_with_substeps():
    plant = _plant("ur5", substeps=4, control_period=2e-3)
    assert plant.timestep == pytest.approx(5e-4)
    plant.step(np.zeros(6))
    plant.step(np.zeros(6))
    assert plant.state.time == pytest.approx(4e-3)


def feedforward_deviation(plant, seconds=0.5):
    """Largest |q - q_ref| (rad) when linkdyn's rnea torque of a trajectory drives the plant."""
    q0 = np.array([0.3, -1.2, 1.3, -0.6, 0.7, 0.2])
    amplitude = np.array([0.4, 0.3, 0.5, 0.6, 0.5, 0.8])
    omega = np.array([3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    period = plant.control_period
    steps = np.arange(round(seconds / period))
    middle = (steps[:, None] + 0.5) * period   # torque of the period's middle, held over it
    sine, cosine = np.sin(omega * middle), np.cos(omega * middle)
    torques = rnea(plant.robot, q0 + amplitude * sine, amplitude * omega * cosine,
                   -amplitude * omega ** 2 * sine)
    references = q0 + amplitude * np.sin(omega * (steps[:, None] + 1) * period)
    plant.reset(q0, amplitude * omega)
    deviation = 0.0
    for tau, reference in zip(torques, references):
        plant.step(tau)
        deviation = max(deviation, float(np.abs(plant.state.q - reference).max()))
    return deviation


def test_plant_integrates_linkdyn_dynamics_along_a_trajectory():
    """Open loop, linkdyn's torque of a trajectory reproduces it: first order for implicitfast
    (the drift halves with the timestep), within the torque's zero-order hold for RK4."""
    drift = [feedforward_deviation(_plant("ur5", friction=False, encoder_counts=None,
                                          substeps=substeps)) for substeps in (2, 4)]
    assert 1e-3 < drift[0] < 5e-3
    assert drift[0] / drift[1] == pytest.approx(2.0, rel=0.05)
    rk4 = feedforward_deviation(_plant("ur5", friction=False, encoder_counts=None,
                                       integrator="rk4", substeps=1))
    assert rk4 < 3e-5


def test_static_hold_keeps_the_arm_still(ur5):
    q = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2])
    ur5.reset(q)
    ur5.run(hold_torque(ur5, q), 200)
    np.testing.assert_allclose(ur5.state.q, q, rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------------------------
# Actuators and sensors
# ----------------------------------------------------------------------------------------------

def test_torque_is_clipped_at_the_effort_limit(ur5):
    np.testing.assert_array_equal(ur5.tau_max, [150, 150, 150, 28, 28, 28])
    q = np.array([0.1, -1.2, 1.0, 0.4, -0.3, 0.5])
    ur5.reset(q)
    clips = ur5.clip_count.copy()
    tau = np.array([400.0, -10.0, -151.0, 27.9, -60.0, 0.0])
    clipped = ur5.step(tau)
    np.testing.assert_array_equal(clipped, [True, False, True, False, True, False])
    np.testing.assert_array_equal(ur5.torque, [150.0, -10.0, -150.0, 27.9, -28.0, 0.0])
    np.testing.assert_array_equal(ur5.data.actuator_force, ur5.torque)
    np.testing.assert_array_equal(ur5.clip_count - clips, clipped.astype(int))
    # The plant's acceleration after the step is that of the clipped torque (linkdyn's rnea).
    state = ur5.state
    np.testing.assert_allclose(rnea(ur5.robot, state.q, state.qd, ur5.data.qacc), ur5.torque,
                               rtol=0, atol=1e-8)


def test_encoder_quantisation_and_difference_velocity():
    plant = _plant("ur5", encoder_counts=1000, friction=False)
    step = 2 * math.pi / 1000
    assert plant.encoder_step == step
    q0 = np.array([0.1234, -1.0, 0.77, 0.001, 2.5, -3.0])
    plant.reset(q0)
    q_meas, qd_meas = plant.measure()
    np.testing.assert_allclose(q_meas / step, np.round(q0 / step), rtol=0, atol=1e-9)
    assert np.all(np.abs(q_meas - q0) <= step / 2)
    np.testing.assert_array_equal(qd_meas, 0.0)   # at rest: the same count twice
    previous = q_meas
    for _ in range(30):
        plant.step(np.zeros(6))   # the arm falls
        q_meas, qd_meas = plant.measure()
        true = plant.state.q
        np.testing.assert_allclose(q_meas, step * np.round(true / step), rtol=0, atol=1e-12)
        np.testing.assert_allclose(qd_meas, (q_meas - previous) / plant.control_period,
                                   rtol=0, atol=1e-9)
        previous = q_meas
    assert np.any(np.abs(q_meas - q0) > step)   # it moved
    exact = _plant("ur5", encoder_counts=None, velocity="exact")
    exact.reset(q0, np.full(6, 0.3))
    np.testing.assert_array_equal(exact.measure()[0], q0)
    np.testing.assert_array_equal(exact.measure()[1], np.full(6, 0.3))


def test_measurement_noise_is_seeded_and_has_its_standard_deviation():
    def samples(seed):
        plant = _plant("ur5", encoder_counts=None, noise=1e-3, velocity="exact",
                       velocity_noise=2e-2, seed=seed)
        rows = []
        for _ in range(2000):
            plant.reset(np.zeros(6))
            rows.append(np.concatenate(plant.measure()))
        return np.array(rows)

    a, b, c = samples(7), samples(7), samples(8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    std = a.std(axis=0)
    # 2000 samples: the standard deviation is within ~3 % (1 sigma) of the true one.
    np.testing.assert_allclose(std[:6], 1e-3, rtol=0.12)
    np.testing.assert_allclose(std[6:], 2e-2, rtol=0.12)


def test_payload_changes_gravity_torque_by_its_weight(ur5):
    rng = np.random.default_rng(5)
    mass, com = 0.8, np.array([0.01, 0.08, -0.02])      # tip link frame, m
    q = random_states(ur5, 20, seed=6)[0]
    zero = np.zeros(ur5.n)
    without = np.array([ur5.inverse_dynamics(x, zero, zero) for x in q])
    ur5.set_payload(mass, com, inertia=np.diag(rng.uniform(1e-3, 2e-3, 3)))
    try:
        with_payload = np.array([ur5.inverse_dynamics(x, zero, zero) for x in q])
    finally:
        ur5.remove_payload()
    np.testing.assert_allclose([ur5.inverse_dynamics(x, zero, zero) for x in q], without,
                               rtol=0, atol=1e-12)
    # linkdyn: the payload as the wrench the last link exerts on it, -m g at c (frame n).
    robot = ur5.robot
    frames = link_frames(robot, q)
    c_n = robot.tool[:3, :3] @ com + robot.tool[:3, 3]
    g_n = np.einsum("kji,j->ki", frames[:, -1, :3, :3], robot.gravity)
    f_ext = np.zeros((len(q), robot.n, 6))
    f_ext[:, -1, :3] = -mass * g_n
    f_ext[:, -1, 3:] = np.cross(c_n, -mass * g_n)
    expected = rnea(robot, q, zero, zero, f_ext=f_ext) - rnea(robot, q, zero, zero)
    np.testing.assert_allclose(with_payload - without, expected, rtol=0, atol=1e-10)
    assert np.abs(expected).max() > 1.0


def test_payload_inertia_enters_the_dynamics_as_link_parameters():
    """With motion, the payload (mass, com, rotated inertia) equals extra parameters of link n."""
    offset = (0.0, 0.2, 0.0)             # the tool point is not the tip link frame's origin
    ur5 = _plant("ur5", friction=False, encoder_counts=None, tool_offset=offset)
    mass, com = 1.3, np.array([0.03, 0.1, -0.02])
    rotation = np.linalg.qr(np.random.default_rng(9).normal(size=(3, 3)))[0]
    rotation *= np.linalg.det(rotation)
    inertia = rotation @ np.diag([0.004, 0.006, 0.009]) @ rotation.T
    robot = ur5.robot
    tip = load_reference_robot("ur5").tool          # tip link frame in DH frame n
    r_n, p_n = tip[:3, :3], tip[:3, 3]
    np.testing.assert_allclose(ur5.tip_in_dh, tip, rtol=0, atol=1e-15)
    c_n = r_n @ com + p_n
    inertia_n = r_n @ inertia @ r_n.T + mass * (c_n @ c_n * np.eye(3) - np.outer(c_n, c_n))
    parameters = robot.parameters()
    i = 10 * (robot.n - 1)
    parameters[i:i + 10] += [mass, *(mass * c_n), inertia_n[0, 0], inertia_n[0, 1],
                             inertia_n[0, 2], inertia_n[1, 1], inertia_n[1, 2], inertia_n[2, 2]]
    loaded = robot.with_parameters(parameters)
    q, qd, qdd, _ = random_states(ur5, 50, seed=10)
    ur5.set_payload(mass, com, inertia)
    np.testing.assert_allclose(ur5.payload_parameters(), parameters[i:i + 10]
                               - robot.parameters()[i:i + 10], rtol=0, atol=1e-15)
    got = np.array([ur5.inverse_dynamics(*state) for state in zip(q, qd, qdd)])
    ur5.remove_payload()
    np.testing.assert_array_equal(ur5.payload_parameters(), np.zeros(10))
    expected = rnea(loaded, q, qd, qdd)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_payload_set_during_a_run_keeps_the_state(ur5):
    q = np.array([0.2, -1.1, 1.3, -0.4, 0.6, 0.1])
    ur5.reset(q, np.full(6, 0.1))
    ur5.run(np.zeros(6), 5)
    before = ur5.state
    ur5.set_payload(0.8, [0, 0.05, 0])
    try:
        after = ur5.state
        assert after.time == before.time
        np.testing.assert_array_equal(after.q, before.q)
        np.testing.assert_array_equal(after.qd, before.qd)
        assert ur5.payload.mass == 0.8
    finally:
        ur5.remove_payload()
    assert ur5.payload is None


def test_perturbed_link_parameters_equal_linkdyn_of_the_perturbed_urdf(tmp_path):
    """set_link_inertial (masses x0.8..1.2, centres of mass moved 2 cm) == that URDF in linkdyn."""
    import xml.etree.ElementTree as ET

    plant = _plant("ur5", friction=False, encoder_counts=None)
    rng = np.random.default_rng(12)
    tree = ET.parse(plant.urdf_path)
    for link in tree.getroot().findall("link"):
        name = link.get("name")
        if name not in [l.name for l in plant.robot.links]:
            continue
        factor, shift = rng.uniform(0.8, 1.2), rng.uniform(-0.02, 0.02, 3)
        inertial = link.find("inertial")
        mass = inertial.find("mass")
        mass.set("value", repr(float(mass.get("value")) * factor))
        origin = inertial.find("origin")
        xyz = np.array([float(x) for x in origin.get("xyz").split()]) + shift
        origin.set("xyz", " ".join(repr(float(x)) for x in xyz))
        moments = inertial.find("inertia")
        for key, value in moments.attrib.items():
            moments.set(key, repr(float(value) * factor))
        old_mass, old_com, old_inertia = plant.link_inertial(name)
        plant.set_link_inertial(name, old_mass * factor, old_com + shift, old_inertia * factor)
        np.testing.assert_allclose(plant.link_inertial(name)[0], old_mass * factor)
    path = tmp_path / "ur5_perturbed.urdf"
    tree.write(path)
    true_robot = load_urdf(path)
    q, qd, qdd, _ = random_states(plant, 50, seed=13)
    expected = rnea(true_robot, q, qd, qdd)
    got = np.array([plant.inverse_dynamics(*state) for state in zip(q, qd, qdd)])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert np.abs(expected - rnea(plant.robot, q, qd, qdd)).max() > 1.0   # it differs
    copy = plant.with_plate([0.5, 0.0, 0.1])                             # carried over
    np.testing.assert_allclose(copy.inverse_dynamics(q[0], qd[0], qdd[0]), expected[0],
                               rtol=0, atol=1e-9 * np.abs(expected).max())
    with pytest.raises(ValueError, match="moves: its mass must be > 0"):
        plant.set_link_inertial("forearm_link", mass=0.0)
    with pytest.raises(ValueError, match="triangle inequality"):
        plant.set_link_inertial("forearm_link", inertia=np.diag([0.001, 0.001, 0.01]))
    with pytest.raises(ValueError, match="link must be one of"):
        plant.set_link_inertial("forearm", mass=1.0)


def test_disturbance_force_gives_j_transpose_f():
    plant = _plant("ur5", friction=False, encoder_counts=None, tool_offset=(0.0, 0.12, 0.03))
    q = np.array([0.4, -0.9, 1.1, -0.7, 0.5, -0.3])
    qd = np.array([0.2, -0.1, 0.3, 0.0, 0.4, -0.2])
    plant.reset(q, qd)
    tau = np.array([5.0, -3.0, 2.0, 1.0, -0.5, 0.2])
    baseline = plant.forward_dynamics(q, qd, tau)
    force, torque = np.array([12.0, -7.0, 4.0]), np.array([0.3, 0.2, -0.4])
    plant.apply_disturbance(force, torque=torque)        # default point: the tool point
    plant.data.ctrl[:] = tau
    import mujoco
    mujoco.mj_forward(plant.model, plant.data)
    jac = jacobian(plant.robot, q)                       # linkdyn, at the tool point
    generalized = joint_space_inertia(plant.robot, q) @ (plant.data.qacc - baseline)
    np.testing.assert_allclose(generalized, jac[:3].T @ force + jac[3:].T @ torque,
                               rtol=0, atol=1e-9)


def test_disturbance_on_a_middle_link_at_a_point():
    plant = _plant("ur5", friction=False, encoder_counts=None)
    q = np.array([0.4, -0.9, 1.1, -0.7, 0.5, -0.3])
    plant.reset(q)
    baseline = plant.data.qacc.copy()
    point, force = np.array([0.1, -0.02, 0.15]), np.array([-6.0, 9.0, 3.0])
    plant.apply_disturbance(force, body="forearm_link", point=point)
    body = plant.model.body("forearm_link").id
    p_world = plant.data.xpos[body] + plant.data.xmat[body].reshape(3, 3) @ point
    # linkdyn's geometric Jacobian of that point on link 3: joints 1..3 move it.
    frames = link_frames(plant.robot, q)
    index = [l.name for l in plant.robot.links].index("forearm_link") + 1
    jac = np.zeros((3, plant.n))
    for j in range(index):
        jac[:, j] = np.cross(frames[j, :3, 2], p_world - frames[j, :3, 3])
    generalized = joint_space_inertia(plant.robot, q) @ (plant.data.qacc - baseline)
    np.testing.assert_allclose(generalized, jac.T @ force, rtol=0, atol=1e-9)


def test_disturbance_ends_at_until():
    plant = _plant("ur5", encoder_counts=None)
    plant.reset()
    plant.apply_disturbance([0.0, 0.0, 30.0], duration=0.0035)
    np.testing.assert_array_equal(plant.disturbance_force(), [0.0, 0.0, 30.0])
    plant.run(np.zeros(6), 3)
    assert plant.data.xfrc_applied.any()
    plant.run(np.zeros(6), 1)                         # t = 4 ms >= until
    np.testing.assert_array_equal(plant.disturbance_force(), 0.0)
    assert not plant.data.xfrc_applied.any()


@pytest.mark.parametrize("integrator", ["implicitfast", "rk4"])
def test_wrist_sensor_reads_a_held_disturbance(integrator):
    """Static: the arm holds still against a force on the tool; the sensor reads its reaction."""
    offset = np.array([0.0, 0.15, 0.0])
    plant = _plant("ur5", friction=False, encoder_counts=None, tool_offset=offset,
                   integrator=integrator)
    q = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2])
    plant.reset(q)
    push = np.array([8.0, -5.0, 15.0])               # the environment on the tool, N
    plant.apply_disturbance(push)                     # at the tool point
    plant.run(hold_torque(plant, q, -push), 100)      # the tool exerts -push
    np.testing.assert_allclose(plant.state.q, q, rtol=0, atol=1e-9)
    wrench = plant.wrist_wrench()
    wrist = plant.data.site_xpos[plant.model.site(plant_module.WRIST_SITE).id]
    lever = plant.end_effector_position() - wrist
    np.testing.assert_allclose(wrench[:3], -push, rtol=0, atol=1e-9)
    np.testing.assert_allclose(wrench[3:], np.cross(lever, -push), rtol=0, atol=1e-9)
    rotation = plant.end_effector_pose()[:3, :3]
    np.testing.assert_allclose(plant.wrist_wrench("tool")[:3], rotation.T @ -push, atol=1e-9)


def test_tool_pressed_on_the_plate_exerts_the_commanded_force():
    """Static contact: tau = g(q) + J^T f gives f on the plate, read by the wrist sensor."""
    offset = np.array([0.0, 0.2, 0.0])
    free = _plant("ur5", friction=False, encoder_counts=None, tool_offset=offset)
    q = np.array([0.3, -1.9, 1.9, -1.5, -1.5, 0.0])   # tool pointing down
    free.reset(q)
    tip = free.end_effector_position()
    plant = free.with_plate(tip - [0, 0, 0.01 + 0.01], size=(0.2, 0.2, 0.01))
    assert isinstance(plant.plate, Plate)
    np.testing.assert_allclose(plant.plate.surface_point(), tip - [0, 0, 0.01])
    command = np.array([0.0, 0.0, -25.0])             # the tool pushes down, N
    plant.run(hold_torque(plant, q, command), 400)
    np.testing.assert_allclose(plant.contact_force(), command, rtol=0, atol=0.02)
    np.testing.assert_allclose(plant.wrist_wrench()[:3], command, rtol=0, atol=0.02)
    assert np.linalg.norm(plant.state.q - q) < 1e-3  # it stays (the plate gives ~0.1 mm)


def test_plate_at_tool_touches_the_tool_sphere():
    offset = np.array([0.0, 0.2, 0.0])
    plant = _plant("ur5", friction=False, encoder_counts=None, tool_offset=offset)
    q = np.array([0.3, -1.9, 1.9, -1.5, -1.5, 0.0])
    plant.reset(q)
    tool = plant.end_effector_position()
    direction = np.array([1.0, 0.3, 0.0]) / np.linalg.norm([1.0, 0.3, 0.0])
    touching = plant.with_plate_at_tool(direction, thickness=0.02)
    np.testing.assert_allclose(touching.plate.rotation[:, 2], direction, atol=1e-15)
    np.testing.assert_allclose(touching.plate.surface_point(2) - 0.02 * direction,
                               tool + 0.01 * direction, atol=1e-12)   # face at the sphere
    touching.run(hold_torque(touching, q), 50)
    np.testing.assert_allclose(touching.contact_force(), 0.0, atol=1e-6)  # zero initial force
    pushing = hold_torque(touching, q, 30.0 * direction)
    touching.run(pushing, 400)
    np.testing.assert_allclose(touching.wrist_wrench()[:3], 30.0 * direction, atol=0.05)
    with pytest.raises(ValueError, match="plate direction must not be zero"):
        plant.with_plate_at_tool([0, 0, 0])


def test_tool_jacobian_is_linkdyn_jacobian():
    plant = _plant("panda", tool_offset=(0.0, 0.0, 0.15))
    for q in random_states(plant, 20, seed=14)[0]:
        np.testing.assert_allclose(plant.tool_jacobian(q), jacobian(plant.robot, q), rtol=0,
                                   atol=1e-9)


def test_static_force_limit_is_where_a_joint_reaches_its_effort_limit():
    plant = _plant("ur5", tool_offset=(0.0, 0.2, 0.0))
    q = np.array([0.3, -1.9, 1.9, -1.5, -1.5, 0.0])
    plant.reset(q)
    plant.set_payload(0.8, [0.0, 0.13, 0.0])
    direction = np.array([1.0, 0.0, 0.0])
    force, joint = plant.static_force_limit(direction)
    assert 10.0 < force < 1000.0
    # linkdyn's torques: gravity (with the payload as parameters of link n) + J^T f d.
    parameters = plant.robot.parameters()
    parameters[50:60] += plant.payload_parameters()
    gravity = rnea(plant.robot.with_parameters(parameters), q, np.zeros(6), np.zeros(6))
    lever = jacobian(plant.robot, q)[:3].T @ direction
    below, above = gravity + lever * force * 0.999, gravity + lever * force * 1.001
    assert np.all(np.abs(below) <= plant.tau_max)
    assert np.abs(above[joint]) > plant.tau_max[joint]
    np.testing.assert_allclose(abs(gravity[joint] + lever[joint] * force), plant.tau_max[joint])
    with pytest.raises(ValueError, match="force direction must not be zero"):
        plant.static_force_limit([0, 0, 0])


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------

def test_bad_torque_is_refused_and_the_plant_not_stepped(ur5):
    ur5.reset()
    before = ur5.state
    with pytest.raises(ValueError, match=r"tau \(N·m\) must be finite"):
        ur5.step([0, 0, math.nan, 0, 0, 0])
    with pytest.raises(ValueError, match=r"must have shape \(6,\), not \(5,\)"):
        ur5.step(np.zeros(5))
    with pytest.raises(TypeError, match="must be numeric"):
        ur5.step(["a"] * 6)
    with pytest.raises(TypeError, match="periods must be an int, not 2.5"):
        ur5.run(np.zeros(6), 2.5)
    with pytest.raises(ValueError, match="periods must be >= 1, not 0"):
        ur5.run(np.zeros(6), 0)
    after = ur5.state
    assert after.time == before.time
    np.testing.assert_array_equal(after.q, before.q)


def test_bad_disturbance_and_payload_are_refused(ur5):
    with pytest.raises(ValueError, match=r"disturbance body must be one of \[.*'wrist_3_link'.*"
                                         r"not 'elbow'"):
        ur5.apply_disturbance([1, 0, 0], body="elbow")
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ur5.apply_disturbance([1, 0])
    with pytest.raises(ValueError, match="until must be after start"):
        ur5.apply_disturbance([1, 0, 0], until=-1.0)
    with pytest.raises(ValueError, match="payload mass must be >= 0, not -0.5"):
        ur5.set_payload(-0.5)
    with pytest.raises(ValueError, match="payload centre of mass must be finite"):
        ur5.set_payload(0.5, [0, math.inf, 0])
    with pytest.raises(ValueError, match="positive semi-definite"):
        ur5.set_payload(0.5, [0, 0, 0], -np.eye(3))
    assert ur5.payload is None and not ur5.disturbances


def test_bad_construction_arguments_are_refused():
    with pytest.raises(ValueError, match="reference robot must be one of"):
        Plant.from_reference("ur6")
    with pytest.raises(ValueError, match="substeps must be >= 1, not 0"):
        _plant("ur5", substeps=0)
    with pytest.raises(TypeError, match="substeps must be an int, not 1.5"):
        _plant("ur5", substeps=1.5)
    with pytest.raises(ValueError, match="encoder_counts must be >= 2"):
        _plant("ur5", encoder_counts=1)
    with pytest.raises(ValueError, match="velocity must be one of"):
        _plant("ur5", velocity="kalman")
    with pytest.raises(ValueError, match=r"noise \(rad\) must be finite and >= 0"):
        _plant("ur5", noise=-1e-3)
    with pytest.raises(ValueError, match=r"control_period \(s\) must be > 0"):
        _plant("ur5", control_period=0)
    with pytest.raises(ValueError, match="contact_timeconst must be >= 2 timesteps"):
        _plant("ur5", contact_timeconst=1e-4)
    with pytest.raises(ValueError, match=r"plate size \(half-extents, m\) must be > 0"):
        Plate([0, 0, 0], [0.1, 0.0, 0.1])
    with pytest.raises(ValueError, match="plate rotation must be a rotation matrix"):
        Plate([0, 0, 0], rotation=2 * np.eye(3))
    with pytest.raises(ValueError, match=r"q \(rad\) must have shape \(6,\)"):
        _plant("ur5").reset(np.zeros(7))


def test_unresolvable_mesh_is_a_clear_error(tmp_path, monkeypatch):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(
        '<robot name="arm"><link name="base"/>'
        '<link name="l1"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"'
        ' ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
        '<mesh filename="package://nowhere/l1.stl"/></geometry></collision></link>'
        '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="5" velocity="1"/></joint>'
        '</robot>')
    with pytest.raises(FileNotFoundError, match="mesh 'package://nowhere/l1.stl' not found"):
        Plant.from_urdf(urdf, meshes=True)
    plant = Plant.from_urdf(urdf)                    # without meshes it builds
    assert plant.n == 1 and plant.tau_max[0] == 5.0
    # A continuous joint without an effort limit: no range, no clipping.
    urdf.write_text(urdf.read_text().replace('type="revolute"', 'type="continuous"')
                    .replace(' effort="5"', ''))
    plant = Plant.from_urdf(urdf, encoder_counts=None)
    assert plant.tau_max[0] == math.inf
    assert not plant.step([1e4])[0] and plant.torque[0] == 1e4
    plant.run([10.0], 1000)
    assert plant.state.q[0] > 2 * math.pi            # turns past a revolution
    with pytest.raises(ValueError, match=r"must be within \+-1e\+10 \(MuJoCo ignores"):
        plant.step([1e25])
    monkeypatch.chdir(tmp_path)                      # MuJoCo logs its warning to MUJOCO_LOG.TXT
    with pytest.raises(plant_module.PlantInstabilityError, match="became unstable"):
        plant.run([1e9], 10)                         # diverges: said, not hidden


def test_massless_moving_link_is_a_clear_error(tmp_path):
    urdf = tmp_path / "massless.urdf"
    urdf.write_text(
        '<robot name="arm"><link name="base"/><link name="l1"/>'
        '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="3" velocity="1"/></joint>'
        '</robot>')
    with pytest.raises(PlantError, match=r"MuJoCo cannot compile the plant of .*massless.urdf"
                                         r".*mass and inertia of moving bodies"):
        Plant.from_urdf(urdf)


def test_default_configuration_is_inside_the_joint_ranges():
    plant = _plant("panda")
    low, high = plant.robot.q_limits()
    q = plant.default_configuration()
    assert np.all((low < q) & (q < high))
    np.testing.assert_array_equal(q[[0, 1, 2, 4, 5, 6]], 0.0)
    np.testing.assert_array_equal(plant.state.q, q)


# ----------------------------------------------------------------------------------------------
# Pictures
# ----------------------------------------------------------------------------------------------

def test_render_draws_the_scene_or_says_there_is_no_gl(tmp_path):
    render = pytest.importorskip("linkdyn.sim.render")
    plant = _plant("ur5", tool_offset=(0, 0.2, 0))
    plant.reset(np.array([0.3, -1.9, 1.9, -1.5, -1.5, 0.0]))
    plant.set_payload(0.8, [0, 0.13, 0])
    try:
        path = render.render(plant, tmp_path / "scene.png", width=160, height=120)
    except render.RenderError as error:
        pytest.skip(f"no OpenGL here: {error}")
    import matplotlib.image

    image = matplotlib.image.imread(path)
    assert image.shape[:2] == (120, 160)
    assert image[..., :3].std() > 0.04          # not a blank frame
    with pytest.raises(ValueError, match="exceeds the offscreen buffer"):
        render.render_image(plant, width=4000, height=120)


def test_render_without_gl_raises_render_error(monkeypatch):
    render = pytest.importorskip("linkdyn.sim.render")

    def no_context(*args, **kwargs):
        raise RuntimeError("gladLoadGL error")

    monkeypatch.setattr(render.mujoco, "Renderer", no_context)
    with pytest.raises(render.RenderError, match="install libosmesa6 and set MUJOCO_GL=osmesa"):
        render.render_image(_plant("ur5"), width=64, height=48)


def test_mass_matrix_equals_linkdyns_joint_space_inertia():
    plant = _plant("ur5")
    rng = np.random.default_rng(11)
    for _ in range(5):
        q = rng.uniform(-np.pi, np.pi, plant.n)
        np.testing.assert_allclose(plant.mass_matrix(q), joint_space_inertia(plant.robot, q),
                                   rtol=1e-9, atol=1e-10)
