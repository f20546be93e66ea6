"""Golden words and saturating states for the BATCH tests through the host
(tests/host/test_board_batch.py, tests/host/test_distributed_pipelined_host.py)."""

import numpy as np

from linkdyn.model import rnea_fixed
from linkdyn.model.microprogram import microprogram


def golden(robot, q, qd, qdd, f_ext=None):
    """``(tau_words, overflow)`` of ``rnea_fixed`` per state, shapes ``(k, n)``."""
    results = [rnea_fixed(robot, q[k], qd[k], qdd[k],
                          f_ext=None if f_ext is None else f_ext[k]) for k in range(len(q))]
    return (np.array([r.tau_words for r in results]),
            np.array([r.overflow for r in results], dtype=bool))


def saturating_state(robot, rng):
    """A state at the edge of the input formats (|qd|, |qdd| at 90 % of their registers'
    ranges, signs and q drawn) that saturates a register of the chain, or None if 200 draws
    find none (with the node's formats a one-link or a light two-link robot has none)."""
    rmap = microprogram().registers
    qd_max = 0.9 * rmap.qformat("qd").max_value
    qdd_max = 0.9 * rmap.qformat("qdd").max_value
    low, high = robot.q_limits()
    for _ in range(200):
        q = rng.uniform(low, high)
        qd = qd_max * rng.choice([-1.0, 1.0], robot.n)
        qdd = qdd_max * rng.choice([-1.0, 1.0], robot.n)
        if rnea_fixed(robot, q, qd, qdd).overflow.any():
            return q, qd, qdd
    return None
