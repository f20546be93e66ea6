"""Inverse dynamics in the source paper's per-link form: recursive Newton-Euler and its regressor.

The recursion is written link by link exactly as a LinkDyn node computes it (paper Sect. 2,
eqs. 5-18; the per-node algorithm of docs/architecture.md), so that the float model, the
regressor and the fixed-point golden model share one structure:

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

The link's own term factors as ``W_i = T V_i``, with ``V_i`` its wrench about the origin of frame
``i``, linear in ``pi_i = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)``::

    V_i = [ p_ddot      K       0 ]     K = S(omega_dot) + S(omega) S(omega)         eq. (13)
          [   0    -S(p_ddot)   N ]     N = L(omega_dot) + S(omega) L(omega)         eq. (14)

and ``omega_dot x r + omega x (omega x r)`` of the forward step is ``K r``.

:func:`rnea` and :func:`regressor` run the same node code: one forward recursion
(:func:`_forward_node`) that also yields every link's ``(p_ddot, K, N)`` (:func:`_link_terms`),
then

* :func:`rnea` applies ``V_i`` to the link's parameters (:func:`_link_wrench`), adds the distal
  wrench and the external wrench, and applies ``T`` and ``R`` (the backward recursion above);
* :func:`regressor` needs, for every ``j >= i``, how link ``j``'s wrench reaches ``tau_i`` through
  the ``T`` and ``R`` steps of nodes ``j, ..., i``: a row ``(a, b)`` acting on ``(f_j, mu_j)``. It
  is carried *forwards*, by the transpose of the backward step. At node ``i`` the row is
  ``(0, R_i^T z)`` (``tau_i = mu_i . R_i^T z``); the transpose of ``T`` makes it ``(c, b) =
  (a + b x r_j, b)``, acting on the wrench about the origin of frame ``j``; the transpose of
  ``R_{j+1}`` carries it into frame ``j+1``: ``(R_{j+1}^T c, R_{j+1}^T b)``. Then
  ``Y[i, block j] = (a, b) . W_j = c . V_j[f rows] + b . V_j[mu rows]``, for every row
  ``i <= j`` at once.

``rnea == regressor @ parameters`` therefore holds by construction (up to rounding).

Trees and prismatic joints (paper eq. 17; docs/trees.md): node ``i`` takes its forward inputs
from its parent ``robot.parents[i]`` (through the link's constant mount, a DH step that never
moves, when it has one), and its backward step adds the wrenches its children sent, **in
increasing index order**, after its own and before the external wrench:
``f = ((f_own + f'_c1) + f'_c2) ... + f_ext``. A prismatic joint has ``theta`` constant and
``d = q + d`` (so ``r`` depends on ``q``), its forward step adds ``qdd z`` and the Coriolis term
``2 omega x (qd R^T z)`` to ``p_ddot`` (no joint rate in ``omega``), and ``tau_i = f_i . R^T z``;
its regressor row is ``(z, 0)``. The regressor carries each node's rows from its parent (kept per
node on a tree; the two alternating buffers on a chain).

Implementation (speed without leaving this form):

* the arrays are component-first and batch-last: a vector is three arrays of shape ``(N,)`` over
  the states, the regressor rows are arrays of shape ``(rows, N)``, so every numpy operation
  runs on contiguous vectors over the states;
* robot constants that are exactly zero (``sin alpha = 0``, ``a = 0``, a zero first moment ...)
  and the zero velocity of a fixed base skip their products (structural zeros, as in the
  gateware); a twist that is a multiple of pi/2 up to the rounding of the double (``cos`` below
  1e-15) has an exact sine and cosine of 0 and +-1 here;
* the regressor's products ``(c, b) . V_j`` are two ``einsum`` contractions per link, into a
  workspace laid out so that row ``i`` of ``Y`` (columns ``10 i`` on) is one contiguous run;
  ``Y`` is then filled tile by tile of states, so each of its cache lines is written while
  cached;
* long batches are worked in chunks of states whose workspace (one array) stays below
  ``_WORKSPACE_DOUBLES``: the allocator then recycles it between calls instead of mapping and
  zeroing fresh pages.

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

#: Largest chunk of states worked at once.
_CHUNK_STATES = 16_384

#: Workspace of one chunk, doubles (28 MiB): below glibc's largest dynamic mmap threshold
#: (32 MiB), so that the allocator recycles the workspace from one call to the next instead of
#: mapping (and zeroing) fresh pages each time; a chunk is cut to fit it.
_WORKSPACE_DOUBLES = 7 * 2**19

#: Smallest chunk of states: below it numpy's per-call overhead would dominate.
_MIN_CHUNK = 256

#: States per tile when ``Y`` is filled from the workspace: a tile of ``Y`` stays in the
#: level-2 cache while its blocks are written.
_TILE_STATES = 256


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
    v = np.asarray(v, dtype=float)
    rotation = tuple(np.asarray(x, dtype=float) for x in rotation)
    return np.stack(np.broadcast_arrays(*_rot_t(rotation, (v[..., 0], v[..., 1], v[..., 2]))),
                    axis=-1)


def rotate(rotation, v):
    """Return ``R v`` for ``R = Rz(theta) Rx(alpha)`` given as ``(ct, st, ca, sa)``.

    ``v`` has shape (..., 3) in frame ``i``; the result is in frame ``i-1``.
    """
    v = np.asarray(v, dtype=float)
    rotation = tuple(np.asarray(x, dtype=float) for x in rotation)
    return np.stack(np.broadcast_arrays(*_rot(rotation, (v[..., 0], v[..., 1], v[..., 2]))),
                    axis=-1)


def link_offset_vector(link):
    """Return ``r^i_{i-1,i} = (a, d sin alpha, d cos alpha)``, shape (3,), m, in frame ``i``.

    For a prismatic joint, at ``q = 0`` (``d`` is then ``q + d``).
    """
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
        (..., 3) in frame ``i``; ``rotation`` as for :func:`rotate`. On a tree each node starts
        from its parent's outputs (through its mount); ``base_motion`` is that of DH frame 0,
        the frame of every root.

    Notes
    -----
    The node code of :func:`rnea` and :func:`regressor` (:func:`_forward_node`), run on the
    whole batch; only the result is arranged component-last. ``cos alpha``, ``sin alpha`` are
    the ones used: exact for a multiple of pi/2 (module docstring).
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    batch = q.shape[:-1]
    count = math.prod(batch)
    q_rows, qd_rows, qdd_rows = (_state_rows(x, robot.n) for x in (q, qd, qdd))
    if base_motion is None:
        vectors = _fixed_base(robot)
    else:
        vectors = tuple(_vector_rows(np.broadcast_to(np.asarray(v, dtype=float), batch + (3,)),
                                     count) for v in base_motion)
    nodes = []
    terms = np.empty((27, count))
    k, n = terms[:9].reshape(3, 3, count), terms[9:].reshape(3, 6, count)
    outputs = []
    for i, link in enumerate(_link_constants(robot)):
        parent = robot.parents[i]
        inputs = vectors if parent < 0 else outputs[parent]
        if link.mount is not None:
            inputs = _mount_forward(link.mount, *inputs)
        rotation, *node_vectors, _ = _forward_node(link, q_rows[i], qd_rows[i], qdd_rows[i],
                                                   *inputs, k, n)
        outputs.append(node_vectors)
        ct, st = (np.broadcast_to(np.asarray(x, dtype=float), (count,)).reshape(batch)
                  for x in rotation[:2])
        nodes.append(((ct, st, np.float64(link.ca), np.float64(link.sa)),
                      *(_vector_out(v, batch, count) for v in node_vectors)))
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
    Assembled from the per-link terms ``(p_ddot, K, N)`` of :func:`_link_terms`, the ones
    :func:`rnea` and :func:`regressor` use: ``W_i = T V_i`` (module docstring).
    """
    omega, omega_dot, p_ddot = (np.asarray(v, dtype=float) for v in (omega, omega_dot, p_ddot))
    batch = np.broadcast_shapes(omega.shape, omega_dot.shape, p_ddot.shape)[:-1]
    count = math.prod(batch)
    omega, omega_dot, p = (_vector_rows(np.broadcast_to(x, batch + (3,)), count)
                           for x in (omega, omega_dot, p_ddot))
    v = np.zeros((6, 10, count))
    # K and N are written straight into their blocks.
    _link_terms(omega, omega_dot, v[0:3, 1:4], v[3:6, 4:10])
    for row in range(3):
        v[row, 0] = p[row]
    # -S(p_ddot) in the first-moment columns of the moment rows.
    v[3, 2], v[3, 3] = p[2], -p[1]
    v[4, 1], v[4, 3] = -p[2], p[0]
    v[5, 1], v[5, 2] = p[1], -p[0]
    # T: add the moment of the link's own force about the origin of frame i-1.
    r = np.asarray(r, dtype=float)
    v[3:6] += np.cross(r, v[0:3], axisb=0, axisc=0)
    return np.ascontiguousarray(np.moveaxis(v, -1, 0)).reshape(batch + (6, 10))


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
# Component-first node code. A vector is a tuple of three components; a component is a numpy
# array over the states (shape (N,), or (rows, N) for regressor rows) or the Python float 0.0
# (a structural zero: the fixed base, a zero constant). Results may alias their inputs; no
# function here modifies an input in place unless it says so.
# ----------------------------------------------------------------------------------------------

