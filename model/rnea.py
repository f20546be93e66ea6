"""Inverse dynamics in the source paper's per-link form: recursive Newton-Euler and its regressor.

The recursion is written link by link exactly as a LinkDyn node computes it (paper Sect. 2,
eqs. 5-18; DESIGN.md Sect. 3), so that the float model, the regressor and the fixed-point golden
model share one structure:

forward, node ``i`` (inputs from node ``i-1``, all in frame ``i``)::

    omega_i     = R^T (omega_{i-1} + qd_i z)
    omega_dot_i = R^T (omega_dot_{i-1} + qdd_i z + qd_i omega_{i-1} x z)
    p_ddot_i    = R^T p_ddot_{i-1} + omega_dot_i x r + omega_i x (omega_i x r)

backward, node ``i`` (input: the wrench of node ``i+1``, already rotated into frame ``i``)::

    (f_i, mu_i) = W_i pi_i + T (f'_{i+1}, mu'_{i+1}) + (f_ext_i, mu_ext_i)      eq. (9)
    tau_i       = mu_i . (R^T z) + tau_F(qd_i)                                   eqs. (7), (20)
    (f'_i, mu'_i) = (R f_i, R mu_i)          sent to node i-1

with ``R = Rz(q_i + offset_i) Rx(alpha_i)``, ``z = (0, 0, 1)``, ``r = (a, d sin alpha,
d cos alpha)`` and ``T (f, mu) = (f, r x f + mu)``. ``f_i`` is the force and ``mu_i`` the moment
about the origin of frame ``i-1`` that link ``i-1`` exerts on link ``i``, both in frame ``i``.
Gravity enters as the base acceleration ``p_ddot_0 = -g``.

``W_i`` (eq. 12) factors as ``W_i = T V_i`` with ``V_i`` the link's own wrench about the origin of
frame ``i``, linear in ``pi_i = (m, m c, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)``::

    V_i = [ p_ddot   K      0 ]     K = S(omega_dot) + S(omega) S(omega)          eq. (13)
          [ 0     -S(p_ddot) N ]     N = L(omega_dot) + S(omega) L(omega)          eq. (14)

(``omega_dot x r + omega x (omega x r)`` of the forward step is ``K r``). Both :func:`rnea` and
:func:`regressor` run one shared forward recursion and the per-link terms ``(p_ddot, K, N)``:

* :func:`rnea` applies them to the link's parameters, ``V_i pi_i``, adds the distal wrench and
  applies ``T`` (the backward recursion above);
* :func:`regressor` needs row ``i`` of ``Y`` for block ``j >= i``: the map from link ``j``'s wrench
  to ``tau_i`` through the ``T`` and ``R`` steps of nodes ``j, ..., i``. That map is a row
  ``(a, b)`` acting on ``(f_j, mu_j)``; it is carried *forwards*, the transpose of the backward
  step: at node ``i`` it starts as ``(0, R_i^T z)`` (``tau_i = mu_i . R_i^T z``); through ``T``
  it becomes ``(c, b) = (a + b x r, b)`` (acting on the wrench about the origin of frame ``j``) and
  into frame ``j+1`` ``(R_{j+1}^T c, R_{j+1}^T b)``. Then
  ``Y[i, block j] = (a, b) . W_j = c . V_j[f rows] + b . V_j[mu rows]``.
  ``rnea == regressor @ parameters`` follows from this algebra, not from two separate
  implementations of the dynamics.

Internally the arrays are component-first and batch-last (a vector is three arrays of shape
``(N,)``, the rows of ``Y`` three arrays of shape ``(rows, N)``), so that every numpy operation
runs on contiguous vectors over the states; constants of the robot that are exactly zero (e.g.
``sin alpha = 0``, ``a = 0``, a zero first moment) skip their products. Long batches are worked in
chunks of states that fit the processor's cache.

All public functions broadcast over any number of leading batch dimensions.
"""

from __future__ import annotations

import math

import numpy as np

from .robot import Robot

__all__ = [
    "rnea", "regressor", "forward_recursion", "link_regressor", "friction_regressor",
    "joint_rotation", "link_offset_vector", "rotate", "rotate_transpose", "skew",
]

