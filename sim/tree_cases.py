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

from linkdyn.model import Link, Robot, load_robot
from linkdyn.model.accuracy import joint_ranges
from linkdyn.model.reference import example_robot_data_dir

from .chain_cases import random_robot

__all__ = ["two_arm_tree", "baxter_revolute", "random_tree", "tree_states"]


def two_arm_tree(head=False, arm="ur5", joints=None, torso=True):
    """Return a two-arm tree: a torso yaw joint, two arms of a built-in robot's links on it.

    Node layout (:func:`linkdyn.model.golden_tree.node_tree`): node 0 the torso (a root, axis
    vertical), nodes 1-6 the right arm (its shoulder on the torso's frame, no mount), node 7 the
    left arm's mount (0.5 m across the torso, turned by pi about the torso axis), nodes 8-13 the
    left arm; with ``head``, node 14 the head's mount and node 15 a head joint on the torso.

    Parameters
    ----------
    head : bool
        Add the head joint.
    arm : str
        The built-in robot whose links make each arm (default ``"ur5"``).
    joints : int, optional
        Keep only the first ``joints`` links of each arm (a small tree for quick simulations:
        ``joints=2`` gives 5 links on 6 nodes).
    torso : bool
        With ``False``, no torso: the arms (and the head) stand on the base as Baxter's do,
        each its own root (the right arm's shoulder on frame 0, the others through mounts).

    Returns
    -------
    Robot
        13 links without the head (on 14 nodes with the left arm's mount node), 14 with it (on
        16 nodes: the head has a mount too).
    """
    arm_links = load_robot(arm).links[:joints]
    links, parents = [], []
    if torso:
        links.append(Link("torso", a=0.25, d=0.9, alpha=0.0, mass=20.0, com=(-0.1, 0.0, -0.3),
                          inertia=np.diag((0.8, 0.7, 0.4))))
        parents.append(-1)
    hub = 0 if torso else -1
    for side, mount in (("right", None), ("left", (0.5, 0.0, 0.0, math.pi))):
        first = len(links)
        for k, link in enumerate(arm_links):
            changed = replace(link, name=f"{side}_{link.name}")
            if k == 0 and mount is not None:
                changed = replace(changed, mount=np.array(mount))
            links.append(changed)
            parents.append(hub if k == 0 else first + k - 1)
    if head:
        links.append(Link("head", a=0.05, d=0.0, alpha=-math.pi / 2, mass=2.5,
                          com=(0.0, 0.05, 0.02), inertia=np.diag((0.02, 0.015, 0.012)),
                          mount=np.array((-0.25, 0.3, 0.0, 0.0))))
        parents.append(hub)
    name = ("two_arm_tree" + ("_head" if head else "") + (f"_{joints}" if joints else "")
            + ("" if torso else "_on_base"))
    return Robot(name, tuple(links),
                 parents=tuple(parents))


def baxter_revolute():
    """Return Baxter (example-robot-data's URDF) without its four prismatic finger joints.

    The fingers are leaves; dropping them leaves the head and both 7-joint arms (15 links, 3
    roots, 2 of them mounted: 17 nodes). The fingers' masses are gone with them: this is a valid
    robot of its own, not Baxter's exact dynamics.

    Raises
    ------
    FileNotFoundError
        If example-robot-data is not installed.
    """
    path = example_robot_data_dir() / "baxter_description/urdf/baxter.urdf"
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has a <mimic> tag")
        robot = load_robot(str(path))
    keep = [i for i, link in enumerate(robot.links) if link.joint_type == "revolute"]
    index = {old: new for new, old in enumerate(keep)}
    for i, link in enumerate(robot.links):
        if i not in index and robot.children[i]:
            raise AssertionError(f"dropped joint {robot.joint_names[i]!r} is not a leaf")
    return replace(robot, name="baxter_revolute", links=tuple(robot.links[i] for i in keep),
                   parents=tuple(-1 if robot.parents[i] < 0 else index[robot.parents[i]]
                                 for i in keep),
                   joint_names=tuple(robot.joint_names[i] for i in keep))


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