def _is_zero(x):
    return type(x) is float and x == 0.0


def _mul(a, b):
    """``a * b``; a float 0.0 (structural zero) or 1.0 costs no operation."""
    if type(a) is float:
        if a == 0.0:
            return 0.0
        if a == 1.0:
            return b
    if type(b) is float:
        if b == 0.0:
            return 0.0
        if b == 1.0:
            return a
    return a * b


def _add(a, b):
    """``a + b``, skipping a structural zero."""
    if _is_zero(a):
        return b
    if _is_zero(b):
        return a
    return a + b


def _sub(a, b):
    """``a - b``, skipping a structural zero."""
    if _is_zero(b):
        return a
    if _is_zero(a):
        return -b
    return a - b


def _rot_t(rotation, v):
    """``R^T v``: ``v`` from frame ``i-1`` into frame ``i``; ``rotation = (ct, st, ca, sa)``."""
    ct, st, ca, sa = rotation
    x, y, z = v
    u = _add(_mul(ct, x), _mul(st, y))
    w = _sub(_mul(ct, y), _mul(st, x))
    return u, _add(_mul(ca, w), _mul(sa, z)), _sub(_mul(ca, z), _mul(sa, w))


def _rot(rotation, v):
    """``R v``: ``v`` from frame ``i`` into frame ``i-1``."""
    ct, st, ca, sa = rotation
    x, y, z = v
    w = _sub(_mul(ca, y), _mul(sa, z))
    return (_sub(_mul(ct, x), _mul(st, w)), _add(_mul(st, x), _mul(ct, w)),
            _add(_mul(sa, y), _mul(ca, z)))


