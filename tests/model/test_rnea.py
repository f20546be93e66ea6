"""The float model: rnea, its regressor and the per-link helpers.

* ``rnea`` equals an independent, state-by-state Newton-Euler written here with 3 x 3 matrices
  (the per-node algorithm of docs/architecture.md), on random robots: random DH (twists 0,
  +-pi/2, pi and arbitrary), random
  physically consistent bodies, massless links, friction, a turned base, any batch shape.
* ``regressor @ parameters == rnea`` to 1e-12 relative, for the robot's parameters and for
  other physically consistent parameters, on the same robots and batch shapes; broadcasting of
  q, qd, qdd; external wrenches; friction columns; chunked batches; empty batches.
"""

import importlib
import math

import numpy as np
import pytest

from linkdyn.model import (Friction, Link, Robot, forward_recursion, link_regressor, load_robot,
                           regressor, rnea)
from linkdyn.model.rnea import (friction_regressor, joint_rotation, link_offset_vector, rotate,
                                rotate_transpose, skew)

rnea_module = importlib.import_module("linkdyn.model.rnea")

RTOL = 1e-12
TWISTS = [0.0, math.pi / 2, -math.pi / 2, math.pi, 0.3, -1.1]
BATCHES = [(), (7,), (3, 4)]


# ----------------------------------------------------------------------------------------------
# Random robots and an independent reference
# ----------------------------------------------------------------------------------------------

def random_rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def random_link(rng, index, massless=False):
    twist = TWISTS[rng.integers(len(TWISTS))]
    a = 0.0 if rng.random() < 0.3 else rng.uniform(-0.5, 0.5)
    d = 0.0 if rng.random() < 0.3 else rng.uniform(-0.5, 0.5)
    if massless:
        mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    else:
        mass = rng.uniform(0.1, 5.0)
        com = rng.uniform(-0.3, 0.3, 3)
        s = rng.uniform(1e-3, 5e-2, 3)
        rot = random_rotation(rng)
        inertia = rot @ np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]]) @ rot.T
        inertia = 0.5 * (inertia + inertia.T)
    friction = Friction(coulomb=rng.uniform(0, 2), viscous=rng.uniform(0, 1),
                        offset=rng.uniform(-0.5, 0.5), steepness=rng.uniform(10, 200))
    return Link(f"link{index}", a=a, d=d, alpha=twist, offset=rng.uniform(-math.pi, math.pi),
                mass=mass, com=com, inertia=inertia, friction=friction)


def random_robot(rng, n, friction=True):
    links = [random_link(rng, i, massless=(i == 0 and n > 2)) for i in range(n)]
    base = np.eye(4)
    base[:3, :3] = random_rotation(rng)
    base[:3, 3] = rng.uniform(-1, 1, 3)
    robot = Robot(f"random{n}", tuple(links), gravity=[0.3, -0.2, -9.81], base=base)
    return robot if friction else robot.without_friction()


def random_states(rng, n, batch):
    return tuple(rng.uniform(-lim, lim, batch + (n,)) for lim in (math.pi, 2.0, 5.0))


def reference_rnea(robot, q, qd, qdd, f_ext=None, gravity=None):
    """Newton-Euler of one state with explicit 3 x 3 matrices (the per-node algorithm of
    docs/architecture.md)."""
    g = robot.gravity if gravity is None else np.asarray(gravity, dtype=float)
    z = np.array([0.0, 0.0, 1.0])
    omega, omega_dot, p_ddot = np.zeros(3), np.zeros(3), -robot.base[:3, :3].T @ g
    frames = []
    for i, link in enumerate(robot.links):
        theta = q[i] + link.offset
        ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(link.alpha), \
            math.sin(link.alpha)
        rot = np.array([[ct, -st * ca, st * sa], [st, ct * ca, -ct * sa], [0.0, sa, ca]])
        r = np.array([link.a, link.d * sa, link.d * ca])
        omega_new = rot.T @ (omega + qd[i] * z)
        omega_dot = rot.T @ (omega_dot + qdd[i] * z + qd[i] * np.cross(omega, z))
        omega = omega_new
        p_ddot = rot.T @ p_ddot + np.cross(omega_dot, r) + np.cross(omega, np.cross(omega, r))
        frames.append((rot, r, omega, omega_dot, p_ddot))
    tau = np.zeros(robot.n)
    f_next, n_next = np.zeros(3), np.zeros(3)     # wrench of link i+1 on i, in frame i
    for i in reversed(range(robot.n)):
        link = robot.links[i]
        rot, r, omega, omega_dot, p_ddot = frames[i]
        mc, inertia = link.mass * link.com, link.inertia_origin
        f = link.mass * p_ddot + np.cross(omega_dot, mc) + np.cross(omega, np.cross(omega, mc))
        moment = np.cross(mc, p_ddot) + inertia @ omega_dot + np.cross(omega, inertia @ omega)
        f, moment = f + f_next, moment + n_next      # moment about the origin of frame i
        if f_ext is not None:
            f, moment = f + f_ext[i, :3], moment + f_ext[i, 3:]
        mu = moment + np.cross(r, f)                 # about the origin of frame i-1
        tau[i] = mu @ (rot.T @ z)
        f_next, n_next = rot @ f, rot @ mu
    for i, link in enumerate(robot.links):
        fr = link.friction
        tau[i] += fr.coulomb * math.atan(fr.steepness * qd[i]) + fr.viscous * qd[i] + fr.offset
    return tau


