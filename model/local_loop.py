"""The faster local loop (the source paper's third update policy, Sect. 3.1), golden model.

Between two updates of the chain, every node may re-run its own part of the recursion on its
joint's fresh local state, at a multiple of the chain rate, without waiting for its neighbours:
it keeps the last messages it received (the forward message of its proximal neighbour, the
backward message of its distal neighbour) and runs its segments again::

    node i, local update at time t (chain update at t0 <= t):
        q_i, qd_i, qdd_i           <- its joint's state at t
        forward_in, backward_in    <- the words received in the chain update at t0
        joint, forward, local, distal segments          -> tau_i(t) (approximate)

The torque differs from a full chain update at ``t`` only through the neighbours' states, which
moved since ``t0``: the approximation's error is measured on robot trajectories by
:mod:`linkdyn.bench.local_loop` (docs/controller.md, *Local loop*). The segments are those of
the microprogram, compiled (:mod:`linkdyn.model.compiled`), on the registers the chain update
left (:attr:`GoldenChain.last_nodes`), so a local update on the state of the last chain update
gives that update's words exactly.
"""

from __future__ import annotations

import numpy as np

from .golden import GoldenChain

__all__ = ["LocalLoopChain", "LOCAL_SEGMENTS"]

#: The segments a local update runs, in order (all of a node's microprogram).
LOCAL_SEGMENTS = ("joint", "forward", "local", "distal")


class LocalLoopChain(GoldenChain):
    """A :class:`~linkdyn.model.golden.GoldenChain` that also runs local updates.

    :meth:`step` is the full chain update; :meth:`local_step` the local update of every node
    (each node on its own state only, its neighbours' messages those of the last :meth:`step`).
    Parameters, attributes and errors are those of :class:`GoldenChain`.
    """

    def local_step(self, q, qd, qdd):
        """Run the local update of every node; return the torque words, shape (n,), int64.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (n,)
            Each joint's fresh state, rad, rad/s, rad/s^2 (node i uses entry i only).

        Returns
        -------
        numpy.ndarray, shape (n,), int64
            ``tau`` word of every node (Q15.16, N·m), as each node computes it locally.

        Raises
        ------
        RuntimeError
            If no chain update ran yet (a node has no neighbour messages).
        ValueError, FixedPointRangeError
            As :meth:`GoldenChain.step` for a bad input.
        """
        if self.last_nodes is None:
            raise RuntimeError("a local update needs the messages of a chain update: call "
                               "step() first")
        n = self.robot.n
        words = self._words((q, qd, qdd), ("q", "qd", "qdd"), (n,))
        tau = np.empty(n, dtype=np.int64)
        for i, last in enumerate(self.last_nodes):
            regs = dict(last)
            regs["q"], regs["qd"], regs["qdd"] = words[0][i], words[1][i], words[2][i]
            for name in LOCAL_SEGMENTS:
                self._segments[name].run([regs])
            tau[i] = regs["tau"]
        return tau
