"""Test robots of the tree of nodes: two-arm trees like Baxter, random trees, joint states.

Used by the golden-tree and gateware-tree tests and by the tree benchmark:

- :func:`two_arm_tree`: a torso joint carrying two 6-joint arms (the UR5's links): the first
  arm on the torso's frame, the second through a mount (a shoulder beside the first), 14 nodes
  with the second arm's mount node; optionally a head (one more joint on the torso);
- :func:`baxter_revolute`: example-robot-data's Baxter (both arms and the head, 15 revolute
  joints) without its prismatic fingers, 17 nodes with its two root mounts;
- :func:`random_tree`: random links (:func:`linkdyn.sim.chain_cases.random_robot`) on a random
  parent list, some links mounted, several roots possible;
- :func:`tree_states`: random joint states within the joint limits.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from linkdyn.model.accuracy import joint_ranges
from linkdyn.model.tree_robots import baxter_revolute, two_arm_tree

from .chain_cases import random_robot

__all__ = ["two_arm_tree", "baxter_revolute", "random_tree", "tree_states"]


def random_tree(links, seed, *, mounts=0.4, roots=0.15, max_nodes=None):
    """Return a random tree of revolute joints.

    Parameters
    ----------
    links : int
        Number of links, >= 1.
    seed : int
        Random seed.
    mounts : float
        Probability that a link which is not its parent's first child (or not the first root)
        gets a random mount (``a, d`` in ±0.4 m, any ``alpha``, ``theta``).
    roots : float
        Probability that a link after the first is another root.
    max_nodes : int, optional
        Give no more mounts once the links and mounts would make more nodes than this
        (:func:`linkdyn.model.golden_tree.node_tree`).

    Returns
    -------
    Robot
        Links of :func:`~linkdyn.sim.chain_cases.random_robot`; gravity 9.81 m/s^2 in a random
        direction.
    """
    base = random_robot(links, seed)
    rng = np.random.default_rng([int(seed), int(links), 5113])
    parents = [-1]
    for i in range(1, links):
        parents.append(-1 if rng.random() < roots else int(rng.integers(0, i)))
    seen = set()
    out = []
    for i, (link, parent) in enumerate(zip(base.links, parents)):
        first = parent not in seen
        seen.add(parent)
        # Mount the links that need one on a real robot (later children, later roots), and now
        # and then a first child too (a mount is allowed anywhere).
        wanted = (not first and rng.random() < mounts) or rng.random() < mounts / 4
        if wanted and (max_nodes is None or links + len(
                [l for l in out if l.has_mount]) < max_nodes):
            mount = np.array([rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4),
                              rng.uniform(-math.pi, math.pi), rng.uniform(-math.pi, math.pi)])
            link = replace(link, mount=mount)
        out.append(link)
    return replace(base, name=f"random_tree_{links}_{seed}", links=tuple(out),
                   parents=tuple(parents))


def tree_states(robot, count, seed):
    """Return ``(q, qd, qdd)``, each of shape ``(count, n)``: random states within the joint
    limits (:func:`linkdyn.model.accuracy.joint_ranges`)."""
    rng = np.random.default_rng([int(seed), robot.n, 2718])
    ranges = joint_ranges(robot)
    q = rng.uniform(ranges["q_min"], ranges["q_max"], (count, robot.n))
    qd = rng.uniform(-ranges["qd_max"], ranges["qd_max"], (count, robot.n))
    qdd = rng.uniform(-ranges["qdd_max"], ranges["qdd_max"], (count, robot.n))
    return q, qd, qdd