def reference_batch(robot, q, qd, qdd, f_ext=None, gravity=None):
    shape = np.broadcast_shapes(q.shape, qd.shape, qdd.shape)
    q, qd, qdd = (np.broadcast_to(x, shape).reshape(-1, robot.n) for x in (q, qd, qdd))
    if f_ext is not None:
        f_ext = np.broadcast_to(f_ext, shape[:-1] + (robot.n, 6)).reshape(-1, robot.n, 6)
    taus = [reference_rnea(robot, q[k], qd[k], qdd[k], None if f_ext is None else f_ext[k],
                           gravity) for k in range(q.shape[0])]
    return np.array(taus).reshape(shape)


def assert_close(actual, expected, rtol=RTOL):
    assert actual.shape == expected.shape
    scale = max(np.max(np.abs(expected), initial=0.0), 1.0)
    error = np.max(np.abs(actual - expected), initial=0.0)
    assert error <= rtol * scale, (error, scale)


ROBOTS = [(seed, n) for seed, n in enumerate([1, 2, 3, 6, 7, 9])]


# ----------------------------------------------------------------------------------------------
# rnea and the regressor
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("seed, n", ROBOTS)
def test_rnea_equals_an_independent_newton_euler(seed, n, batch):
    rng = np.random.default_rng(seed)
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, batch)
    tau = rnea(robot, q, qd, qdd)
    assert tau.shape == batch + (n,)
    assert_close(tau, reference_batch(robot, q, qd, qdd))


@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("seed, n", ROBOTS)
def test_regressor_times_parameters_is_rnea(seed, n, batch):
    rng = np.random.default_rng(100 + seed)
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, batch)
    y = regressor(robot, q, qd, qdd)
    assert y.shape == batch + (n, 13 * n) and y.dtype == np.float64
    assert y.flags.c_contiguous
    assert_close(y @ robot.parameters(), rnea(robot, q, qd, qdd))
    # Blocks below the diagonal are zero: link j's parameters do not reach tau_i for j < i.
    for i in range(n):
        assert np.all(y[..., i, :10 * i] == 0.0)
    # Y does not depend on the parameters: other consistent parameters, same Y.
    other = random_robot(np.random.default_rng(1000 + seed), n)
    other = robot.with_parameters(other.parameters())
    assert_close(y @ other.parameters(), rnea(other, q, qd, qdd))


@pytest.mark.parametrize("name", ["puma560", "ur5", "ur10"])
def test_regressor_and_rnea_of_the_builtin_robots(name):
    robot = load_robot(name)
    rng = np.random.default_rng(7)
    q, qd, qdd = random_states(rng, robot.n, (50,))
    tau = rnea(robot, q, qd, qdd)
    assert_close(tau, reference_batch(robot, q, qd, qdd))
    assert_close(regressor(robot, q, qd, qdd) @ robot.parameters(), tau)