def _cross(u, v):
    """``u x v``."""
    return (_sub(_mul(u[1], v[2]), _mul(u[2], v[1])),
            _sub(_mul(u[2], v[0]), _mul(u[0], v[2])),
            _sub(_mul(u[0], v[1]), _mul(u[1], v[0])))


def _link_terms(omega, omega_dot, k, n):
    """Write ``K`` (eq. 13) and ``N`` (eq. 14) of one link into ``k`` and ``n``; return them.

    ``K = S(omega_dot) + S(omega) S(omega)``, so ``K v = omega_dot x v + omega x (omega x v)``;
    ``N = L(omega_dot) + S(omega) L(omega)``, so ``N (I_xx, I_xy, I_xz, I_yy, I_yz, I_zz) =
    I omega_dot + omega x (I omega)``.

    Parameters
    ----------
    omega, omega_dot : vector
        Of the link, in frame ``i``.
    k, n : numpy.ndarray, shapes (3, 3, N) and (3, 6, N)
        Output arrays (may be strided views of a larger buffer).
    """
    wx, wy, wz = omega
    ax, ay, az = omega_dot
    xx, yy, zz = _mul(wx, wx), _mul(wy, wy), _mul(wz, wz)
    # omega_x omega_y, omega_x omega_z, omega_y omega_z are entries of N: computed in place.
    xy, xz, yz = (_product_into(out, a, b)
                  for out, a, b in ((n[2, 3], wx, wy), (n[1, 0], wx, wz), (n[0, 5], wy, wz)))
    for out, (u, v) in ((k[0, 0], (yy, zz)), (k[1, 1], (xx, zz)), (k[2, 2], (xx, yy))):
        np.negative(_into(out, _add, u, v), out=out)
    for out, op, u, v in ((k[0, 1], _sub, xy, az), (k[0, 2], _add, xz, ay),
                          (k[1, 0], _add, xy, az), (k[1, 2], _sub, yz, ax),
                          (k[2, 0], _sub, xz, ay), (k[2, 1], _add, yz, ax),
                          (n[0, 1], _sub, ay, xz), (n[0, 2], _add, az, xy),
                          (n[0, 4], _sub, yy, zz), (n[1, 1], _add, ax, yz),
                          (n[1, 2], _sub, zz, xx), (n[1, 4], _sub, az, xy),
                          (n[2, 1], _sub, xx, yy), (n[2, 2], _sub, ax, yz),
                          (n[2, 4], _add, ay, xz),
                          (n[0, 0], _add, ax, 0.0), (n[1, 3], _add, ay, 0.0),
                          (n[2, 5], _add, az, 0.0),
                          (n[0, 3], _sub, 0.0, yz), (n[1, 5], _sub, 0.0, xz),
                          (n[2, 0], _sub, 0.0, xy)):
        _into(out, op, u, v)
    return k, n


def _product_into(out, a, b):
    """``out[...] = a * b``; return ``out``, or the float 0.0 for a structural zero."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.multiply(a, b, out=out)
    value = _mul(a, b)
    np.copyto(out, value)
    return value if _is_zero(value) else out


def _into(out, op, a, b):
    """``out[...] = op(a, b)`` for ``op`` in (:func:`_add`, :func:`_sub`) without a temporary."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        (np.add if op is _add else np.subtract)(a, b, out=out)
    else:
        value = op(a, b)
        if op is _sub and _is_zero(a) and isinstance(b, np.ndarray):
            np.negative(b, out=out)
        else:
            np.copyto(out, value)
    return out


def _forward_node(link, q, qd, qdd, omega, omega_dot, p_ddot, k, n):
    """One node of the forward recursion (the per-node algorithm of docs/architecture.md),
    component-first.

    Parameters
    ----------
    link : _LinkConstants
        The node's constants.
    q, qd, qdd : numpy.ndarray, shape (N,)
        The joint's position (rad), velocity (rad/s) and acceleration (rad/s^2).
    omega, omega_dot, p_ddot : vector
        The outputs of node ``i-1``, in frame ``i-1``.
    k, n : numpy.ndarray, shapes (3, 3, N) and (3, 6, N)
        Where to write the link's ``K`` and ``N`` (:func:`_link_terms`).

    Returns
    -------
    tuple
        ``(rotation, omega_i, omega_dot_i, p_ddot_i, (K, N))``, in frame ``i``; ``rotation =
        (cos theta, sin theta, cos alpha, sin alpha)``; ``(K, N)`` of :func:`_link_terms`.
    """
    if link.prismatic:
        return _forward_node_prismatic(link, q, qd, qdd, omega, omega_dot, p_ddot, k, n)
    theta = q + link.offset if link.offset != 0.0 else q
    rotation = (np.cos(theta), np.sin(theta), link.ca, link.sa)
    wx, wy, wz = omega
    omega = _rot_t(rotation, (wx, wy, _add(wz, qd)))
    # omega_dot_{i-1} + qdd z + qd (omega_{i-1} x z), omega x z = (omega_y, -omega_x, 0)
    omega_dot = _rot_t(rotation, (_add(omega_dot[0], _mul(qd, wy)),
                                  _sub(omega_dot[1], _mul(qd, wx)), _add(omega_dot[2], qdd)))
    terms = _link_terms(omega, omega_dot, k, n)
    r = link.r
    p_ddot = tuple(_add(p, _add(_add(_mul(k[row][0], r[0]), _mul(k[row][1], r[1])),
                                _mul(k[row][2], r[2])))
                   for row, p in enumerate(_rot_t(rotation, p_ddot)))
    return rotation, omega, omega_dot, p_ddot, terms


