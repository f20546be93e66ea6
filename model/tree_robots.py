"""Tree robots of the fixed-point tree's tests, benchmarks and accuracy report (docs/trees.md).

- :func:`two_arm_tree`: a torso joint carrying two 6-joint arms (the UR5's links): the first
  arm on the torso's frame, the second through a mount (a shoulder beside the first), 14 nodes
  with the second arm's mount node; optionally a head (one more joint on the torso);
- :func:`baxter_revolute`: example-robot-data's Baxter (both arms and the head, 15 revolute
  joints) without its prismatic fingers, 17 nodes with its two root mounts.

(:mod:`linkdyn.sim.tree_cases` re-exports them beside its random trees and states.)
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .library import load_robot
from .reference import example_robot_data_dir
from .robot import Link, Robot

__all__ = ["two_arm_tree", "baxter_revolute"]


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
