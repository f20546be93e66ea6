"""The first-order error budget of the fixed-point tree (docs/trees.md, *The fixed-point tree*).

The golden model's error against the float model comes from the roundings of the contract
(docs/accuracy.md, *Error budget*), each half an LSB of its register's format (written below
for Q15.16, ``2^-17``; :func:`tree_error_budget` takes each quantity's own): q, qd, qdd rounded
to the word, the
sine table's interpolation error on every angle, the inertial constants rounded to the word, and
the rounding of every result. To first order each is a small perturbation of one input of the
float model, so its effect on ``tau_i`` is at most the magnitude of the float model's
sensitivity times the perturbation:

    budget_i = sum_k |d tau_i / d q_k|   (2^-17 + table error)
             + sum_k |d tau_i / d qd_k|  2^-17 * 2      (the input, and omega rounded per node)
             + sum_k |d tau_i / d qdd_k| 2^-17 * 2      (the input, and omega_dot rounded per node)
             + sum_j |Y_ij|              2^-17          (m, m c, I rounded: the regressor Y)
             + 2^-17 * 6 * (nodes on the path and in the sub-tree of i)   (f, mu rounded per node)

with the derivatives by central differences of :func:`linkdyn.model.rnea` and ``Y`` by
:func:`linkdyn.model.regressor`. It is a worst case per state (absolute values summed), not a
fit: the measured errors stay below it without any factor.

A prismatic joint ``k`` (docs/trees.md, *Prismatic nodes*) moves ``d``, not ``theta``: its
``q`` (m) is rounded to the word only (``2^-17``, no table error), and its constant ``theta``
(the offset) carries the table error instead:

    + sum_k |d tau_i / d theta_k| (table error)               (prismatic k)

Its other roundings are those of a revolute node: ``r`` at ``q`` is a Q1.30 word (``2^-31``,
far below the rounding of ``q``), the joint-type products and the Coriolis factor ``2 qd``
are exact, and the Coriolis term is rounded with ``omega x r`` (the same Dot).

The table errs on sine and cosine independently: besides turning the frame (the angle terms
above) it scales the xy-block of ``Rz(theta)`` by ``1 + s`` with ``|s|`` up to the table error.
Its effect is

    + sum_k |d tau_i / d s_k| (table error)                   (every node k, mounts included)

with ``d tau / d s_k`` by central differences of :func:`scaled_rnea`, the per-node recursion of
docs/architecture.md with node ``k``'s ``cos theta, sin theta`` scaled. It matters most for a
prismatic joint's force, where the scaled ``R^T p_ddot`` (gravity included) enters without a
lever: ``m |p_ddot|`` times the table error.
"""

from dataclasses import replace
from functools import lru_cache

import numpy as np

from linkdyn.model import regressor, rnea
from linkdyn.model.fixedpoint import QFormat
from linkdyn.model.golden_tree import node_tree
from linkdyn.model.microprogram import microprogram
from linkdyn.model.tables import SINE_TABLE

__all__ = ["LSB", "tree_error_budget", "scaled_rnea"]

#: Half an LSB of a Q15.16 word: the largest rounding error of one word.
LSB = 2.0 ** -17

_STEP = 1e-6  # central-difference step (rad, rad/s, rad/s^2; m, m/s, m/s^2 for a prismatic q)


def tree_error_budget(robot, q, qd, qdd, fraction_bits=None):
    """Return the first-order error budget of every joint torque, N·m, shape ``(states, n)``,
    for node words with ``fraction_bits`` fractional bits everywhere (Q15.16: 16), or by default
    the formats per quantity of the register map (:data:`NODE_FORMATS`): each rounding above
    with half an LSB of its own register's format."""
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    n = robot.n
    rmap = microprogram(None if fraction_bits is None
                        else QFormat(31 - fraction_bits, fraction_bits)).registers

    def half(name):
        return 2.0 ** -(rmap[name].format.fraction_bits + 1)

    angle = half("q") + _table_error()
    inputs = ((0, angle), (1, half("qd") + half("omega_x")),
              (2, half("qdd") + half("omega_dot_x")))
    prismatic = [link.joint_type == "prismatic" for link in robot.links]
    budget = np.zeros(q.shape)
    for index, eps in inputs:
        for k in range(n):
            if index == 0 and prismatic[k]:
                eps = half("q")
            elif index == 0:
                eps = angle
            up = [q.copy(), qd.copy(), qdd.copy()]
            down = [q.copy(), qd.copy(), qdd.copy()]
            up[index][:, k] += _STEP
            down[index][:, k] -= _STEP
            budget += np.abs(rnea(robot, *up) - rnea(robot, *down)) / (2 * _STEP) * eps
    for k in np.flatnonzero(prismatic):
        # The constant theta of a prismatic joint: d tau / d offset_k times the table error.
        turned = []
        for step in (_STEP, -_STEP):
            links = list(robot.links)
            links[k] = replace(links[k], offset=links[k].offset + step)
            turned.append(rnea(replace(robot, links=tuple(links)), q, qd, qdd))
        budget += np.abs(turned[0] - turned[1]) / (2 * _STEP) * _table_error()
    # The table's scaling of every node's Rz(theta) (the mount nodes' too).
    nodes = len(robot.links) + sum(link.has_mount for link in robot.links)
    for k in range(nodes):
        scale = np.zeros(nodes)
        scale[k] = _STEP
        budget += (np.abs(scaled_rnea(robot, q, qd, qdd, scale)
                          - scaled_rnea(robot, q, qd, qdd, -scale)) / (2 * _STEP)
                   * _table_error())
    budget += np.abs(regressor(robot, q, qd, qdd)).sum(axis=-1) * max(
        half("m"), half("mc_x"), half("I_xx"))
    tree = node_tree(robot)
    reach = np.zeros(n)
    for i in range(n):
        node = tree.link_node[i]
        path = 0
        j = node
        while j >= 0:
            path += 1
            j = tree.parents[j]
        below = sum(1 for j in range(tree.n) if _descends(tree.parents, j, node)) - 1
        reach[i] = path + below
    return budget + 6 * max(half("f_x"), half("mu_x")) * reach


