"""URDF import: a serial chain or a whole tree of joints from a URDF file, in standard DH form.

:func:`load_urdf` reads a URDF file (with :mod:`xml.etree.ElementTree`, no other dependency),
selects the serial chain from the root link to a tip link (or, for a branched URDF without a tip,
takes the whole tree, docs/trees.md), converts its kinematics to the
standard Denavit-Hartenberg convention of :mod:`linkdyn.model.robot` and re-expresses every
link's inertial parameters in its DH frame. The result is a :class:`~linkdyn.model.Robot` whose
:func:`~linkdyn.model.rnea` gives the same joint torques as the URDF model (checked against
Pinocchio in ``tests/model/test_urdf_pinocchio.py`` to 1e-9 relative).

What becomes what
-----------------
* ``revolute`` and ``continuous`` joints on the root-to-tip path are the chain joints, in path
  order. ``q`` of the :class:`Robot` is exactly the URDF joint angle (same sign, same zero).
* ``fixed`` joints are merged: the child link's mass, centre of mass and inertia are added to the
  link it is attached to (rigid-body sum, parallel-axis theorem).
* Links hanging off the chain through *movable* joints that are not on the chain (the Panda's
  finger joints, a second arm, joints beyond ``tip``) are merged rigidly, at the joints' zero
  position, into the link they hang from. This is what Pinocchio's ``buildReducedModel`` does
  when those joints are locked at the neutral configuration ``q = 0``.
* Links before the first chain joint (the base) carry no torque on a fixed base and are dropped
  (their inertias are not validated either).
* ``prismatic`` joints become prismatic links (the joint variable moves ``d``; the axis line
  goes through the joint origin); ``floating`` and ``planar`` joints anywhere raise
  :class:`RobotDescriptionError` (fixed-base robots only).
* A branched URDF without ``tip`` gives the whole tree: every revolute, continuous and prismatic
  joint is a node, depth first in document order; ``Robot.parents`` holds the tree,
  ``Robot.joint_names`` the URDF joint names. Each node's DH frame lies on its first child's
  axis; every other child (and every root after the first) gets a constant ``Link.mount``, the
  DH step from its parent's frame (frame 0) along the common normal to its own axis.
* ``<mimic>`` on a chain joint is ignored (the joint stays independent; a warning says so).

DH construction (standard DH, docs/architecture.md, *The per-node algorithm*)
------------------------------------------------
``z_{i-1}`` lies on joint ``i``'s axis and points along the URDF ``<axis>`` (so positive ``q``
is the URDF's positive rotation); ``x_i`` is the common normal from axis ``i`` to axis ``i+1``,
pointing from axis ``i`` to axis ``i+1`` when they are skew (``a_i > 0``) and along
``z_{i-1} x z_i`` when they intersect; for parallel axes the common normal through the previous
origin is taken (``d_i = 0``); for coincident axes ``x_i = x_{i-1}``. Frame 0 has its origin at
the foot of the perpendicular from the URDF root origin onto axis 1 and ``x_0 = x_1`` at
``q = 0`` (so ``offset_1 = 0``). Frame ``n`` has ``z_n = z_{n-1}``, ``x_n = x_{n-1}``
(``a_n = alpha_n = offset_n = 0``), its origin is the foot of the perpendicular from the tip link
origin onto axis ``n``. ``theta`` offsets make the DH zero pose the URDF zero pose.

Values within :data:`SNAP_TOLERANCE` of 0 (lengths) or of a multiple of pi/2 (angles) are
snapped to them, so structural zeros stay exact zeros (``snap_tolerance=0`` turns this off).
Consecutive axes closer than :data:`PARALLEL_TOLERANCE` to parallel are treated as parallel
(with a warning above 1e-10 rad, since that changes the kinematics by about
``angle x lever``); a common normal farther than :data:`FAR_COMMON_NORMAL` from the axes' URDF
joint origins (nearly parallel axes) gives a warning: the DH parameters are then exact but
ill-conditioned (huge ``d``), which a fixed-point datapath cannot represent.

Units: SI (m, kg, kg·m^2, rad, rad/s, N·m), like URDF.
"""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .kinematics import link_frames
from .robot import JointLimits, Link, Robot, RobotDescriptionError, check_inertia

__all__ = [
    "load_urdf", "SNAP_TOLERANCE", "PARALLEL_TOLERANCE", "FAR_COMMON_NORMAL",
]

#: Lengths (m) and angles (rad) closer than this to 0 or to a multiple of pi/2 are snapped.
SNAP_TOLERANCE = 1e-10