def _forward_node_prismatic(link, q, qd, qdd, omega, omega_dot, p_ddot, k, n):
    """:func:`_forward_node` of a prismatic joint (theta constant, ``d = q + d``)::

        omega_i     = R^T omega_{i-1}
        omega_dot_i = R^T omega_dot_{i-1}
        p_ddot_i    = R^T (p_ddot_{i-1} + qdd z) + K r + 2 omega_i x (qd R^T z)
    """
    rotation = (link.ct, link.st, link.ca, link.sa)
    omega = _rot_t(rotation, omega)
    omega_dot = _rot_t(rotation, omega_dot)
    terms = _link_terms(omega, omega_dot, k, n)
    r = _offset_vector(link, q)
    # Coriolis term 2 omega x (qd R^T z), R^T z = (0, sin alpha, cos alpha).
    coriolis = _cross(omega, (0.0, _mul(qd, link.sa), _mul(qd, link.ca)))
    p_ddot = tuple(
        _add(_add(p, _add(_add(_mul(k[row][0], r[0]), _mul(k[row][1], r[1])),
                          _mul(k[row][2], r[2]))), _mul(2.0, coriolis[row]))
        for row, p in enumerate(_rot_t(rotation, (p_ddot[0], p_ddot[1], _add(p_ddot[2], qdd)))))
    return rotation, omega, omega_dot, p_ddot, terms


def _link_wrench(link, p_ddot, terms):
    """``V_i pi_i``: the link's own wrench about the origin of frame ``i`` (eqs. 9-12).

    ``f = m p_ddot + K (m c)`` and ``mu = (m c) x p_ddot + N (I_xx, ..., I_zz)``.
    """
    k, n = terms
    m, mc, inertia = link.mass, link.first_moment, link.inertia6
    f, mu = [], []
    mc_x_p = _cross(mc, p_ddot)
    for row in range(3):
        value = _mul(m, p_ddot[row])
        for col in range(3):
            value = _add(value, _mul(mc[col], k[row, col]))
        f.append(value)
        value = mc_x_p[row]
        for col in range(6):
            value = _add(value, _mul(inertia[col], n[row, col]))
        mu.append(value)
    return tuple(f), tuple(mu)


def _rotate_rows_t(rotation, src, dst, tmp):
    """``dst = R^T src`` for the rows, in place in ``dst`` (arrays (rows, N) or stacked).

    ``src`` and ``dst`` are vectors of arrays of one shape; ``tmp`` is a scratch array of that
    shape. ``src`` is left unchanged.
    """
    ct, st, ca, sa = rotation
    x, y, z = src
    dx, dy, dz = dst
    # u = ct x + st y -> dx;  w = ct y - st x -> dy
    np.multiply(x, ct, out=dx)
    dx += np.multiply(y, st, out=tmp)
    np.multiply(y, ct, out=dy)
    dy -= np.multiply(x, st, out=tmp)
    # (ca w + sa z, ca z - sa w)
    if sa == 0.0:
        np.multiply(z, ca, out=dz)
        if ca != 1.0:
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
    """The constants of one node as Python floats: DH, ``r``, ``pi_i``, friction, mount.

    For a prismatic joint ``ct, st`` are the constant ``cos theta, sin theta`` and ``r`` holds
    the ``d`` offset only through :func:`_offset_vector`; ``mount`` is ``None`` (identity) or
    ``(rotation, r)`` of the constant DH step from the parent's frame (:attr:`Link.mount`).
    """

    __slots__ = ("offset", "alpha", "ca", "sa", "r", "mass", "first_moment", "inertia6",
                 "prismatic", "a", "d", "ct", "st", "mount")

    def __init__(self, link):
        self.offset = float(link.offset)
        self.alpha = float(link.alpha)
        self.ca, self.sa = _twist_cos_sin(link.alpha)
        self.a, self.d = float(link.a), float(link.d)
        self.r = (float(link.a), float(link.d) * self.sa, float(link.d) * self.ca)
        self.prismatic = link.joint_type == "prismatic"
        self.ct, self.st = _twist_cos_sin(link.offset)
        pi = link.parameters()
        self.mass = float(pi[0])
        self.first_moment = tuple(float(x) for x in pi[1:4])
        self.inertia6 = tuple(float(x) for x in pi[4:10])
        self.mount = None
        if link.has_mount:
            a, d, alpha, theta = (float(x) for x in link.mount)
            ca, sa = _twist_cos_sin(alpha)
            ct, st = _twist_cos_sin(theta)
            self.mount = ((ct, st, ca, sa), (a, d * sa, d * ca))


def _offset_vector(link, q):
    """``r = (a, d sin alpha, d cos alpha)`` of a node; ``d = q + d`` for a prismatic joint."""
    if not link.prismatic:
        return link.r
    d = q + link.d if link.d != 0.0 else q
    return (link.a, _mul(d, link.sa), _mul(d, link.ca))