def _descends(parents, j, ancestor):
    while j >= 0:
        if j == ancestor:
            return True
        j = parents[j]
    return False


@lru_cache(maxsize=None)
def _table_error():
    return SINE_TABLE.worst_case_error()


def _rot_t(c, s, ca, sa, v):
    """``(Rz Rx)^T v`` with the (possibly scaled) ``c, s`` of ``Rz``; v shape (N, 3)."""
    x = c * v[:, 0] + s * v[:, 1]
    y = -s * v[:, 0] + c * v[:, 1]
    return np.stack([x, ca * y + sa * v[:, 2], -sa * y + ca * v[:, 2]], axis=-1)


def _rot(c, s, ca, sa, v):
    """``(Rz Rx) v``."""
    y = ca * v[:, 1] - sa * v[:, 2]
    z = sa * v[:, 1] + ca * v[:, 2]
    return np.stack([c * v[:, 0] - s * y, s * v[:, 0] + c * y, z], axis=-1)


def scaled_rnea(robot, q, qd, qdd, scale):
    """The inverse dynamics without friction, N·m (N), shape ``(states, n)``, with the
    ``cos theta, sin theta`` of node ``k`` multiplied by ``1 + scale[k]``.

    The per-node algorithm of docs/architecture.md (prismatic joints as docs/trees.md), written
    again here, plainly, as the budget's own reference; nodes as
    :func:`linkdyn.model.golden_tree.node_tree` numbers them (a mount is a node of its own).
    With ``scale = 0`` it equals :func:`linkdyn.model.rnea` without friction (checked by the
    tests through the budget's use).
    """
    tree = node_tree(robot)
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    count = q.shape[0]
    zeros = np.zeros(count)
    state = {}
    for i, j in enumerate(tree.link_node):
        state[j] = (q[:, i], qd[:, i], qdd[:, i])
    out = [None] * tree.n
    frames = [None] * tree.n
    base = np.broadcast_to(-robot.gravity_base, (count, 3))
    for j, link in enumerate(tree.links):
        parent = tree.parents[j]
        w, wd, a = ((np.zeros((count, 3)), np.zeros((count, 3)), base) if parent < 0
                    else out[parent][:3])
        qj, qdj, qddj = state.get(j, (zeros, zeros, zeros))
        prismatic = link.joint_type == "prismatic"
        theta = link.offset + (0.0 if prismatic else qj)
        c, s = np.cos(theta) * (1 + scale[j]), np.sin(theta) * (1 + scale[j])
        ca, sa = np.cos(link.alpha), np.sin(link.alpha)
        d = link.d + (qj if prismatic else zeros)
        r = np.stack([np.full(count, link.a), d * sa, d * ca], axis=-1)
        axis = np.array([0.0, sa, ca])
        if prismatic:
            w_i, wd_i = _rot_t(c, s, ca, sa, w), _rot_t(c, s, ca, sa, wd)
            a_in = a + np.outer(qddj, [0.0, 0.0, 1.0])
            a_i = (_rot_t(c, s, ca, sa, a_in) + np.cross(wd_i, r)
                   + np.cross(w_i, np.cross(w_i, r)) + 2 * np.cross(w_i, np.outer(qdj, axis)))
        else:
            zq = np.outer(qdj, [0.0, 0.0, 1.0])
            w_i = _rot_t(c, s, ca, sa, w + zq)
            wd_i = _rot_t(c, s, ca, sa, wd + np.outer(qddj, [0.0, 0.0, 1.0])
                          + np.cross(w * qdj[:, None], [0.0, 0.0, 1.0]))
            a_i = (_rot_t(c, s, ca, sa, a) + np.cross(wd_i, r)
                   + np.cross(w_i, np.cross(w_i, r)))
        out[j] = (w_i, wd_i, a_i)
        frames[j] = (c, s, ca, sa, r, axis, prismatic)
    sent = [None] * tree.n
    tau_nodes = [None] * tree.n
    for j in reversed(range(tree.n)):
        link = tree.links[j]
        w, wd, a = out[j]
        pi = link.parameters()
        m, mc = pi[0], pi[1:4]
        ixx, ixy, ixz, iyy, iyz, izz = pi[4:10]
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        f = m * a + np.cross(wd, mc) + np.cross(w, np.cross(w, mc))
        mu = wd @ inertia.T + np.cross(w, w @ inertia.T) + np.cross(mc, a)
        for child in tree.children[j]:
            f, mu = f + sent[child][0], mu + sent[child][1]
        c, s, ca, sa, r, axis, prismatic = frames[j]
        mu = mu + np.cross(r, f)
        tau_nodes[j] = (f if prismatic else mu) @ axis
        sent[j] = (_rot(c, s, ca, sa, f), _rot(c, s, ca, sa, mu))
    return np.stack([tau_nodes[j] for j in tree.link_node], axis=-1)