#: Upper bound on the number of doubles of one row array ``(rows, N)`` of a chunk: the working
#: set of a chunk then stays in a level-2 cache and numpy's temporaries below glibc's mmap
#: threshold (128 KiB).
_CHUNK_ELEMENTS = 16_384

#: Smallest chunk of states (very long chains): keeps numpy's per-call overhead small.
_MIN_CHUNK = 512


# ----------------------------------------------------------------------------------------------
# Public per-link helpers (component-last arrays, shape (..., 3))
# ----------------------------------------------------------------------------------------------

def skew(v):
    """Return the cross-product matrix ``S(v)`` of eq. (13), shape (..., 3, 3)."""
    v = np.asarray(v)
    zero = np.zeros_like(v[..., 0])
    return np.stack([
        np.stack([zero, -v[..., 2], v[..., 1]], axis=-1),
        np.stack([v[..., 2], zero, -v[..., 0]], axis=-1),
        np.stack([-v[..., 1], v[..., 0], zero], axis=-1),
    ], axis=-2)


def joint_rotation(theta, alpha):
    """Return the sines and cosines that define ``R^{i-1}_i = Rz(theta) Rx(alpha)``.

    Parameters
    ----------
    theta : array_like, shape (...)
        Joint angle ``q + offset``, rad.
    alpha : float
        DH twist, rad.

    Returns
    -------
    tuple of numpy.ndarray
        ``(cos theta, sin theta, cos alpha, sin alpha)``, broadcastable.
    """
    return np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)


def rotate_transpose(rotation, v):
    """Return ``R^T v`` for ``R = Rz(theta) Rx(alpha)`` given as ``(ct, st, ca, sa)``.

    ``v`` has shape (..., 3); the result is ``v`` expressed in frame ``i`` when ``v`` is in frame
    ``i-1``.
    """
    v = np.asarray(v)
    return np.stack(np.broadcast_arrays(*_rot_t(rotation, (v[..., 0], v[..., 1], v[..., 2]))),
                    axis=-1)


def rotate(rotation, v):
    """Return ``R v`` for ``R = Rz(theta) Rx(alpha)`` given as ``(ct, st, ca, sa)``.

    ``v`` has shape (..., 3) in frame ``i``; the result is in frame ``i-1``.
    """
    v = np.asarray(v)
    return np.stack(np.broadcast_arrays(*_rot(rotation, (v[..., 0], v[..., 1], v[..., 2]))),
                    axis=-1)


def link_offset_vector(link):
    """Return ``r^i_{i-1,i} = (a, d sin alpha, d cos alpha)``, shape (3,), m, in frame ``i``."""
    return np.array([link.a, link.d * np.sin(link.alpha), link.d * np.cos(link.alpha)])