#: Consecutive joint axes closer than this (rad) to parallel are treated as parallel.
PARALLEL_TOLERANCE = 1e-6

# Below this angle (rad) treating nearly parallel axes as parallel is not worth a warning.
_SILENT_PARALLEL = 1e-10

# Distances (m) below this are rounding noise: intersecting / coincident axes.
_TINY = 1e-13

#: A common normal farther than this (m) from the axes' URDF joint origins triggers a warning.
FAR_COMMON_NORMAL = 10.0

_MOVABLE = ("revolute", "continuous", "prismatic")
_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
_MAX_NAMES = 12


# --------------------------------------------------------------------------------------------
# Parsed URDF
# --------------------------------------------------------------------------------------------

@dataclass
class _Body:
    """A URDF ``<link>``: inertial data in the link frame."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    # Inertia about the com, in the link frame's axes (the <inertial><origin rpy> applied).
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class _Joint:
    """A URDF ``<joint>``."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray        # (4, 4) parent link frame -> joint (= child link) frame
    axis: np.ndarray          # (3,) unit vector in the joint frame
    limits: JointLimits
    mimic: bool = False


def _fail(source, message):
    return RobotDescriptionError(f"URDF {source}: {message}")


def _numbers(text, count, what, source):
    """Parse ``count`` whitespace-separated finite numbers."""
    if "${" in text or "$(" in text:
        raise _fail(source, f"{what} is an unexpanded xacro expression, {text!r}: the file is a "
                            "xacro template, not a URDF; expand it first (xacro "
                            "file.urdf.xacro > file.urdf, from ROS's xacro package) and load "
                            "the .urdf")
    parts = text.split()
    if len(parts) != count:
        raise _fail(source, f"{what} must have {count} numbers, not {text!r}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise _fail(source, f"{what} must be numeric, not {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise _fail(source, f"{what} must be finite, not {text!r}")
    return values


def _number(element, attribute, what, source, default=None):
    text = element.get(attribute)
    if text is None:
        if default is None:
            raise _fail(source, f"{what} has no attribute {attribute!r}")
        return default
    return _numbers(text, 1, f"{what} {attribute!r}", source)[0]


def _rpy_matrix(roll, pitch, yaw):
    """URDF fixed-axis roll-pitch-yaw: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _origin(element, what, source):
    """Homogeneous transform of an ``<origin xyz rpy>`` child of ``element`` (identity if none)."""
    transform = np.eye(4)
    origin = element.find("origin")
    if origin is None:
        return transform
    xyz = _numbers(origin.get("xyz", "0 0 0"), 3, f"{what} origin xyz", source)
    rpy = _numbers(origin.get("rpy", "0 0 0"), 3, f"{what} origin rpy", source)
    transform[:3, :3] = _rpy_matrix(*rpy)
    transform[:3, 3] = xyz
    return transform


def _parse_link(element, source):
    name = element.get("name")
    if not name:
        raise _fail(source, "a <link> has no name")
    body = _Body(name)
    inertial = element.find("inertial")
    if inertial is None:
        return body
    what = f"link {name!r}"
    mass_element = inertial.find("mass")
    if mass_element is None:
        raise _fail(source, f"{what} <inertial> has no <mass>")
    mass = _number(mass_element, "value", f"{what} mass", source)
    if mass < 0:
        raise _fail(source, f"{what} mass must be >= 0, not {mass!r}")
    inertia_element = inertial.find("inertia")
    if inertia_element is None:
        raise _fail(source, f"{what} <inertial> has no <inertia>")
    six = [_number(inertia_element, key, f"{what} inertia", source)
           for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
    ixx, ixy, ixz, iyy, iyz, izz = six
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    frame = _origin(inertial, f"{what} inertial", source)
    rotation = frame[:3, :3]
    body.mass = mass
    body.com = frame[:3, 3].copy()
    body.inertia = rotation @ inertia @ rotation.T
    return body


def _parse_limits(element, name, joint_type, source):
    limit = element.find("limit")
    if limit is None:
        return JointLimits()
    what = f"joint {name!r} limit"
    values = {}
    for attribute in ("lower", "upper", "velocity", "effort"):
        text = limit.get(attribute)
        values[attribute] = (None if text is None
                             else _numbers(text, 1, f"{what} {attribute!r}", source)[0])
    for attribute in ("velocity", "effort"):
        value = values[attribute]
        if value is not None and value < 0:
            raise _fail(source, f"{what} {attribute!r} must be >= 0, not {value!r}")
        if value == 0:
            values[attribute] = None   # 0 is commonly written for "not given"
    if joint_type == "continuous":
        values["lower"] = values["upper"] = None
    if (values["lower"] is not None and values["upper"] is not None
            and values["lower"] > values["upper"]):
        raise _fail(source, f"{what} lower {values['lower']!r} is above upper "
                            f"{values['upper']!r}")
    return JointLimits(q_min=values["lower"], q_max=values["upper"],
                       qd_max=values["velocity"], tau_max=values["effort"])


def _parse_joint(element, source):
    name = element.get("name")
    if not name:
        raise _fail(source, "a <joint> has no name")
    joint_type = element.get("type")
    if joint_type not in _JOINT_TYPES:
        raise _fail(source, f"joint {name!r} has unknown type {joint_type!r}; URDF types are "
                            f"{', '.join(_JOINT_TYPES)}")
    ends = {}
    for tag in ("parent", "child"):
        end = element.find(tag)
        if end is None or not end.get("link"):
            raise _fail(source, f"joint {name!r} has no <{tag} link=...>")
        ends[tag] = end.get("link")
    axis = np.array([1.0, 0.0, 0.0])
    axis_element = element.find("axis")
    if joint_type in ("revolute", "continuous", "prismatic"):
        if axis_element is not None:
            axis = np.array(_numbers(axis_element.get("xyz", "1 0 0"), 3,
                                     f"joint {name!r} axis", source))
        norm = float(np.linalg.norm(axis))
        if norm < 1e-12:
            raise _fail(source, f"joint {name!r} axis must not be zero")
        axis = axis / norm
    limits = (_parse_limits(element, name, joint_type, source)
              if joint_type in _MOVABLE else JointLimits())
    return _Joint(name, joint_type, ends["parent"], ends["child"],
                  _origin(element, f"joint {name!r}", source), axis, limits,
                  mimic=element.find("mimic") is not None)


def _parse(path):
    path = Path(path)
    source = repr(str(path))
    if not path.is_file():
        raise _fail(source, "file does not exist" if not path.exists() else "is not a file")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as error:
        raise _fail(source, f"is not valid XML: {error}") from None
    except OSError as error:
        raise _fail(source, f"cannot be read: {error}") from None
    if root.tag != "robot":
        raise _fail(source, f"root element must be <robot>, not <{root.tag}>")
    bodies = {}
    for element in root.findall("link"):
        body = _parse_link(element, source)
        if body.name in bodies:
            raise _fail(source, f"link {body.name!r} is defined twice")
        bodies[body.name] = body
    joints = []
    names = set()
    for element in root.findall("joint"):
        joint = _parse_joint(element, source)
        if joint.name in names:
            raise _fail(source, f"joint {joint.name!r} is defined twice")
        names.add(joint.name)
        joints.append(joint)
    return root.get("name") or path.stem, source, bodies, joints


# --------------------------------------------------------------------------------------------
# Tree structure and chain selection
# --------------------------------------------------------------------------------------------

def _quoted(names):
    names = list(names)
    text = ", ".join(repr(n) for n in names[:_MAX_NAMES])
    if len(names) > _MAX_NAMES:
        text += f", ... ({len(names) - _MAX_NAMES} more)"
    return text


def _tree(source, bodies, joints):
    """Check the joint graph is one tree; return (root, parent_joint, children)."""
    if not bodies:
        raise _fail(source, "has no links")
    if not joints:
        raise _fail(source, "has no joints")
    parent_joint = {}
    children = {name: [] for name in bodies}
    for joint in joints:
        for end in (joint.parent, joint.child):
            if end not in bodies:
                raise _fail(source, f"joint {joint.name!r} refers to undefined link {end!r}")
        if joint.parent == joint.child:
            raise _fail(source, f"joint {joint.name!r} connects link {joint.child!r} to itself "
                                f"(a kinematic cycle)")
        if joint.child in parent_joint:
            raise _fail(source, f"link {joint.child!r} has two parents: joints "
                                f"{parent_joint[joint.child].name!r} and {joint.name!r} "
                                f"(a kinematic loop); only trees are supported")
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in bodies if name not in parent_joint]
    if not roots:
        raise _fail(source, "has no root link (every link is a joint's child): the joints "
                            "form a kinematic cycle")
    reached = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(joint.child for joint in children[name])
    unreached = [name for name in bodies if name not in reached]
    if unreached:
        cycle = [parent_joint[name].name for name in unreached]
        raise _fail(source, f"joints {_quoted(cycle)} form (or hang off) a kinematic "
                            f"cycle (links {_quoted(unreached)} are not reachable from a root)")
    if len(roots) > 1:
        raise _fail(source, f"has several root links {_quoted(roots)}: the links do not form "
                            f"one connected tree")
    return roots[0], parent_joint, children


def _active_subtrees(root, children):
    """Return ``{link: whether the sub-tree below the link holds a movable joint}``."""
    order, stack = [], [root]
    while stack:
        order.append(stack.pop())
        stack.extend(joint.child for joint in children[order[-1]])
    active = {}
    for name in reversed(order):
        active[name] = any(j.type != "fixed" or active[j.child] for j in children[name])
    return active


def _moving_branches(link, children, active):
    """Return the joints below ``link`` that lead to a movable joint."""
    return [j for j in children[link] if j.type != "fixed" or active[j.child]]


def _chain_path(source, root, parent_joint, children, tip):
    """Return (tip, joints on the path root -> tip); without ``tip`` the URDF is unbranched."""
    if tip is None:
        active = _active_subtrees(root, children)
        link = root
        while True:
            branches = _moving_branches(link, children, active)
            if not branches:
                break
            link = branches[0].child
        tip = link
    elif not isinstance(tip, str) or tip not in children:
        raise _fail(source, f"tip link {tip!r} is not a link of this URDF; links are "
                            f"{_quoted(children)}")
    path = []
    link = tip
    while link != root:
        joint = parent_joint[link]
        path.append(joint)
        link = joint.parent
    return tip, path[::-1]


def _zero_poses(root, children):
    """Pose (4x4, root frame) of every link with all joints at zero."""
    poses = {root: np.eye(4)}
    stack = [root]
    while stack:
        link = stack.pop()
        for joint in children[link]:
            poses[joint.child] = poses[link] @ joint.origin
            stack.append(joint.child)
    return poses


# --------------------------------------------------------------------------------------------
# DH conversion
# --------------------------------------------------------------------------------------------

def _snap_length(value, tolerance):
    return 0.0 if abs(value) < tolerance else float(value)


def _snap_angle(value, tolerance):
    """Wrap to (-pi, pi] and snap to a multiple of pi/2 within ``tolerance``."""
    value = math.remainder(float(value), 2 * math.pi)
    quarter = round(value / (math.pi / 2))
    if abs(value - quarter * math.pi / 2) < tolerance:
        value = quarter * math.pi / 2
    if value <= -math.pi:
        value += 2 * math.pi
    return 0.0 if value == 0 else value


def _unit(v):
    return v / np.linalg.norm(v)


def _foot(point, axis_point, axis_dir):
    """Foot of the perpendicular from ``point`` onto the line (axis_point, axis_dir)."""
    return axis_point + float((point - axis_point) @ axis_dir) * axis_dir


def _dh_parameters(source, names, points, dirs, tip_origin, snap):
    """Standard DH parameters of the axes (points[i], dirs[i]), all in the URDF root frame.

    Returns (dh, base): dh rows (a, d, alpha, offset) and the pose (4x4) of DH frame 0.
    """
    dh, base, _ = _dh_path(source, names, points, dirs, tip_origin, snap)
    return dh, base


def _next_origin(source, names, i, origin_prev, x_prev, u, p, w, r, snap):
    """Origin and x axis of the DH frame on axis (r, w) that follows axis (p, u).

    ``origin_prev`` (on axis (p, u)) and ``x_prev`` are those of the frame before: used when
    the axes are parallel (the common normal through ``origin_prev``) or coincident.
    """
    cross = np.cross(u, w)
    sine = float(np.linalg.norm(cross))
    if sine < PARALLEL_TOLERANCE:
        if sine >= _SILENT_PARALLEL:
            warnings.warn(
                f"URDF {source}: axes of joints {names[i]!r} and {names[i + 1]!r} are "
                f"parallel to within {sine:.3g} rad and are treated as parallel; the DH "
                f"model's kinematics deviate from the URDF by about {sine:.3g} x the lever "
                f"arm", stacklevel=4)
        origin = _foot(origin_prev, r, w)
        v = origin - origin_prev
        lateral = v - float(v @ u) * u
        distance = float(np.linalg.norm(lateral))
        x = lateral / distance if distance >= max(snap, _TINY) else x_prev
    else:
        normal = cross / sine
        # Closest points s on axis i and t on axis i+1: p + s u, r + t w.
        offset = r - p
        b = float(u @ w)
        denominator = sine * sine  # = 1 - b^2, without its cancellation
        s = (float(offset @ u) - b * float(offset @ w)) / denominator
        t = (b * float(offset @ u) - float(offset @ w)) / denominator
        foot_i, origin = p + s * u, r + t * w
        a = float((origin - foot_i) @ normal)
        x = normal if abs(a) < max(snap, _TINY) else math.copysign(1.0, a) * normal
        if max(abs(s), abs(t)) > FAR_COMMON_NORMAL:
            warnings.warn(
                f"URDF {source}: the common normal of the axes of joints {names[i]!r} and "
                f"{names[i + 1]!r} (at {math.asin(min(sine, 1.0)):.3g} rad, nearly "
                f"parallel) lies {max(abs(s), abs(t)):.3g} m away from the joints, so the "
                f"DH parameters are ill-conditioned", stacklevel=4)
    return origin, x


def _dh_row(origin_prev, x_prev, z_prev, origin, x, z, snap):
    """``(a, d, alpha, theta)`` of the DH step between two frames (origins, x and z axes)."""
    v = origin - origin_prev
    d = float(v @ z_prev)
    a = float(v @ x)
    alpha = math.atan2(float(np.cross(z_prev, z) @ x), float(z_prev @ z))
    theta = math.atan2(float(np.cross(x_prev, x) @ z_prev), float(x_prev @ x))
    return (_snap_length(a, snap), _snap_length(d, snap), _snap_angle(alpha, snap),
            _snap_angle(theta, snap))


def _dh_path(source, names, points, dirs, tip_origin, snap, start=None):
    """Standard DH parameters of a path of axes (points[i], dirs[i]), URDF root frame.

    Parameters
    ----------
    start : tuple, optional
        ``(origin, x, z, name)`` of the DH frame the path hangs from (a branch point's frame, or
        frame 0 for a second root). Default: the path starts at the base and chooses frame 0
        (the foot of the root origin on axis 1, ``x_0 = x_1``).

    Returns
    -------
    tuple
        ``(dh, first, frames)``: the rows ``(a, d, alpha, offset)``; without ``start`` the pose
        (4x4) of DH frame 0, with it the mount row ``(a, d, alpha, theta)`` from the start frame
        to frame 0 of the path (on axis 1); ``frames[i] = (origin, x, z)`` of DH frame ``i + 1``
        of the path (the frame of the path's link ``i``).
    """
    n = len(dirs)
    if start is None:
        origins = [_foot(np.zeros(3), points[0], dirs[0])]
        xs = [None]  # x_0 is chosen after x_1 is known
    else:
        start_origin, start_x, start_z, start_name = start
        origin, x = _next_origin(source, [start_name, names[0]], 0, start_origin, start_x,
                                 start_z, start_origin, dirs[0], points[0], snap)
        origins, xs = [origin], [x]
    for i in range(n - 1):
        origin, x = _next_origin(source, names, i, origins[i], xs[i], dirs[i], points[i],
                                 dirs[i + 1], points[i + 1], snap)
        origins.append(origin)
        xs.append(x)
    origins.append(_foot(tip_origin, points[n - 1], dirs[n - 1]))
    xs.append(xs[n - 1])
    if start is None:
        # Coincident leading axes (or n == 1) leave x undefined: take the first defined one, or
        # the root frame's x (or y) axis projected on the plane normal to axis 1.
        first = next((x for x in xs if x is not None), None)
        if first is None:
            for candidate in np.eye(3)[:2]:
                projected = candidate - float(candidate @ dirs[0]) * dirs[0]
                if np.linalg.norm(projected) > 0.1:
                    first = _unit(projected)
                    break
        for i in range(len(xs)):
            if xs[i] is None:
                xs[i] = first
            else:
                break
        xs[0] = xs[1]
    zs = list(dirs) + [dirs[n - 1]]
    dh = np.zeros((n, 4))
    for i in range(1, n + 1):
        if i == n:
            d = float((origins[i] - origins[i - 1]) @ zs[i - 1])
            dh[i - 1] = (0.0, _snap_length(d, snap), 0.0, 0.0)
            continue
        dh[i - 1] = _dh_row(origins[i - 1], xs[i - 1], zs[i - 1], origins[i], xs[i], zs[i],
                            snap)
    frames = [(origins[i], xs[i], zs[i]) for i in range(1, n + 1)]
    if start is not None:
        mount = _dh_row(start_origin, start_x, start_z, origins[0], xs[0], zs[0], snap)
        return dh, mount, frames
    x0 = _unit(xs[0] - float(xs[0] @ zs[0]) * zs[0])  # exact right angle for Robot's check
    base = np.eye(4)
    base[:3, 0] = x0
    base[:3, 1] = np.cross(zs[0], x0)
    base[:3, 2] = zs[0]
    base[:3, 3] = origins[0]
    return dh, base, frames


def _tree_dh(source, names, points, dirs, parents, tip_origins, snap):
    """Standard DH parameters of a tree of axes: each child's frame relative to its parent's.

    Node ``i``'s DH frame lies on the axis of its first child (lowest index); a leaf's at the
    foot of ``tip_origins[i]`` on its own axis. The path base -> first root -> first children
    ... is built as a chain (:func:`_dh_path`, choosing frame 0); every other child (and every
    other root) starts a new path whose mount is the DH step from its parent's frame (frame 0)
    to the frame on its axis.

    Returns
    -------
    tuple
        ``(dh, mounts, base)``: rows ``(a, d, alpha, offset)`` (n, 4), mount rows
        ``(a, d, alpha, theta)`` (n, 4), zero where the parent's frame is on the axis; the pose
        (4x4) of DH frame 0.
    """
    n = len(names)
    children = [[] for _ in range(n)]
    roots = []
    for i, parent in enumerate(parents):
        (children[parent] if parent >= 0 else roots).append(i)
    dh, mounts = np.zeros((n, 4)), np.zeros((n, 4))
    frames = [None] * n
    base = None
    pending = [(root, -1) for root in roots]
    while pending:
        first, parent = pending.pop(0)
        path = [first]
        while children[path[-1]]:
            path.append(children[path[-1]][0])
        for node in path:
            pending.extend((child, node) for child in children[node][1:])
        args = (source, [names[i] for i in path], [points[i] for i in path],
                [dirs[i] for i in path], tip_origins[path[-1]], snap)
        if base is None:
            rows, base, path_frames = _dh_path(*args)
        else:
            if parent < 0:
                start = (base[:3, 3], base[:3, 0], base[:3, 2], "<base>")
            else:
                start = (*frames[parent], names[parent])
            rows, mounts[first], path_frames = _dh_path(*args, start=start)
        for node, row, frame in zip(path, rows, path_frames):
            dh[node], frames[node] = row, frame
    return dh, mounts, base


def _rigid_inverse(transform):
    inverse = np.eye(4)
    inverse[:3, :3] = transform[:3, :3].T
    inverse[:3, 3] = -transform[:3, :3].T @ transform[:3, 3]
    return inverse


def _orthonormalise(transform):
    """Remove the rounding drift of a product of rotations (SVD projection onto SO(3))."""
    u, _, vt = np.linalg.svd(transform[:3, :3])
    result = transform.copy()
    result[:3, :3] = u @ vt
    return result


def _combine(parts):
    """Rigid-body sum of (mass, com, inertia about com) in one frame."""
    mass = sum(m for m, _, _ in parts)
    if mass > 0:
        com = sum(m * c for m, c, _ in parts) / mass
    else:
        com = np.zeros(3)
    inertia = np.zeros((3, 3))
    for m, c, rotational in parts:
        r = c - com
        inertia += rotational + m * (float(r @ r) * np.eye(3) - np.outer(r, r))
    return mass, com, 0.5 * (inertia + inertia.T)


# --------------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------------

def load_urdf(path, tip=None, name=None, *, gravity=None, snap_tolerance=SNAP_TOLERANCE):
    """Load a chain or a tree of revolute and prismatic joints from a URDF file, standard DH.

    Parameters
    ----------
    path : str or os.PathLike
        The URDF file.
    tip : str, optional
        Name of the URDF link that ends the chain; the chain is the path from the root link to
        it. Movable joints off the path (fingers, joints beyond ``tip``) are locked at zero and
        their links merged rigidly into the link they hang from, like Pinocchio's
        ``buildReducedModel`` at ``q = 0``. Default: the whole robot; an unbranched URDF gives
        the chain to the child link of the last movable joint (fixed-only sub-trees hanging
        from it are merged into it), a branched one (more than one sub-tree with movable joints,
        e.g. the Panda's two finger joints, a second arm) the whole tree.
    name : str, optional
        Name of the robot; default the URDF ``<robot name>`` (or the file stem).
    gravity : array_like, shape (3,), optional
        Gravity in the URDF root frame, m/s^2; default the :class:`Robot` default
        ``(0, 0, -9.80665)`` (Pinocchio uses ``(0, 0, -9.81)``).
    snap_tolerance : float, optional
        DH lengths within this many metres of 0, and angles (``alpha``, offsets) within this
        many radians of a multiple of pi/2, are snapped to them; default
        :data:`SNAP_TOLERANCE` (1e-10). URDF files write pi/2 as ``1.57079632679`` (5e-12 rad
        off); snapping gives the exact structural zeros and right angles the DH table is meant
        to have, at the price of a kinematic change of that size (for the UR5: torque changes
        of ~60 N·m x 5e-12 rad). ``0`` keeps the URDF's numbers exactly.

    Returns
    -------
    Robot
        ``n`` links, one per revolute/continuous/prismatic joint on the chain (or in the tree,
        depth first; ``robot.parents``, ``robot.joint_names``), in chain order; link ``i``
        is named after the URDF child link of joint ``i`` and holds, in DH frame ``i``, the
        mass, centre of mass (m) and inertia about the centre of mass (kg·m^2) of that link plus
        every link rigidly attached to it. ``q`` is the URDF joint angle (same sign and zero;
        continuous joints are plain angles). ``robot.base`` is the pose of DH frame 0 in the
        URDF root frame (the world frame); ``robot.tool`` is the pose of the ``tip`` link frame
        in DH frame ``n``.

        Joint limits come from ``<limit lower upper velocity effort>`` as ``q_min, q_max`` (rad),
        ``qd_max`` (rad/s) and ``tau_max`` (N·m); continuous joints have no position limits; a
        velocity or effort of 0 means "not given". URDF has no acceleration limit.

        Friction is zero. ``<dynamics damping friction>`` is not imported: URDF tools (and
        Pinocchio's ``rnea``) do not apply it, and URDF files often carry placeholders there.
        Set it with ``dataclasses.replace`` on the links (``Friction(coulomb=friction * 2 / pi,
        viscous=damping)`` gives the same asymptotic Coulomb level as a Gazebo-style
        ``friction`` torque).

    Raises
    ------
    RobotDescriptionError
        If the file is missing or not URDF XML; a number is not numeric or not finite; a mass
        is negative; the inertia of a link that enters the model (not of the dropped base
        links) is not physically realisable: not positive semi-definite or violating the
        triangle inequality (the message names the URDF link);
        the joints do not form one tree (a link with two parents, a cycle, several roots); there
        are no joints, or no movable joint between the root and the tip; ``tip`` is not a link;
        a joint is ``floating`` or ``planar``.

    Warns
    -----
    UserWarning
        When nearly parallel consecutive axes make the DH parameters approximate or
        ill-conditioned, or a chain joint has a ``<mimic>`` tag.
    """
    snap_tolerance = float(snap_tolerance)
    if not 0 <= snap_tolerance < 1e-3:
        raise ValueError(f"snap_tolerance must be in [0, 1e-3), not {snap_tolerance!r}")
    robot_name, source, bodies, joints = _parse(path)
    root, parent_joint, children = _tree(source, bodies, joints)
    for joint in joints:
        if joint.type in ("floating", "planar"):
            raise _fail(source, f"joint {joint.name!r} is {joint.type}; only fixed-base trees "
                                f"of revolute and prismatic joints are supported")
    if not any(joint.type in _MOVABLE or joint.type == "prismatic" for joint in joints):
        raise _fail(source, "has no revolute, continuous or prismatic joint")
    if tip is None and _is_branched(root, children):
        # The whole tree: every movable joint is a node, depth first in document order (every
        # parent before its children, a branch's nodes one contiguous run).
        chain, stack = [], [root]
        while stack:
            link = stack.pop()
            for joint in reversed(children[link]):
                stack.append(joint.child)
            if link != root and parent_joint[link].type in _MOVABLE:
                chain.append(parent_joint[link])
    else:
        tip, path_joints = _chain_path(source, root, parent_joint, children, tip)
        chain = [joint for joint in path_joints if joint.type in _MOVABLE]
        if not chain:
            raise _fail(source, f"has no revolute or continuous joint between root link "
                                f"{root!r} and tip link {tip!r}")
    for joint in chain:
        if joint.mimic:
            warnings.warn(f"URDF {source}: joint {joint.name!r} has a <mimic> tag, which is "
                          f"ignored: the joint is an independent joint of the chain",
                          stacklevel=2)
    index = {joint.name: i for i, joint in enumerate(chain)}
    parents = []
    for joint in chain:
        link = joint.parent
        while link != root and parent_joint[link].name not in index:
            link = parent_joint[link].parent
        parents.append(-1 if link == root else index[parent_joint[link].name])
    if tip is None:
        # Each leaf's frame n sits at the foot of its URDF child link's origin on its axis.
        tip = chain[-1].child

    poses = _zero_poses(root, children)
    names = [joint.name for joint in chain]
    points = [poses[joint.child][:3, 3] for joint in chain]
    dirs = [_unit(poses[joint.child][:3, :3] @ joint.axis) for joint in chain]
    tip_origins = [poses[joint.child][:3, 3] for joint in chain]
    tip_origins[-1] = poses[tip][:3, 3]
    dh, mounts, base = _tree_dh(source, names, points, dirs, parents, tip_origins,
                                snap_tolerance)

    kinds = ["prismatic" if joint.type == "prismatic" else "revolute" for joint in chain]
    links = [Link(joint.child, a=row[0], d=row[1], alpha=row[2], offset=row[3],
                  joint_type=kind, limits=joint.limits, mount=mount)
             for joint, row, kind, mount in zip(chain, dh, kinds, mounts)]
    skeleton = Robot(robot_name, links, base=base, parents=parents)
    frames = link_frames(skeleton, np.zeros(skeleton.n))
    axis_frames = [frames[parent + 1] @ _dh_matrix(*link.mount)
                   for parent, link in zip(parents, links)]
    _check_axes(source, axis_frames, names, points, dirs)

    # Which DH link each URDF link belongs to (0: the base, dropped).
    owner = {root: 0}
    stack = [root]
    while stack:
        link = stack.pop()
        for joint in children[link]:
            owner[joint.child] = index[joint.name] + 1 if joint.name in index else owner[link]
            stack.append(joint.child)
    parts = [[] for _ in range(len(chain) + 1)]
    for link_name, body in bodies.items():
        i = owner[link_name]
        if i == 0 or (body.mass == 0 and not body.inertia.any()):
            continue
        try:
            check_inertia(body.inertia, f"link {link_name!r} inertia")
        except RobotDescriptionError as error:
            raise _fail(source, str(error)) from None
        to_dh = _rigid_inverse(frames[i]) @ poses[link_name]
        rotation = to_dh[:3, :3]
        parts[i].append((body.mass, to_dh[:3, :3] @ body.com + to_dh[:3, 3],
                         rotation @ body.inertia @ rotation.T))
    final = []
    for i, link in enumerate(links, start=1):
        mass, com, inertia = _combine(parts[i])
        try:
            final.append(Link(link.name, a=link.a, d=link.d, alpha=link.alpha,
                              offset=link.offset, mass=mass, com=com, inertia=inertia,
                              joint_type=link.joint_type, limits=link.limits,
                              mount=link.mount))
        except RobotDescriptionError as error:
            merged = [b for b in bodies if owner[b] == i]
            raise _fail(source, f"links {_quoted(merged)} merged into DH link {i}: "
                                f"{error}") from None
    tool = _orthonormalise(_rigid_inverse(frames[-1]) @ poses[tip])
    kwargs = {} if gravity is None else {"gravity": gravity}
    if tuple(parents) != tuple(range(-1, len(final) - 1)):
        kwargs["parents"] = parents          # a tree; a chain is the Robot's default
    return Robot(name or robot_name, tuple(final), base=base, tool=tool, joint_names=names,
                 **kwargs)


def _is_branched(root, children):
    """Whether some link has more than one sub-tree holding a movable joint."""
    active = _active_subtrees(root, children)
    return any(len(_moving_branches(link, children, active)) > 1 for link in active)


def _dh_matrix(a, d, alpha, theta):
    """``Rz(theta) Tz(d) Tx(a) Rx(alpha)``, shape (4, 4)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d], [0.0, 0.0, 0.0, 1.0]])


def _check_axes(source, frames, names, points, dirs, tolerance=1e-4):
    """Check that z_{i-1} of the DH frames lies on joint i's URDF axis.

    A guard against bugs, not a precision check (the tests compare with Pinocchio): the
    tolerance leaves room for the warned parallel-axis approximation.
    """
    for i, (name, point, direction) in enumerate(zip(names, points, dirs)):
        z, origin = frames[i][:3, 2], frames[i][:3, 3]
        angle = float(np.linalg.norm(np.cross(z, direction))) + max(0.0, -float(z @ direction))
        offset = point - origin
        distance = float(np.linalg.norm(offset - float(offset @ z) * z))
        if angle > tolerance or distance > tolerance:
            raise RuntimeError(
                f"URDF {source}: internal error: DH frame {i} misses the axis of joint "
                f"{name!r} by {angle:.3g} rad, {distance:.3g} m")