def test_q_qd_qdd_broadcast_against_each_other():
    rng = np.random.default_rng(3)
    robot = random_robot(rng, 5)
    q = rng.uniform(-3, 3, (5,))
    qd = rng.uniform(-2, 2, (4, 1, 5))
    qdd = rng.uniform(-5, 5, (3, 5))
    shape = (4, 3, 5)
    full = [np.broadcast_to(x, shape).copy() for x in (q, qd, qdd)]
    tau = rnea(robot, q, qd, qdd)
    y = regressor(robot, q, qd, qdd)
    assert tau.shape == shape and y.shape == shape + (65,)
    np.testing.assert_array_equal(tau, rnea(robot, *full))
    np.testing.assert_array_equal(y, regressor(robot, *full))
    assert_close(tau, reference_batch(robot, q, qd, qdd))
    assert_close(y @ robot.parameters(), tau)
    # A batch of one and a single state agree.
    np.testing.assert_array_equal(rnea(robot, q[None], qd[0, 0][None], qdd[0][None])[0],
                                  rnea(robot, q, qd[0, 0], qdd[0]))


def test_gravity_argument_overrides_the_robot_gravity():
    rng = np.random.default_rng(4)
    robot = random_robot(rng, 4)
    q, qd, qdd = random_states(rng, 4, (6,))
    gravity = np.array([1.0, 2.0, -3.0])
    tau = rnea(robot, q, qd, qdd, gravity=gravity)
    assert_close(tau, reference_batch(robot, q, qd, qdd, gravity=gravity))
    y = regressor(robot, q, qd, qdd, gravity=gravity)
    assert_close(y @ robot.parameters(), tau)
    # Without gravity and motion, only the friction offsets remain.
    zero = np.zeros(4)
    np.testing.assert_allclose(rnea(robot, q[0], zero, zero, gravity=np.zeros(3)),
                               [link.friction.offset for link in robot.links], rtol=0,
                               atol=1e-15)


@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_external_wrench(batch):
    rng = np.random.default_rng(5)
    n = 6
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, batch)
    f_ext = rng.normal(size=batch + (n, 6))
    tau = rnea(robot, q, qd, qdd, f_ext=f_ext)
    assert_close(tau, reference_batch(robot, q, qd, qdd, f_ext=f_ext))
    # Linear in f_ext, on top of the free motion.
    zero = rnea(robot, q, qd, qdd, f_ext=np.zeros(batch + (n, 6)))
    np.testing.assert_array_equal(zero, rnea(robot, q, qd, qdd))
    twice = rnea(robot, q, qd, qdd, f_ext=2 * f_ext)
    assert_close(twice - zero, 2 * (tau - zero))
    # One wrench for all states broadcasts.
    one = rnea(robot, q, qd, qdd, f_ext=f_ext.reshape(-1, n, 6)[0])
    assert_close(one, reference_batch(robot, q, qd, qdd, f_ext=f_ext.reshape(-1, n, 6)[0]))


def test_external_wrench_of_a_carried_point_mass_equals_adding_it_to_the_link():
    """f_ext is the wrench the link exerts on its environment: carrying a point mass m_p at c
    (frame i) takes (m_p a_c, c x m_p a_c), a_c the acceleration of c including -g."""
    rng = np.random.default_rng(6)
    n, carrier, m_p, c = 6, 3, 1.7, np.array([0.1, -0.2, 0.05])
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, (8,))
    _, omega, omega_dot, p_ddot = forward_recursion(robot, q, qd, qdd)[carrier]
    a_c = p_ddot + np.cross(omega_dot, c) + np.cross(omega, np.cross(omega, c))
    f_ext = np.zeros((8, n, 6))
    f_ext[:, carrier, :3] = m_p * a_c
    f_ext[:, carrier, 3:] = np.cross(c, m_p * a_c)
    link = robot.links[carrier]
    mass = link.mass + m_p
    com = (link.mass * link.com + m_p * c) / mass
    inertia = (link.inertia_origin + m_p * (c @ c * np.eye(3) - np.outer(c, c))
               - mass * (com @ com * np.eye(3) - np.outer(com, com)))
    heavier = Robot(robot.name, robot.links[:carrier] + (
        Link(link.name, a=link.a, d=link.d, alpha=link.alpha, offset=link.offset, mass=mass,
             com=com, inertia=inertia, friction=link.friction),) + robot.links[carrier + 1:],
        gravity=robot.gravity, base=robot.base)
    assert_close(rnea(robot, q, qd, qdd, f_ext=f_ext), rnea(heavier, q, qd, qdd))


def test_external_wrench_shape_is_checked():
    robot = load_robot("puma560")
    with pytest.raises(ValueError, match=r"f_ext must have shape \(\.\.\., 6, 6\)"):
        rnea(robot, np.zeros(6), np.zeros(6), np.zeros(6), f_ext=np.zeros((6, 3)))