def forward_recursion(robot, q, qd, qdd, base_motion=None):
    """Run the forward recursion of every node.

    Parameters
    ----------
    robot : Robot
        The robot (n links).
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s) and accelerations (rad/s^2).
    base_motion : tuple of array_like, optional
        ``(omega_0, omega_dot_0, p_ddot_0)`` of DH frame 0, each shape (..., 3), in frame 0
        (rad/s, rad/s^2, m/s^2). ``p_ddot_0`` must include ``-g``. Default: a fixed base,
        ``(0, 0, -robot.gravity_base)``.

    Returns
    -------
    list of tuple
        Per node ``i``: ``(rotation, omega_i, omega_dot_i, p_ddot_i)``, the vectors with shape
        (..., 3) in frame ``i``; ``rotation`` as for :func:`rotate`.

    Notes
    -----
    The same node code (:func:`_forward_node`) as :func:`rnea` and :func:`regressor`, on the
    whole batch at once; only the output is arranged component-last.
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    batch = q.shape[:-1]
    count = math.prod(batch)
    rows = [_state_rows(x, robot.n) for x in (q, qd, qdd)]
    if base_motion is None:
        base = (_vector_constant(np.zeros(3)), _vector_constant(np.zeros(3)),
                _vector_constant(-robot.gravity_base))
    else:
        base = tuple(_vector_rows(np.broadcast_to(np.asarray(v, dtype=float), batch + (3,)),
                                  count) for v in base_motion)
    links = _link_constants(robot)
    nodes = []
    omega, omega_dot, p_ddot = base
    for i, link in enumerate(links):
        rotation, omega, omega_dot, p_ddot, _ = _forward_node(
            link, rows[0][i], rows[1][i], rows[2][i], omega, omega_dot, p_ddot)
        ct, st, ca, sa = rotation
        nodes.append(((ct.reshape(batch), st.reshape(batch), np.cos(link.alpha),
                       np.sin(link.alpha)),
                      _vector_out(omega, batch, count), _vector_out(omega_dot, batch, count),
                      _vector_out(p_ddot, batch, count)))
    return nodes


def link_regressor(omega, omega_dot, p_ddot, r):
    """Return the paper's ``W_i`` (eq. 12): the wrench of one link, linear in its parameters.

    Parameters
    ----------
    omega, omega_dot, p_ddot : array_like, shape (..., 3)
        Angular velocity (rad/s), angular acceleration (rad/s^2) and linear acceleration of the
        origin of frame ``i`` including ``-g`` (m/s^2), in frame ``i``.
    r : array_like, shape (3,)
        ``r^i_{i-1,i}``, m, in frame ``i``.

    Returns
    -------
    numpy.ndarray, shape (..., 6, 10)
        ``(f_i, mu_i) = W_i pi_i`` for the parameters of eq. (11); ``mu_i`` is the moment about
        the origin of frame ``i-1``.

    Notes
    -----
    Assembled from the per-link terms ``(p_ddot, K, N)`` that :func:`rnea` and
    :func:`regressor` use (:func:`_link_terms`): ``W_i = T V_i``, see the module docstring.
    """
    omega, omega_dot, p_ddot = (np.asarray(v, dtype=float) for v in (omega, omega_dot, p_ddot))
    batch = np.broadcast_shapes(omega.shape, omega_dot.shape, p_ddot.shape)[:-1]
    omega, omega_dot, p_ddot = (np.broadcast_to(v, batch + (3,))
                                for v in (omega, omega_dot, p_ddot))
    split = [tuple(v[..., k] for k in range(3)) for v in (omega, omega_dot, p_ddot)]
    k_matrix, n_matrix = _link_terms(split[0], split[1])
    p = split[2]
    r = tuple(float(x) for x in np.asarray(r, dtype=float))
    v = np.zeros(batch + (6, 10))
    for row in range(3):
        v[..., row, 0] = p[row]
        for col in range(3):
            v[..., row, 1 + col] = k_matrix[row][col]
        for col in range(6):
            v[..., 3 + row, 4 + col] = n_matrix[row][col]
    # -S(p_ddot) in the first-moment columns of the moment rows.
    v[..., 3, 2], v[..., 3, 3] = p[2], -p[2 - 1]
    v[..., 4, 1], v[..., 4, 3] = -p[2], p[0]
    v[..., 5, 1], v[..., 5, 2] = p[1], -p[0]
    # T: the moment of the link's own force about the origin of frame i-1.
    f = v[..., 0:3, :]
    v[..., 3, :] += r[1] * f[..., 2, :] - r[2] * f[..., 1, :]
    v[..., 4, :] += r[2] * f[..., 0, :] - r[0] * f[..., 2, :]
    v[..., 5, :] += r[0] * f[..., 1, :] - r[1] * f[..., 0, :]
    return v


def friction_regressor(qd, steepness):
    """Return the friction regressor of eq. (20), shape (..., n, 3): ``(atan(k qd), qd, 1)``.

    Parameters
    ----------
    qd : array_like, shape (..., n)
        Joint velocities, rad/s.
    steepness : array_like, shape (n,)
        ``atan`` steepness ``k`` per joint, s/rad.
    """
    qd = np.asarray(qd, dtype=float)
    return np.stack([np.arctan(steepness * qd), qd, np.ones_like(qd)], axis=-1)


# ----------------------------------------------------------------------------------------------
# Component-first kernels. A "vector" is a tuple of three components; a component is a numpy
# array over the states (shape (N,), or (rows, N) for regressor rows) or a Python float for a
# constant (the robot's constants, the fixed base). Arrays returned by these kernels may alias
# their inputs and are never modified in place by a caller.
# ----------------------------------------------------------------------------------------------

def _sum(*terms):
    """Return ``sum(prod(term) for term in terms)`` of arrays and float constants.

    A term is a tuple of factors; float factors are multiplied first, a term whose constant is
    exactly zero is skipped (a structural zero), a constant of +-1 costs no multiplication.
    Returns a float when no array is left.
    """
    acc = None
    owned = False
    constant = 0.0
    for term in terms:
        coefficient = 1.0
        arrays = []
        for factor in term:
            if isinstance(factor, np.ndarray):
                arrays.append(factor)
            else:
                coefficient *= factor
        if coefficient == 0.0:
            continue
        if not arrays:
            constant += coefficient
            continue
        if len(arrays) == 1:
            value, fresh = arrays[0], False
        else:
            value, fresh = arrays[0] * arrays[1], True
            for factor in arrays[2:]:
                value *= factor
        if coefficient not in (1.0, -1.0):
            if fresh:
                value *= coefficient
            else:
                value, fresh = value * coefficient, True
            negative = False
        else:
            negative = coefficient == -1.0
        if acc is None:
            if negative:
                acc, owned = (np.negative(value, out=value) if fresh else -value), True
            else:
                acc, owned = value, fresh
        elif owned and acc.ndim >= value.ndim:
            if negative:
                acc -= value
            else:
                acc += value
        else:
            acc, owned = (acc - value) if negative else (acc + value), True
    if acc is None:
        return constant
    if constant != 0.0:
        acc = acc + constant
    return acc


def _rot_t(rotation, v):
    """``R^T v`` (frame ``i-1`` to frame ``i``) of a component-first vector."""
    ct, st, ca, sa = rotation
    x, y, z = v
    u = _sum((ct, x), (st, y))
    w = _sum((ct, y), (-1.0, st, x))
    return u, _sum((ca, w), (sa, z)), _sum((ca, z), (-sa, w))


def _rot(rotation, v):
    """``R v`` (frame ``i`` to frame ``i-1``) of a component-first vector."""
    ct, st, ca, sa = rotation
    x, y, z = v
    w = _sum((ca, y), (-sa, z))
    return _sum((ct, x), (-1.0, st, w)), _sum((st, x), (ct, w)), _sum((sa, y), (ca, z))


def _cross(u, v):
    """``u x v`` of component-first vectors."""
    return (_sum((u[1], v[2]), (-1.0, u[2], v[1])),
            _sum((u[2], v[0]), (-1.0, u[0], v[2])),
            _sum((u[0], v[1]), (-1.0, u[1], v[0])))


def _matvec(m, v):
    """``m v`` for a 3 x 3 matrix given as nested tuples of components."""
    return tuple(_sum((m[k][0], v[0]), (m[k][1], v[1]), (m[k][2], v[2])) for k in range(3))


def _link_terms(omega, omega_dot):
    """Return ``K`` (eq. 13) and ``N`` (eq. 14) of one link from its ``omega``, ``omega_dot``.

    ``K = S(omega_dot) + S(omega) S(omega)`` (3 x 3) and ``N = L(omega_dot) + S(omega) L(omega)``
    (3 x 6, columns ``I_xx, I_xy, I_xz, I_yy, I_yz, I_zz``), so that ``K (m c)`` is
    ``omega_dot x m c + omega x (omega x m c)`` and ``N (I_xx, ..., I_zz)`` is
    ``I omega_dot + omega x (I omega)``. Nested tuples of components.
    """
    wx, wy, wz = omega
    ax, ay, az = omega_dot
    xx, yy, zz = _sum((wx, wx)), _sum((wy, wy)), _sum((wz, wz))
    xy, xz, yz = _sum((wx, wy)), _sum((wx, wz)), _sum((wy, wz))
    k = ((_sum((-1.0, yy), (-1.0, zz)), _sum((xy,), (-1.0, az)), _sum((xz,), (ay,))),
         (_sum((xy,), (az,)), _sum((-1.0, xx), (-1.0, zz)), _sum((yz,), (-1.0, ax))),
         (_sum((xz,), (-1.0, ay)), _sum((yz,), (ax,)), _sum((-1.0, xx), (-1.0, yy))))
    n = ((ax, _sum((ay,), (-1.0, xz)), _sum((az,), (xy,)), _sum((-1.0, yz)),
          _sum((yy,), (-1.0, zz)), yz),
         (xz, _sum((ax,), (yz,)), _sum((zz,), (-1.0, xx)), ay, _sum((az,), (-1.0, xy)),
          _sum((-1.0, xz))),
         (_sum((-1.0, xy)), _sum((xx,), (-1.0, yy)), _sum((ax,), (-1.0, yz)), xy,
          _sum((ay,), (xz,)), az))
    return k, n


def _forward_node(link, q, qd, qdd, omega, omega_dot, p_ddot):
    """One node of the forward recursion (DESIGN.md Sect. 3), component-first.

    Parameters
    ----------
    link : _LinkConstants
        The node's constants.
    q, qd, qdd : numpy.ndarray, shape (N,)
        The joint's position, velocity and acceleration.
    omega, omega_dot, p_ddot : vector
        From node ``i-1``, in frame ``i-1``.

    Returns
    -------
    tuple
        ``(rotation, omega_i, omega_dot_i, p_ddot_i, (K, N))`` in frame ``i``; ``rotation`` is
        ``(ct, st, ca, sa)`` and ``(K, N)`` the link's terms of :func:`_link_terms`.
    """
    theta = q + link.offset if link.offset != 0.0 else q
    rotation = (np.cos(theta), np.sin(theta), link.ca, link.sa)
    wx, wy, wz = omega
    w = (wx, wy, _sum((wz,), (qd,)))
    wd = (_sum((omega_dot[0],), (qd, wy)), _sum((omega_dot[1],), (-1.0, qd, wx)),
          _sum((omega_dot[2],), (qdd,)))
    omega = _rot_t(rotation, w)
    omega_dot = _rot_t(rotation, wd)
    terms = _link_terms(omega, omega_dot)
    # omega_dot x r + omega x (omega x r) = K r.
    kr = _matvec(terms[0], link.r)
    p_rot = _rot_t(rotation, p_ddot)
    p_ddot = tuple(_sum((p_rot[k],), (kr[k],)) for k in range(3))
    return rotation, omega, omega_dot, p_ddot, terms


def _link_wrench(link, p_ddot, terms):
    """``V_i pi_i``: the link's own wrench about the origin of frame ``i`` (eqs. 9-12).

    ``f = m p_ddot + K (m c)``, ``mu = (m c) x p_ddot + N (I_xx, ..., I_zz)``.
    """
    k, n = terms
    m, mc, inertia = link.mass, link.first_moment, link.inertia6
    f = tuple(_sum((m, p_ddot[row]), (mc[0], k[row][0]), (mc[1], k[row][1]),
                   (mc[2], k[row][2])) for row in range(3))
    mc_x_p = _cross(mc, p_ddot)
    mu = tuple(_sum((mc_x_p[row],), *((inertia[col], n[row][col]) for col in range(6)))
               for row in range(3))
    return f, mu


def _rows_times_link(out, tmp, c, b, p, terms):
    """Write ``c . V[f rows] + b . V[mu rows]`` (10 columns) into ``out``, shape (rows, 10, N).

    ``c`` and ``b`` are rows acting on the wrench about the origin of frame ``j`` (arrays of
    shape (rows, N)); ``p``, ``terms = (K, N)`` the link's ``V_j`` (eq. 12).
    """
    k, n = terms
    # col 0 (m):            c . p
    # cols 1-3 (m c):       c^T K - b^T S(p)
    # cols 4-9 (I):         b^T N
    columns = [((c[0], p[0]), (c[1], p[1]), (c[2], p[2]))]
    columns.append(((c[0], k[0][0]), (c[1], k[1][0]), (c[2], k[2][0]), (-1.0, b[1], p[2]),
                    (b[2], p[1])))
    columns.append(((c[0], k[0][1]), (c[1], k[1][1]), (c[2], k[2][1]), (b[0], p[2]),
                    (-1.0, b[2], p[0])))
    columns.append(((c[0], k[0][2]), (c[1], k[1][2]), (c[2], k[2][2]), (-1.0, b[0], p[1]),
                    (b[1], p[0])))
    for col in range(6):
        columns.append(((b[0], n[0][col]), (b[1], n[1][col]), (b[2], n[2][col])))
    for col, products in enumerate(columns):
        _products_into(out[:, col, :], tmp, products)


def _products_into(out, tmp, products):
    """``out[...] = sum of products``, each ``(row, state)`` or ``(-1.0, row, state)``.

    ``row`` is an array with the shape of ``out``; ``state`` an array (N,) or a float (a zero
    float skips the product). ``tmp`` is a scratch array with the shape of ``out``.
    """
    first = True
    for product in products:
        sign, x, y = product if len(product) == 3 else (1.0, *product)
        if not isinstance(y, np.ndarray):
            y = sign * y
            if y == 0.0:
                continue
            sign = 1.0
        if first:
            np.multiply(x, y, out=out)
            if sign == -1.0:
                np.negative(out, out=out)
            first = False
        else:
            np.multiply(x, y, out=tmp)
            if sign == -1.0:
                out -= tmp
            else:
                out += tmp
    if first:
        out.fill(0.0)


def _rotate_rows_t(rotation, src, dst, tmp):
    """``dst = R^T src`` for rows, component-first (three arrays (rows, N) each), via ``out=``.

    ``tmp`` is a scratch array of shape (rows, N); ``src`` is left unchanged.
    """
    ct, st, ca, sa = rotation
    x, y, z = src
    dx, dy, dz = dst
    # u = ct x + st y -> dx;  w = ct y - st x -> dy
    np.multiply(x, ct, out=dx)
    dx += np.multiply(y, st, out=tmp)
    np.multiply(y, ct, out=dy)
    dy -= np.multiply(x, st, out=tmp)
    # (ca w + sa z, ca z - sa w); sin or cos alpha may be a structural zero.
    if sa == 0.0:
        np.multiply(z, ca, out=dz)
        dy *= ca
    elif ca == 0.0:
        np.multiply(dy, -sa, out=dz)
        np.multiply(z, sa, out=dy)
    else:
        np.multiply(z, ca, out=dz)
        dz -= np.multiply(dy, sa, out=tmp)
        dy *= ca
        dy += np.multiply(z, sa, out=tmp)


# ----------------------------------------------------------------------------------------------
# Arguments and constants
# ----------------------------------------------------------------------------------------------

class _LinkConstants:
    """The constants of one node as Python floats: DH, ``r``, ``pi_i``."""

    __slots__ = ("offset", "alpha", "ca", "sa", "r", "mass", "first_moment", "inertia6")

    def __init__(self, link):
        self.offset = float(link.offset)
        self.alpha = float(link.alpha)
        self.ca, self.sa = math.cos(link.alpha), math.sin(link.alpha)
        self.r = tuple(float(x) for x in link_offset_vector(link))
        pi = link.parameters()
        self.mass = float(pi[0])
        self.first_moment = tuple(float(x) for x in pi[1:4])
        self.inertia6 = tuple(float(x) for x in pi[4:10])


def _link_constants(robot):
    return [_LinkConstants(link) for link in robot.links]


def _joint_arrays(robot, q, qd, qdd):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    arrays = []
    for name, value in (("q", q), ("qd", qd), ("qdd", qdd)):
        array = np.asarray(value, dtype=float)
        if array.ndim == 0 or array.shape[-1] != robot.n:
            raise ValueError(f"{name} must have shape (..., {robot.n}) for robot "
                             f"{robot.name!r}, not {array.shape}")
        arrays.append(array)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(np.broadcast_to(a, shape) for a in arrays)


def _state_rows(x, n):
    """(..., n) -> contiguous (n, N): one row of all states per joint."""
    return np.ascontiguousarray(x.reshape(-1, n).T)


def _vector_rows(v, count):
    """(..., 3) -> component-first vector of contiguous (N,) arrays."""
    v = np.ascontiguousarray(v.reshape(count, 3).T)
    return v[0], v[1], v[2]


def _vector_constant(v):
    return tuple(float(x) for x in v)


def _vector_out(v, batch, count):
    """Component-first vector -> array (..., 3)."""
    out = np.empty((count, 3))
    for k in range(3):
        out[:, k] = v[k]
    return out.reshape(batch + (3,))


def _external_wrench(robot, f_ext, batch):
    if f_ext is None:
        return None
    f_ext = np.asarray(f_ext, dtype=float)
    if f_ext.shape[-2:] != (robot.n, 6):
        raise ValueError(f"f_ext must have shape (..., {robot.n}, 6), not {f_ext.shape}")
    return np.broadcast_to(f_ext, batch + (robot.n, 6))


def _chunks(count, rows):
    """Slices of the states worked at once, for ``rows`` regressor rows (1 for rnea)."""
    size = max(_MIN_CHUNK, _CHUNK_ELEMENTS // max(rows, 1))
    return [slice(start, min(start + size, count)) for start in range(0, count, size)]


# ----------------------------------------------------------------------------------------------
# Inverse dynamics and regressor
# ----------------------------------------------------------------------------------------------

def rnea(robot, q, qd, qdd, gravity=None, f_ext=None):
    """Compute the inverse dynamics ``tau = f(q, qd, qdd)`` by the per-link recursion.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute joints).
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2); leading dimensions
        are a batch and broadcast against each other.
    gravity : array_like, shape (3,), optional
        Gravity in the world frame, m/s^2; default ``robot.gravity``.
    f_ext : array_like, shape (..., n, 6), optional
        External wrench on every link: ``(f, mu)``, the force (N) and the moment about the
        origin of DH frame ``i`` (N·m) that link ``i`` *exerts on its environment*, in frame
        ``i``. A payload of mass ``m_p`` at ``c`` held still is ``(-m_p g, c x (-m_p g))`` with
        ``g`` in frame ``i``. It enters eq. (9) like one more distal body.

    Returns
    -------
    numpy.ndarray, shape (..., n)
        Joint torques, N·m, including friction (eq. 20) when the robot has it.

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`Robot`.
    ValueError
        If an array has the wrong trailing dimension.

    Notes
    -----
    Per node: :func:`_forward_node` (forward), then backwards ``V_i pi_i`` (:func:`_link_wrench`)
    plus the distal wrench ``(f', mu')`` and ``f_ext``, all about the origin of frame ``i``;
    ``T`` moves the moment to the origin of frame ``i-1`` (``mu += r x f``), ``tau_i = mu .
    R^T z`` and ``(R f, R mu)`` goes to node ``i-1``.
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    if gravity is not None:
        robot = _with_gravity(robot, gravity)
    n = robot.n
    batch = q.shape[:-1]
    count = math.prod(batch)
    f_ext = _external_wrench(robot, f_ext, batch)
    q_rows, qd_rows, qdd_rows = (_state_rows(x, n) for x in (q, qd, qdd))
    if f_ext is not None:
        ext_rows = np.ascontiguousarray(np.moveaxis(f_ext.reshape(count, n, 6), 0, -1))
    links = _link_constants(robot)
    base = (_vector_constant(np.zeros(3)), _vector_constant(np.zeros(3)),
            _vector_constant(-robot.gravity_base))
    tau = np.empty((count, n))
    for part in _chunks(count, 1):
        nodes = []
        omega, omega_dot, p_ddot = base
        for i, link in enumerate(links):
            node = _forward_node(link, q_rows[i, part], qd_rows[i, part], qdd_rows[i, part],
                                 omega, omega_dot, p_ddot)
            nodes.append(node)
            omega, omega_dot, p_ddot = node[1:4]
        f_next = mu_next = (0.0, 0.0, 0.0)
        for i in reversed(range(n)):
            link = links[i]
            rotation, _, _, p_ddot, terms = nodes[i]
            f_own, mu_own = _link_wrench(link, p_ddot, terms)
            # About the origin of frame i: own wrench + distal wrench (+ external wrench).
            if f_ext is not None:
                ext = ext_rows[i, :, part]
                f = tuple(_sum((f_own[k],), (f_next[k],), (ext[k],)) for k in range(3))
                mu = tuple(_sum((mu_own[k],), (mu_next[k],), (ext[3 + k],)) for k in range(3))
            else:
                f = tuple(_sum((f_own[k],), (f_next[k],)) for k in range(3))
                mu = tuple(_sum((mu_own[k],), (mu_next[k],)) for k in range(3))
            # T: moment about the origin of frame i-1.
            r_x_f = _cross(link.r, f)
            mu = tuple(_sum((mu[k],), (r_x_f[k],)) for k in range(3))
            ct, st, ca, sa = rotation
            tau_i = _sum((sa, mu[1]), (ca, mu[2]))
            tau[part, i] = tau_i
            f_next, mu_next = _rot(rotation, f), _rot(rotation, mu)
    if robot.has_friction:
        fr = np.stack([link.friction.parameters for link in robot.links])
        tau += np.einsum("...ij,ij->...i", friction_regressor(qd.reshape(count, n),
                                                              robot.steepness), fr)
    return tau.reshape(batch + (n,))


