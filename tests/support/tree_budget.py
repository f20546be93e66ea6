"""The first-order error budget of the fixed-point tree (docs/trees.md, *The fixed-point tree*).

The golden model's error against the float model comes from the roundings of the contract
(docs/accuracy.md, *Error budget*): q, qd, qdd rounded to the word (half an LSB, ``2^-17``), the
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
"""

from dataclasses import replace
from functools import lru_cache

import numpy as np

from linkdyn.model import regressor, rnea
from linkdyn.model.golden_tree import node_tree
from linkdyn.model.tables import SINE_TABLE

__all__ = ["LSB", "tree_error_budget"]

#: Half an LSB of a Q15.16 word: the largest rounding error of one word.
LSB = 2.0 ** -17

_STEP = 1e-6  # central-difference step (rad, rad/s, rad/s^2; m, m/s, m/s^2 for a prismatic q)


def tree_error_budget(robot, q, qd, qdd, fraction_bits=16):
    """Return the first-order error budget of every joint torque, N·m, shape ``(states, n)``,
    for node words with ``fraction_bits`` fractional bits (Q15.16: 16)."""
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    n = robot.n
    lsb = 2.0 ** -(fraction_bits + 1)
    angle = lsb + _table_error()
    prismatic = [link.joint_type == "prismatic" for link in robot.links]
    budget = np.zeros(q.shape)
    for index, eps in ((0, angle), (1, 2 * lsb), (2, 2 * lsb)):
        for k in range(n):
            if index == 0 and prismatic[k]:
                eps = lsb
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
    budget += np.abs(regressor(robot, q, qd, qdd)).sum(axis=-1) * lsb
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
    return budget + 6 * lsb * reach


def _descends(parents, j, ancestor):
    while j >= 0:
        if j == ancestor:
            return True
        j = parents[j]
    return False


@lru_cache(maxsize=None)
def _table_error():
    return SINE_TABLE.worst_case_error()