def test_friction_columns_and_torque():
    rng = np.random.default_rng(8)
    n = 5
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, (3, 2))
    y = regressor(robot, q, qd, qdd)
    expected = friction_regressor(qd, robot.steepness)          # (3, 2, n, 3)
    friction_part = y[..., 10 * n:]
    for i in range(n):
        np.testing.assert_array_equal(friction_part[..., i, 3 * i:3 * i + 3], expected[..., i, :])
        others = np.delete(friction_part[..., i, :], np.s_[3 * i:3 * i + 3], axis=-1)
        assert np.all(others == 0.0)
    fr = np.stack([link.friction.parameters for link in robot.links])
    difference = rnea(robot, q, qd, qdd) - rnea(robot.without_friction(), q, qd, qdd)
    assert_close(difference, np.einsum("...ij,ij->...i", expected, fr))
    # The regressor ignores the friction values (only the steepness): same Y without them.
    np.testing.assert_array_equal(y, regressor(robot.without_friction(), q, qd, qdd))


def test_chunked_batches_equal_one_chunk(monkeypatch):
    rng = np.random.default_rng(9)
    n = 7
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, (1001,))
    f_ext = rng.normal(size=(1001, n, 6))
    tau, y = rnea(robot, q, qd, qdd, f_ext=f_ext), regressor(robot, q, qd, qdd)
    # Small workspace: uneven chunks and several tiles per chunk.
    monkeypatch.setattr(rnea_module, "_WORKSPACE_DOUBLES", 1)
    monkeypatch.setattr(rnea_module, "_MIN_CHUNK", 300)
    monkeypatch.setattr(rnea_module, "_TILE_STATES", 64)
    assert len(rnea_module._chunks(1001, 441)) == 4
    np.testing.assert_array_equal(rnea(robot, q, qd, qdd, f_ext=f_ext), tau)
    np.testing.assert_array_equal(regressor(robot, q, qd, qdd), y)
    assert_close(y @ robot.parameters(), rnea(robot, q, qd, qdd))


def test_empty_batch():
    robot = load_robot("ur5")
    empty = np.zeros((0, 6))
    assert rnea(robot, empty, empty, empty).shape == (0, 6)
    assert regressor(robot, empty, empty, empty).shape == (0, 6, 78)
    assert rnea(robot, empty, empty, empty, f_ext=np.zeros((0, 6, 6))).shape == (0, 6)


def test_wrong_arguments_are_rejected():
    robot = load_robot("ur5")
    with pytest.raises(TypeError, match="robot must be a Robot"):
        rnea("ur5", np.zeros(6), np.zeros(6), np.zeros(6))
    with pytest.raises(TypeError, match="robot must be a Robot"):
        regressor(None, np.zeros(6), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match=r"qd must have shape \(\.\.\., 6\)"):
        rnea(robot, np.zeros(6), np.zeros(5), np.zeros(6))
    with pytest.raises(ValueError, match=r"q must have shape \(\.\.\., 6\)"):
        regressor(robot, 0.0, np.zeros(6), np.zeros(6))
    qdd = np.zeros((2, 6))
    qdd[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"qdd holds a non-finite value nan at index \(1, 4\)"):
        rnea(robot, np.zeros(6), np.zeros(6), qdd)
    with pytest.raises(ValueError, match="q holds a non-finite value inf"):
        regressor(robot, np.full(6, np.inf), np.zeros(6), np.zeros(6))


# ----------------------------------------------------------------------------------------------
# Per-link helpers
# ----------------------------------------------------------------------------------------------