def regressor(robot, q, qd, qdd, gravity=None):
    """Compute the regressor ``Y`` with ``rnea(robot, q, qd, qdd) == Y @ robot.parameters()``.

    Built from the same per-link code as :func:`rnea` (paper eqs. 8, 12-18, 20): the same
    forward recursion and per-link terms ``V_j`` (eq. 12); the rows of ``T`` and ``R`` that take
    link ``j``'s wrench to ``tau_i`` are carried forwards from node ``i`` to node ``j`` (the
    transpose of the backward recursion) and multiplied by ``V_j``, see the module docstring.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute joints); only its kinematics and friction steepness are used.
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2).
    gravity : array_like, shape (3,), optional
        Gravity in the world frame, m/s^2; default ``robot.gravity``.

    Returns
    -------
    numpy.ndarray, shape (..., n, 13 n)
        Columns ordered as :meth:`Robot.parameters`: 10 inertial parameters per link, then
        ``(F_c, F_v, F_o)`` per joint. ``Y[..., i, block j]`` is zero for ``j < i``.
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    if gravity is not None:
        robot = _with_gravity(robot, gravity)
    n = robot.n
    batch = q.shape[:-1]
    count = math.prod(batch)
    q_rows, qd_rows, qdd_rows = (_state_rows(x, n) for x in (q, qd, qdd))
    links = _link_constants(robot)
    base = (_vector_constant(np.zeros(3)), _vector_constant(np.zeros(3)),
            _vector_constant(-robot.gravity_base))
    y = np.zeros((count, n, 13 * n))
    parts = _chunks(count, n)
    width = max((part.stop - part.start for part in parts), default=0)
    # Rows (c, b) of tau_0..tau_j, in two buffers (frame j-1 and frame j), components first.
    buffers = [(np.empty((3, n, width)), np.empty((3, n, width))) for _ in range(2)]
    block = np.empty((n, 10, width))
    scratch = np.empty((n, width))
    for part in parts:
        size = part.stop - part.start
        omega, omega_dot, p_ddot = base
        for j, link in enumerate(links):
            rotation, omega, omega_dot, p_ddot, terms = _forward_node(
                link, q_rows[j, part], qd_rows[j, part], qdd_rows[j, part],
                omega, omega_dot, p_ddot)
            rows = j + 1
            (c_prev, b_prev), (c, b) = buffers[j % 2], buffers[rows % 2]
            c_prev, b_prev, c, b = (tuple(x[:rows, :size] for x in v)
                                    for v in (c_prev, b_prev, c, b))
            tmp = scratch[:rows, :size]
            # The new row: tau_j = mu'_j . z, with (f'_j, mu'_j) in frame j-1.
            for x in c_prev:
                x[j] = 0.0
            b_prev[0][j], b_prev[1][j], b_prev[2][j] = 0.0, 0.0, 1.0
            # Into frame j: (R^T c, R^T b); then through T (transposed): c = a + b x r.
            _rotate_rows_t(rotation, c_prev, c, tmp)
            _rotate_rows_t(rotation, b_prev, b, tmp)
            r = link.r
            for k in range(3):
                # (b x r)_k = b_{k+1} r_{k+2} - b_{k+2} r_{k+1}
                k1, k2 = (k + 1) % 3, (k + 2) % 3
                ck = c[k]
                if r[k2] != 0.0:
                    ck += np.multiply(b[k1], r[k2], out=tmp)
                if r[k1] != 0.0:
                    ck -= np.multiply(b[k2], r[k1], out=tmp)
            out = block[:rows, :, :size]
            _rows_times_link(out, tmp, c, b, p_ddot, terms)
            y[part, :rows, 10 * j:10 * j + 10] = out.transpose(2, 0, 1)
    qd_flat = qd.reshape(count, n)
    fr = friction_regressor(qd_flat, robot.steepness)
    for i in range(n):
        y[:, i, 10 * n + 3 * i:10 * n + 3 * i + 3] = fr[:, i, :]
    return y.reshape(batch + (n, 13 * n))


def _with_gravity(robot, gravity):
    from dataclasses import replace
    return replace(robot, gravity=np.asarray(gravity, dtype=float))