def _twist_cos_sin(alpha):
    """``(cos alpha, sin alpha)``, exact (0, +-1) when ``alpha`` is a multiple of pi/2.

    The double nearest to pi/2 has a cosine of 6e-17, not 0: rounding noise of the angle, far
    below the precision of the results. Taking it as exactly 0 makes it a structural zero that
    costs no operation (the fixed-point node has it as 0 too).
    """
    cos, sin = math.cos(alpha), math.sin(alpha)
    if abs(cos) < 1e-15:
        return 0.0, math.copysign(1.0, sin)
    if abs(sin) < 1e-15:
        return math.copysign(1.0, cos), 0.0
    return cos, sin


def _link_constants(robot):
    return [_LinkConstants(link) for link in robot.links]


class _Topology:
    """The tree of a robot as the recursions walk it.

    ``parents[i]`` (-1 for a root), ``children[i]`` in increasing index order (the order in
    which node ``i`` sums its children's wrenches, eq. 17), ``release[i]``: the nodes whose
    forward outputs are no longer needed once node ``i`` is done (their last child).
    """

    __slots__ = ("parents", "children", "release", "chain")

    def __init__(self, robot):
        self.parents = robot.parents
        self.children = robot.children
        self.chain = robot.is_chain
        self.release = [[] for _ in robot.links]
        for parent, children in enumerate(self.children):
            if children:
                self.release[children[-1]].append(parent)


def _mount_forward(mount, omega, omega_dot, p_ddot):
    """The forward step of a constant DH step (a joint that never moves): frame p -> p'."""
    rotation, r = mount
    omega = _rot_t(rotation, omega)
    omega_dot = _rot_t(rotation, omega_dot)
    # omega_dot x r + omega x (omega x r)
    lever = _cross(omega, r)
    accel = tuple(_add(u, v) for u, v in zip(_cross(omega_dot, r), _cross(omega, lever)))
    p_ddot = tuple(_add(p, a) for p, a in zip(_rot_t(rotation, p_ddot), accel))
    return omega, omega_dot, p_ddot


def _mount_backward(mount, f, mu):
    """The backward step of a constant DH step: wrench about the origin of p' in p' ->
    about the origin of p in p (``T`` then ``R``)."""
    rotation, r = mount
    mu = tuple(_add(m, c) for m, c in zip(mu, _cross(r, f)))
    return _rot(rotation, f), _rot(rotation, mu)


def _fixed_base(robot):
    """``(omega_0, omega_dot_0, p_ddot_0)`` of a fixed base: zeros and ``-g`` (floats)."""
    return ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), tuple(float(-x) for x in robot.gravity_base))


def _joint_arrays(robot, q, qd, qdd):
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    arrays = []
    for name, value in (("q", q), ("qd", qd), ("qdd", qdd)):
        array = np.asarray(value, dtype=float)
        if array.ndim == 0 or array.shape[-1] != robot.n:
            raise ValueError(f"{name} must have shape (..., {robot.n}) for robot "
                             f"{robot.name!r}, not {array.shape}")
        if not np.isfinite(array).all():
            index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
            raise ValueError(f"{name} holds a non-finite value {float(array[index])!r} at "
                             f"index {index}")
        arrays.append(array)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(np.broadcast_to(a, shape) for a in arrays)


def _state_rows(x, n):
    """(..., n) -> contiguous (n, N): one row over all states per joint."""
    return np.ascontiguousarray(x.reshape(-1, n).T)


def _vector_rows(v, count):
    """(..., 3) -> vector of contiguous (N,) arrays."""
    v = np.ascontiguousarray(v.reshape(count, 3).T)
    return v[0], v[1], v[2]


def _vector_out(v, batch, count):
    """Vector -> array (..., 3)."""
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