def test_forward_recursion_matches_the_reference_and_takes_base_motion():
    rng = np.random.default_rng(10)
    n = 5
    robot = random_robot(rng, n)
    q, qd, qdd = random_states(rng, n, (2, 3))
    nodes = forward_recursion(robot, q, qd, qdd)
    assert len(nodes) == n
    for k in np.ndindex(2, 3):
        omega, omega_dot, p_ddot = np.zeros(3), np.zeros(3), -robot.gravity_base
        for i, link in enumerate(robot.links):
            (ct, st, ca, sa), w, wd, pd = nodes[i]
            theta = q[k][i] + link.offset
            np.testing.assert_allclose([ct[k], st[k]], [math.cos(theta), math.sin(theta)],
                                       rtol=0, atol=1e-15)
            np.testing.assert_allclose([ca, sa], [math.cos(link.alpha), math.sin(link.alpha)],
                                       rtol=0, atol=1e-15)
            rot = np.array([[ct[k], -st[k] * ca, st[k] * sa], [st[k], ct[k] * ca, -ct[k] * sa],
                            [0.0, sa, ca]])
            r = link_offset_vector(link)
            omega_dot = rot.T @ (omega_dot + qdd[k][i] * np.array([0, 0, 1.0])
                                 + qd[k][i] * np.cross(omega, [0, 0, 1.0]))
            omega = rot.T @ (omega + qd[k][i] * np.array([0, 0, 1.0]))
            p_ddot = (rot.T @ p_ddot + np.cross(omega_dot, r)
                      + np.cross(omega, np.cross(omega, r)))
            for got, want in ((w, omega), (wd, omega_dot), (pd, p_ddot)):
                np.testing.assert_allclose(got[k], want, rtol=0, atol=1e-12 * (1 + abs(want).max()))
    # A base that moves: the same as adding its motion to the first node's inputs.
    base = (rng.normal(size=3), rng.normal(size=(2, 3, 3)), rng.normal(size=3))
    moving = forward_recursion(robot, q, qd, qdd, base_motion=base)
    (ct, st, ca, sa), w, wd, pd = moving[0]
    for k in np.ndindex(2, 3):
        rot = np.array([[ct[k], -st[k] * ca, st[k] * sa], [st[k], ct[k] * ca, -ct[k] * sa],
                        [0.0, sa, ca]])
        expected = rot.T @ (base[0] + qd[k][0] * np.array([0, 0, 1.0]))
        np.testing.assert_allclose(w[k], expected, rtol=0, atol=1e-12)


def test_link_regressor_is_eq_12():
    rng = np.random.default_rng(11)
    omega, omega_dot, p_ddot = (rng.normal(size=(4, 3)) for _ in range(3))
    r = rng.normal(size=3)
    w = link_regressor(omega, omega_dot, p_ddot, r)
    assert w.shape == (4, 6, 10)
    s_r, s_w, s_p = skew(np.broadcast_to(r, (4, 3))), skew(omega), skew(p_ddot)
    k = skew(omega_dot) + s_w @ s_w

    def inertia_operator(v):
        x, y, z = v[..., 0], v[..., 1], v[..., 2]
        zero = np.zeros_like(x)
        return np.stack([np.stack([x, y, z, zero, zero, zero], -1),
                         np.stack([zero, x, zero, y, z, zero], -1),
                         np.stack([zero, zero, x, zero, y, z], -1)], -2)

    expected = np.zeros((4, 6, 10))
    expected[:, 0:3, 0] = p_ddot
    expected[:, 0:3, 1:4] = k
    expected[:, 3:6, 0] = np.einsum("bij,bj->bi", s_r, p_ddot)
    expected[:, 3:6, 1:4] = s_r @ k - s_p
    expected[:, 3:6, 4:10] = inertia_operator(omega_dot) + s_w @ inertia_operator(omega)
    np.testing.assert_allclose(w, expected, rtol=0, atol=1e-13)
    # Broadcasting of its arguments, and one state.
    np.testing.assert_allclose(link_regressor(omega[0], omega_dot, p_ddot[0], r),
                               link_regressor(np.broadcast_to(omega[0], (4, 3)), omega_dot,
                                              np.broadcast_to(p_ddot[0], (4, 3)), r),
                               rtol=0, atol=0)
    assert link_regressor(omega[0], omega_dot[0], p_ddot[0], r).shape == (6, 10)


def test_rotations_and_skew():
    rng = np.random.default_rng(12)
    theta, alpha = rng.uniform(-3, 3, (5,)), 0.7
    rotation = joint_rotation(theta, alpha)
    v = rng.normal(size=(5, 3))
    ct, st, ca, sa = rotation
    for k in range(5):
        rot = np.array([[ct[k], -st[k] * ca, st[k] * sa], [st[k], ct[k] * ca, -ct[k] * sa],
                        [0.0, sa, ca]])
        np.testing.assert_allclose(rotate(rotation, v)[k], rot @ v[k], rtol=0, atol=1e-15)
        np.testing.assert_allclose(rotate_transpose(rotation, v)[k], rot.T @ v[k], rtol=0,
                                   atol=1e-15)
    np.testing.assert_allclose(rotate_transpose(rotation, rotate(rotation, v)), v, rtol=0,
                               atol=1e-15)
    np.testing.assert_allclose(skew(v) @ v[:, ::-1, None], np.cross(v, v[:, ::-1])[..., None],
                               rtol=0, atol=1e-15)