def _chunks(count, per_state=1):
    """Balanced slices of at most ``_CHUNK_STATES`` states and ``_WORKSPACE_DOUBLES`` doubles
    of workspace (``per_state`` doubles per state)."""
    limit = max(_MIN_CHUNK, min(_CHUNK_STATES, _WORKSPACE_DOUBLES // per_state))
    pieces = -(-count // limit)
    size = -(-count // pieces) if pieces else 0
    return [slice(start, min(start + size, count)) for start in range(0, count, size or 1)]


def _friction_view(y, n):
    """The view of ``Y`` (N, n, 13 n) at the friction columns of every joint, shape (N, n, 3)."""
    step = y.strides[-1]
    return np.lib.stride_tricks.as_strided(
        y[:, 0, 10 * n:], shape=(y.shape[0], n, 3),
        strides=(y.strides[0], y.strides[1] + 3 * step, step), writeable=True)


# ----------------------------------------------------------------------------------------------
# Inverse dynamics and regressor
# ----------------------------------------------------------------------------------------------

def rnea(robot, q, qd, qdd, gravity=None, f_ext=None):
    """Compute the inverse dynamics ``tau = f(q, qd, qdd)`` by the per-link recursion.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute or prismatic joints, a chain or a tree).
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad; m for a prismatic joint), velocities (rad/s, m/s), accelerations
        (rad/s^2, m/s^2); leading dimensions are a batch and broadcast against each other.
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
        Joint torques, N·m (forces along the axis, N, for prismatic joints), including friction
        (eq. 20) when the robot has it.

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`Robot`.
    ValueError
        If an array has the wrong trailing dimension or holds NaN or infinity.

    Notes
    -----
    Per node, backwards: the link's ``V_i pi_i`` (:func:`_link_wrench`) plus the wrenches
    ``(f', mu')`` of its children in index order (eq. 17) and ``f_ext``, all about the origin of
    frame ``i``; ``T`` moves the moment to the origin of frame ``i-1`` (``mu += r x f``);
    ``tau_i = mu . R^T z`` (``f . R^T z`` for a prismatic joint); ``(R f, R mu)``, through the
    mount, goes to the parent.
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    if gravity is not None:
        robot = _with_gravity(robot, gravity)
    n = robot.n
    batch = q.shape[:-1]
    count = math.prod(batch)
    f_ext = _external_wrench(robot, f_ext, batch)
    if f_ext is not None:
        ext_rows = np.ascontiguousarray(np.moveaxis(f_ext.reshape(count, n, 6), 0, -1))
    links = _link_constants(robot)
    topology = _Topology(robot)
    parents, children, release = topology.parents, topology.children, topology.release
    states = [x.reshape(count, n) for x in (q, qd, qdd)]
    tau = np.empty((n, count))
    # One workspace per chunk of states, per joint: q, qd, qdd, then what node i keeps for its
    # backward step: cos theta, sin theta, its own wrench V_i pi_i = (f, mu).
    parts = _chunks(count, 11 * n + 27)
    width = max((part.stop - part.start for part in parts), default=0)
    workspace = np.empty((11 * n + 27) * width)
    store = workspace[:11 * n * width].reshape(n, 11, width)
    terms = workspace[11 * n * width:].reshape(27, width)
    for part in parts:
        size = part.stop - part.start
        work = store[:, :, :size]
        k_out = terms[:9, :size].reshape(3, 3, size)
        n_out = terms[9:, :size].reshape(3, 6, size)
        for k in range(3):
            work[:, k] = states[k][part].T
        base = _fixed_base(robot)
        outputs = [None] * n
        for i, link in enumerate(links):
            parent = parents[i]
            vectors = base if parent < 0 else outputs[parent]
            if link.mount is not None:
                vectors = _mount_forward(link.mount, *vectors)
            rotation, *vectors, terms_i = _forward_node(link, *work[i, 0:3], *vectors, k_out,
                                                        n_out)
            outputs[i] = vectors
            for done in release[i]:
                outputs[done] = None
            f, mu = _link_wrench(link, vectors[2], terms_i)
            work[i, 3], work[i, 4] = rotation[0], rotation[1]
            for k in range(3):
                work[i, 5 + k], work[i, 8 + k] = f[k], mu[k]
        # Backward, node n-1 first; sent[i]: node i's wrench in its parent's frame.
        sent = [None] * n
        for i in reversed(range(n)):
            link = links[i]
            rotation = ((link.ct, link.st, link.ca, link.sa) if link.prismatic
                        else (work[i, 3], work[i, 4], link.ca, link.sa))
            # About the origin of frame i: own + the children's wrenches in index order
            # (eq. 17) (+ external) wrench.
            f = tuple(work[i, 5 + k] for k in range(3))
            mu = tuple(work[i, 8 + k] for k in range(3))
            for child in children[i]:
                f_child, mu_child = sent[child]
                sent[child] = None
                f = tuple(_add(f[k], f_child[k]) for k in range(3))
                mu = tuple(_add(mu[k], mu_child[k]) for k in range(3))
            if f_ext is not None:
                ext = ext_rows[i, :, part]
                f = tuple(_add(f[k], ext[k]) for k in range(3))
                mu = tuple(_add(mu[k], ext[3 + k]) for k in range(3))
            # T: the moment about the origin of frame i-1.
            r = _offset_vector(link, work[i, 0])
            mu = tuple(_add(mu[k], m) for k, m in enumerate(_cross(r, f)))
            # tau = mu . R^T z (revolute), f . R^T z (prismatic), R^T z = (0, sa, ca).
            axial = f if link.prismatic else mu
            tau[i, part] = _add(_mul(link.sa, axial[1]), _mul(link.ca, axial[2]))
            if parents[i] >= 0:
                wrench = (_rot(rotation, f), _rot(rotation, mu))
                if link.mount is not None:
                    wrench = _mount_backward(link.mount, *wrench)
                sent[i] = wrench
    tau = tau.T
    if robot.has_friction:
        fr = np.stack([link.friction.parameters for link in robot.links])
        tau = tau + np.einsum("...ij,ij->...i",
                              friction_regressor(qd.reshape(count, n), robot.steepness), fr)
    return np.ascontiguousarray(tau).reshape(batch + (n,))


def regressor(robot, q, qd, qdd, gravity=None):
    """Compute the regressor ``Y`` with ``rnea(robot, q, qd, qdd) == Y @ robot.parameters()``.

    Built from the same per-link code as :func:`rnea` (paper eqs. 8, 12-18, 20): the same
    forward recursion and per-link terms ``V_j`` (eq. 12). The rows that take link ``j``'s
    wrench to ``tau_i`` through ``T`` and ``R`` are carried forwards from node ``i`` to node
    ``j`` (the transpose of the backward recursion) and multiplied by ``V_j``; see the module
    docstring.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute or prismatic joints, a chain or a tree); only its kinematics and
        friction steepness are used.
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2).
    gravity : array_like, shape (3,), optional
        Gravity in the world frame, m/s^2; default ``robot.gravity``.

    Returns
    -------
    numpy.ndarray, shape (..., n, 13 n)
        Columns ordered as :meth:`Robot.parameters`: 10 inertial parameters per link, then
        ``(F_c, F_v, F_o)`` per joint (eq. 20, :func:`friction_regressor`). ``Y[..., i, block
        j]`` is zero unless ``i`` is ``j`` or one of its ancestors (for a chain: ``j < i``). A
        new C-contiguous array.

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`Robot`.
    ValueError
        If an array has the wrong trailing dimension or holds NaN or infinity.

    Notes
    -----
    Per node ``j``: :func:`_forward_node` (which writes ``K`` and ``N`` into ``V_j``); the rows
    ``(c, b)`` of joints ``0..j`` are rotated into frame ``j`` (:func:`_rotate_rows_t`) and
    shifted by ``T`` transposed (``c += b x r``); ``(c, b) . V_j`` is two ``einsum``
    contractions (force columns ``m, m c`` with ``(c, b)``, inertia columns with ``b``).
    """
    q, qd, qdd = _joint_arrays(robot, q, qd, qdd)
    if gravity is not None:
        robot = _with_gravity(robot, gravity)
    n = robot.n
    batch = q.shape[:-1]
    count = math.prod(batch)
    links = _link_constants(robot)
    states = [x.reshape(count, n) for x in (q, qd, qdd)]
    y = np.zeros((count, n, 13 * n))
    # One workspace (components first, states last):
    # * rows[buffer, c or b, component, row, state]: the rows (c, b) of tau_0..tau_j, in two
    #   buffers (buffer j % 2 holds them in frame j-1, the other one in frame j);
    # * v_force[k, col], v_moment[k, col]: V_j as the contraction needs it. Row k of the rows
    #   (c then b) meets v_force[k] in columns (m, m c); row k of b meets v_moment[k] in the
    #   inertia columns;
    # * blocks[i, j, col, state]: Y[state, i, 10 j + col] for i <= j (i > j is not used), so
    #   that row i of Y, columns 10 i ... 10 n, is one contiguous run blocks[i, i:] per state;
    # * the chunk's joint states, one row per joint; scratch.
    # For a tree, the rows of node j are those of its ancestors and itself (``lineage[j]``, in
    # increasing index order): node j starts from its parent's rows (kept per node, in
    # ``node_rows``, frame of the node) instead of the previous node's.
    topology = _Topology(robot)
    chain = topology.chain
    lineage = [robot.ancestors(j) + (j,) for j in range(n)]
    # spans[i]: one past the last descendant of node i; Y's row i is zero beyond block spans[i].
    spans = list(range(1, n + 1))
    for j in range(n):
        for i in lineage[j]:
            spans[i] = max(spans[i], j + 1)
    if chain:
        spans = None
    sizes = {"rows": 12 * n, "v_force": 24, "v_moment": 18, "blocks": 10 * n * n,
             "joints": 3 * n, "scratch": 2 * n}
    if not chain:
        longest = max(len(x) for x in lineage)
        sizes["rows"] = 6 * sum(len(x) for x in lineage) + 6 * longest
        sizes["tree_block"] = 10 * longest
    parts = _chunks(count, sum(sizes.values()))
    width = max((part.stop - part.start for part in parts), default=0)
    workspace = np.empty(sum(sizes.values()) * width)
    views, start = {}, 0
    for name, rows_count in sizes.items():
        views[name] = workspace[start * width:(start + rows_count) * width]
        start += rows_count
    if chain:
        rows_buffers = views["rows"].reshape(2, 2, 3, n, width)
    else:
        node_rows, offset = [], 0
        for j in range(n):
            rows_count = 6 * len(lineage[j])
            node_rows.append(views["rows"][offset * width:(offset + rows_count) * width]
                             .reshape(2, 3, len(lineage[j]), width))
            offset += rows_count
        pre_rows = views["rows"][offset * width:].reshape(2, 3, longest, width)
        tree_block = views["tree_block"].reshape(10, longest, width)
    v_force = views["v_force"].reshape(6, 4, width)
    v_moment = views["v_moment"].reshape(3, 6, width)
    blocks = views["blocks"].reshape(n, n, 10, width)
    if not chain:
        blocks[...] = 0.0   # blocks of a link that is not a descendant stay zero
    joint_rows = views["joints"].reshape(3, n, width)
    scratch = views["scratch"].reshape(2, n, width)
    # Structural zeros of V_j: the moment rows in the mass column, the diagonal of -S(p).
    v_force[3:6, 0] = 0.0
    for k in range(3):
        v_force[3 + k, 1 + k] = 0.0
    steepness = robot.steepness
    for part in parts:
        size = part.stop - part.start
        for k in range(3):
            joint_rows[k, :, :size] = states[k][part].T
        q_rows, qd_rows, qdd_rows = joint_rows[:, :, :size]
        vf, vm = v_force[:, :, :size], v_moment[:, :, :size]
        base = _fixed_base(robot)
        outputs = [None] * n
        for j, link in enumerate(links):
            parent = topology.parents[j]
            vectors = base if parent < 0 else outputs[parent]
            if link.mount is not None:
                vectors = _mount_forward(link.mount, *vectors)
            rotation, *vectors, _ = _forward_node(
                link, q_rows[j], qd_rows[j], qdd_rows[j], *vectors, vf[0:3, 1:4], vm)
            outputs[j] = vectors
            for done in topology.release[j]:
                outputs[done] = None
            # V_j: p_ddot in the mass column, -S(p_ddot) in the first-moment columns.
            px, py, pz = vectors[2]
            for (row, col), value in (((0, 0), px), ((1, 0), py), ((2, 0), pz),
                                      ((3, 2), pz), ((4, 3), px), ((5, 1), py)):
                np.copyto(vf[row, col], value)
            for (row, col), value in (((3, 3), py), ((4, 1), pz), ((5, 2), px)):
                if isinstance(value, np.ndarray):
                    np.negative(value, out=vf[row, col])
                else:
                    np.copyto(vf[row, col], -value)
            rows = len(lineage[j])
            if chain:
                prev = rows_buffers[j % 2, :, :, :rows, :size]
                new = rows_buffers[rows % 2, :, :, :rows, :size]
            else:
                prev = pre_rows[:, :, :rows, :size]
                new = node_rows[j][:, :, :, :size]
                if parent >= 0:
                    prev[:, :, :rows - 1] = node_rows[parent][:, :, :, :size]
            if link.mount is not None and rows > 1:
                # The ancestors' rows through the mount (transposed): into frame p', then
                # c = a + b x r_mount; ``new`` is free scratch until the step below.
                mount_rotation, mount_r = link.mount
                _rotate_rows_t(mount_rotation, tuple(prev[:, k, :rows - 1] for k in range(3)),
                               tuple(new[:, k, :rows - 1] for k in range(3)),
                               scratch[:, :rows - 1, :size])
                _shift_rows(new[:, :, :rows - 1], mount_r, scratch[0, :rows - 1, :size])
                prev[:, :, :rows - 1] = new[:, :, :rows - 1]
            # The new row in frame j-1, acting on (f'_j, mu'_j): tau_j = mu'_j . z, (0, z), for
            # a revolute joint; tau_j = f'_j . z, (z, 0), for a prismatic one.
            prev[:, :, rows - 1] = 0.0
            prev[0 if link.prismatic else 1, 2, rows - 1] = 1.0
            # Into frame j, c and b at once: (R^T c, R^T b); then T transposed: c = a + b x r.
            _rotate_rows_t(rotation, tuple(prev[:, k] for k in range(3)),
                           tuple(new[:, k] for k in range(3)), scratch[:, :rows, :size])
            _shift_rows(new, _offset_vector(link, q_rows[j]), scratch[0, :rows, :size])
            # Y[:, i, block j] = c . V_j[f rows] + b . V_j[mu rows] for every ancestor i.
            both = new.reshape(6, rows, size)
            if chain:
                block = blocks[:rows, j, :, :size].transpose(1, 0, 2)      # [col, i, state]
            else:
                block = tree_block[:, :rows, :size]
            np.einsum("kic,klc->lic", both, vf, out=block[0:4])
            np.einsum("kic,klc->lic", both[3:6], vm, out=block[4:10])
            if not chain:
                blocks[list(lineage[j]), j, :, :size] = block.transpose(1, 0, 2)
        _assemble(y[part], blocks, friction_regressor(states[1][part], steepness), size, spans)
    return y.reshape(batch + (n, 13 * n))


def _shift_rows(rows, r, tmp):
    """``c += b x r`` in place for the rows ``(c, b) = rows[0], rows[1]`` (``T`` transposed).

    ``r`` is a vector of floats (structural zeros skipped) or of arrays over the states.
    """
    c, b = rows[0], rows[1]
    for k in range(3):
        k1, k2 = (k + 1) % 3, (k + 2) % 3
        ck = c[k]
        if not _is_zero(r[k2]):
            ck += np.multiply(b[k1], r[k2], out=tmp)
        if not _is_zero(r[k1]):
            ck -= np.multiply(b[k2], r[k1], out=tmp)


def _assemble(y, blocks, friction, size, spans=None):
    """Write the blocks and the friction columns of ``size`` states into ``Y``.

    Parameters
    ----------
    y : numpy.ndarray, shape (size, n, 13 n)
        The chunk's part of ``Y`` (zeros below the block diagonal already).
    blocks : numpy.ndarray, shape (n, n, 10, >= size)
        ``blocks[i, j, col, state]``: ``Y[state, i, 10 j + col]`` for ``i <= j``.
    friction : numpy.ndarray, shape (size, n, 3)
        :func:`friction_regressor` of the chunk.
    spans : sequence of int, optional
        Row ``i`` has non-zero blocks only in ``i .. spans[i] - 1`` (its last descendant plus
        one, on a tree); default ``n`` for every row (a chain).

    Notes
    -----
    Tile by tile of states, so that every cache line of ``Y`` is filled while it is cached;
    row ``i`` of a state, columns ``10 i ... 10 spans[i]``, is one contiguous run.
    """
    n = blocks.shape[0]
    if spans is None:
        spans = [n] * n
    friction_view = _friction_view(y, n)
    for start in range(0, size, _TILE_STATES):
        stop = min(start + _TILE_STATES, size)
        tile = y[start:stop]
        for i in range(n):
            end = spans[i]
            tile[:, i, 10 * i:10 * end] = blocks[i, i:end, :, start:stop].reshape(
                10 * (end - i), stop - start).T
        friction_view[start:stop] = friction[start:stop]


def _with_gravity(robot, gravity):
    from dataclasses import replace
    return replace(robot, gravity=np.asarray(gravity, dtype=float))
