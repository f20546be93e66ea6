"""Robot description: standard Denavit-Hartenberg links with inertial and friction parameters.

A :class:`Robot` is an immutable kinematic tree of :class:`Link` objects (a serial chain is the
special case, and the default). Link ``i`` (1-based in the equations, 0-based in Python) carries
the DH parameters of joint ``i`` and the body that joint moves, expressed in DH frame ``i``
(origin on the axis of joint ``i+1``), as in the source paper, Sect. 2 and docs/trees.md:

    R^{i-1}_i = Rz(theta_i) Rx(alpha_i),
    r^i_{i-1,i} = (a_i, d_i sin(alpha_i), d_i cos(alpha_i)),

with ``theta_i = q_i + offset_i`` for a revolute joint, and ``theta_i = offset_i``,
``d_i = q_i + d`` for a prismatic joint. In a tree, frame ``i-1`` is the DH frame of the link's
parent (``Robot.parents``), moved by the link's constant :attr:`Link.mount` when the parent's
frame is not on this joint's axis (a second child of a branch point, a second root).

Every constructor validates its input and raises :class:`RobotDescriptionError` (a ``ValueError``)
naming the link and the offending value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = [
    "RobotDescriptionError",
    "Friction",
    "JointLimits",
    "Link",
    "Robot",
    "STANDARD_GRAVITY",
    "PARAMETER_NAMES",
    "FRICTION_PARAMETER_NAMES",
]

#: Standard gravity, m/s^2 (CGPM 1901).
STANDARD_GRAVITY = 9.80665

#: Names of the paper's 10 inertial parameters of one link, eq. (11), in order.
PARAMETER_NAMES = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz")

#: Names of the 3 friction parameters of one joint, eq. (20), in order.
FRICTION_PARAMETER_NAMES = ("F_c", "F_v", "F_o")

_JOINT_TYPES = ("revolute", "prismatic")


class RobotDescriptionError(ValueError):
    """An invalid robot description: the message names the link and the value that is wrong."""


def _finite_array(value, shape, what):
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise RobotDescriptionError(f"{what} must be numeric, not {value!r}") from None
    if array.shape != shape:
        raise RobotDescriptionError(f"{what} must have shape {shape}, not {array.shape}")
    if not np.all(np.isfinite(array)):
        raise RobotDescriptionError(f"{what} must be finite, not {array.tolist()!r}")
    array.setflags(write=False)
    return array


def _finite_float(value, what):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RobotDescriptionError(f"{what} must be a number, not {value!r}") from None
    if not math.isfinite(number):
        raise RobotDescriptionError(f"{what} must be finite, not {value!r}")
    return number


def check_inertia(inertia, what, *, rtol=1e-9):
    """Check that a 3x3 rotational inertia is physically realisable.

    Parameters
    ----------
    inertia : array_like, shape (3, 3)
        Rotational inertia in kg·m^2.
    what : str
        Name used in the error message (e.g. ``"link 'upper_arm' inertia"``).
    rtol : float
        Relative tolerance (to the largest moment) for symmetry, positivity and the triangle
        inequalities, so that values rounded in a data sheet still pass.

    Returns
    -------
    numpy.ndarray, shape (3, 3)
        The inertia, symmetrised.

    Raises
    ------
    RobotDescriptionError
        If the inertia is not finite, not symmetric, not positive semi-definite, or its principal
        moments violate the triangle inequalities ``I_a + I_b >= I_c``.
    """
    inertia = _finite_array(inertia, (3, 3), what)
    # Tolerances scale with the largest moment, with a floor of 1e-12 kg m^2 so that rounding
    # noise on a placeholder (zero) inertia is not mistaken for a negative moment.
    scale = max(float(np.max(np.abs(inertia))), 1e-12 / rtol)
    if not np.allclose(inertia, inertia.T, rtol=0, atol=rtol * scale):
        raise RobotDescriptionError(f"{what} must be symmetric, not {inertia.tolist()!r}")
    inertia = 0.5 * (inertia + inertia.T)
    moments = np.linalg.eigvalsh(inertia)
    if moments[0] < -rtol * scale:
        raise RobotDescriptionError(
            f"{what} must be positive semi-definite; its principal moments are "
            f"{moments.tolist()!r}")
    if moments[0] + moments[1] < moments[2] - rtol * scale:
        raise RobotDescriptionError(
            f"{what} violates the triangle inequality: principal moments {moments.tolist()!r} "
            f"({moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g})")
    inertia.setflags(write=False)
    return inertia


@dataclass(frozen=True)
class Friction:
    """Joint friction model of the source paper, eq. (20).

    ``tau_F = F_c * atan(k * qd) + F_v * qd + F_o``

    Parameters
    ----------
    coulomb : float
        Coulomb friction level ``F_c`` in N·m (the torque tends to ``F_c * pi / 2``).
    viscous : float
        Viscous friction coefficient ``F_v`` in N·m·s/rad.
    offset : float
        Torque measurement offset ``F_o`` in N·m (the paper's ``b_i``).
    steepness : float
        Steepness ``k`` of the ``atan`` in s/rad; it is a design constant, not identified
        (the paper uses ``k = 100``).
    """

    coulomb: float = 0.0
    viscous: float = 0.0
    offset: float = 0.0
    steepness: float = 100.0

    def __post_init__(self):
        for name in ("coulomb", "viscous", "offset", "steepness"):
            object.__setattr__(self, name, _finite_float(getattr(self, name), f"friction {name}"))
        if self.steepness <= 0:
            raise RobotDescriptionError(
                f"friction steepness must be positive, not {self.steepness!r}")

    @property
    def parameters(self):
        """numpy.ndarray, shape (3,): ``(F_c, F_v, F_o)``, the order of eq. (20)."""
        return np.array([self.coulomb, self.viscous, self.offset])

    @property
    def is_zero(self):
        """bool: whether the model adds no torque at all."""
        return self.coulomb == 0 and self.viscous == 0 and self.offset == 0


@dataclass(frozen=True)
class JointLimits:
    """Limits of one joint, SI units (rad, rad/s, rad/s^2, N·m). ``None`` means unlimited."""

    q_min: float | None = None
    q_max: float | None = None
    qd_max: float | None = None
    qdd_max: float | None = None
    tau_max: float | None = None

    def __post_init__(self):
        for name in ("q_min", "q_max", "qd_max", "qdd_max", "tau_max"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _finite_float(value, f"joint limit {name}"))
        for name in ("qd_max", "qdd_max", "tau_max"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise RobotDescriptionError(f"joint limit {name} must be positive, not {value!r}")
        if self.q_min is not None and self.q_max is not None and self.q_min > self.q_max:
            raise RobotDescriptionError(
                f"joint limit q_min {self.q_min!r} is above q_max {self.q_max!r}")


@dataclass(frozen=True)
class Link:
    """One link of a serial chain: standard DH parameters, inertial parameters, friction, limits.

    Parameters
    ----------
    name : str
        Name of the link (or of its joint); used in error messages.
    a, d : float
        DH link length and offset, m.
    alpha : float
        DH link twist, rad.
    offset : float
        Joint angle offset, rad: ``theta = q + offset`` (revolute); for a prismatic joint the
        constant joint angle ``theta = offset`` (the joint variable enters ``d = q + d``).
    mass : float
        Mass, kg, ``>= 0``.
    com : array_like, shape (3,)
        Centre of mass in DH frame ``i``, m.
    inertia : array_like, shape (3, 3)
        Rotational inertia about the centre of mass, axes of DH frame ``i``, kg·m^2.
    joint_type : {"revolute", "prismatic"}
        A revolute joint turns about ``z_{i-1}`` (``q`` in rad, ``tau`` in N·m); a prismatic
        joint slides along it (``q`` in m, ``tau`` the force along the axis in N; friction, limits
        and velocities then in m, m/s, N, N·s/m).
    friction : Friction
        Joint friction, eq. (20).
    limits : JointLimits
        Joint limits.
    mount : array_like, shape (4,)
        ``(a, d, alpha, theta)`` of the constant standard-DH step ``Rz(theta) Tz(d) Tx(a)
        Rx(alpha)`` from the DH frame of the parent (or DH frame 0 for a root) to frame ``i-1``,
        the frame whose z axis is this joint's axis. Zero (the identity) where the parent's
        frame already is that frame: every link of a chain in plain DH, the first child of a
        branch point (a chain cut from a tree keeps its mounts); see docs/trees.md.

    Raises
    ------
    RobotDescriptionError
        If a number is not finite, the mass is negative, or the inertia is not realisable
        (see :func:`check_inertia`); the message names the link.
    """

    name: str
    a: float = 0.0
    d: float = 0.0
    alpha: float = 0.0
    offset: float = 0.0
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    joint_type: str = "revolute"
    friction: Friction = field(default_factory=Friction)
    limits: JointLimits = field(default_factory=JointLimits)
    mount: np.ndarray = field(default_factory=lambda: np.zeros(4))

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise RobotDescriptionError(f"link name must be a non-empty string, not {self.name!r}")
        label = f"link {self.name!r}"
        for attr in ("a", "d", "alpha", "offset", "mass"):
            object.__setattr__(self, attr, _finite_float(getattr(self, attr), f"{label} {attr}"))
        if self.mass < 0:
            raise RobotDescriptionError(f"{label} mass must be >= 0, not {self.mass!r}")
        if self.joint_type not in _JOINT_TYPES:
            raise RobotDescriptionError(
                f"{label} joint type must be one of {_JOINT_TYPES}, not {self.joint_type!r}")
        object.__setattr__(self, "com", _finite_array(self.com, (3,), f"{label} centre of mass"))
        object.__setattr__(self, "mount", _finite_array(self.mount, (4,),
                                                        f"{label} mount (a, d, alpha, theta)"))
        object.__setattr__(self, "inertia", check_inertia(self.inertia, f"{label} inertia"))
        if not isinstance(self.friction, Friction):
            raise RobotDescriptionError(f"{label} friction must be a Friction, not "
                                        f"{self.friction!r}")
        if not isinstance(self.limits, JointLimits):
            raise RobotDescriptionError(f"{label} limits must be a JointLimits, not "
                                        f"{self.limits!r}")

    @classmethod
    def from_parameters(cls, name, parameters, **kwargs):
        """Build a link from the paper's 10 inertial parameters, eq. (11).

        Parameters
        ----------
        name : str
            Link name.
        parameters : array_like, shape (10,)
            ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)`` with the inertia
            about the origin of DH frame ``i`` (kg, kg·m, kg·m^2).
        **kwargs
            The other :class:`Link` fields (``a``, ``d``, ``alpha``, ...).

        Raises
        ------
        RobotDescriptionError
            If the mass is negative, a first moment is given with zero mass, or the inertia about
            the centre of mass is not realisable.
        """
        label = f"link {name!r}"
        pi = _finite_array(parameters, (10,), f"{label} parameters")
        mass = float(pi[0])
        if mass < 0:
            raise RobotDescriptionError(f"{label} mass must be >= 0, not {mass!r}")
        if mass == 0:
            if np.any(np.abs(pi[1:4]) > 1e-12):
                raise RobotDescriptionError(
                    f"{label} has zero mass but a first moment {pi[1:4].tolist()!r}")
            com = np.zeros(3)
        else:
            com = pi[1:4] / mass
        inertia_origin = _inertia_matrix(pi[4:10])
        inertia = inertia_origin - mass * (float(com @ com) * np.eye(3) - np.outer(com, com))
        return cls(name, mass=mass, com=com, inertia=inertia, **kwargs)

    @property
    def has_mount(self):
        """bool: whether :attr:`mount` is not the identity."""
        return bool(np.any(self.mount != 0))

    @property
    def first_moment(self):
        """numpy.ndarray, shape (3,): ``m c`` in DH frame ``i``, kg·m."""
        return self.mass * self.com

    @property
    def inertia_origin(self):
        """numpy.ndarray, shape (3, 3): inertia about the origin of DH frame ``i``, kg·m^2.

        The parallel-axis shift of :attr:`inertia`: ``I + m (|c|^2 E - c c^T)``.
        """
        c = self.com
        return self.inertia + self.mass * (float(c @ c) * np.eye(3) - np.outer(c, c))

    def parameters(self):
        """Return the paper's 10 inertial parameters of this link, eq. (11).

        Returns
        -------
        numpy.ndarray, shape (10,)
            ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)``, inertia about the
            origin of DH frame ``i``.
        """
        inertia = self.inertia_origin
        return np.array([self.mass, *self.first_moment, inertia[0, 0], inertia[0, 1],
                         inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2]])


def _inertia_matrix(six):
    ixx, ixy, ixz, iyy, iyz, izz = six
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


class _Default(tuple):
    """A tuple a :class:`Robot` filled in itself (the chain, the link names): given back to a
    Robot (``dataclasses.replace(robot, links=...)`` does), it is filled in anew for the new
    links, so a chain stays a chain and default joint names follow the links."""

    __slots__ = ()


def _check_parents(parents, names, robot_name):
    """Validate a parent list (see :class:`Robot`); return it as a tuple of int."""
    n = len(names)
    if parents is None or isinstance(parents, _Default):
        return _Default(range(-1, n - 1))
    what = f"robot {robot_name!r} parents"
    if isinstance(parents, (str, bytes)):
        raise RobotDescriptionError(f"{what} must be a sequence of {n} integers, not {parents!r}")
    try:
        values = list(parents)
    except TypeError:
        raise RobotDescriptionError(
            f"{what} must be a sequence of {n} integers, not {parents!r}") from None
    if len(values) != n:
        raise RobotDescriptionError(
            f"{what} must have one entry per link ({n}), not {len(values)}: {values!r}")
    checked = []
    for index, parent in enumerate(values):
        if isinstance(parent, (bool, np.bool_)) or not isinstance(parent, (int, np.integer)):
            raise RobotDescriptionError(
                f"{what}[{index}] (link {names[index]!r}) must be an integer, not {parent!r}")
        parent = int(parent)
        if not -1 <= parent < n:
            raise RobotDescriptionError(
                f"{what}[{index}] (link {names[index]!r}) is {parent}, out of range: a parent "
                f"is -1 (the base) or a link index 0..{n - 1}")
        if parent >= index:
            kind = "itself" if parent == index else f"link {parent} ({names[parent]!r})"
            raise RobotDescriptionError(
                f"{what}[{index}] (link {names[index]!r}) is {kind}: every parent must come "
                f"before its child (index smaller than {index}); a parent list in that order "
                f"cannot hold a cycle")
        checked.append(parent)
    return tuple(checked)


def _check_joint_names(joint_names, names, robot_name):
    """Validate joint names (see :class:`Robot`); default the link names."""
    if joint_names is None or isinstance(joint_names, _Default):
        return _Default(names)
    what = f"robot {robot_name!r} joint_names"
    if isinstance(joint_names, str):
        raise RobotDescriptionError(f"{what} must be a sequence of strings, not {joint_names!r}")
    values = tuple(joint_names)
    if len(values) != len(names):
        raise RobotDescriptionError(
            f"{what} must have one entry per link ({len(names)}), not {len(values)}")
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value:
            raise RobotDescriptionError(
                f"{what}[{index}] must be a non-empty string, not {value!r}")
    if len(set(values)) != len(values):
        raise RobotDescriptionError(f"{what} repeat: {list(values)!r}")
    return values


@dataclass(frozen=True)
class Robot:
    """A kinematic tree (by default a serial chain) of revolute and prismatic links, standard DH.

    Parameters
    ----------
    name : str
        Name of the robot.
    links : sequence of Link
        The links (nodes), ``n = len(links) >= 1``, every parent before its children.
    gravity : array_like, shape (3,)
        Gravity acceleration in the world frame, m/s^2. Default ``(0, 0, -9.80665)``.
    base : array_like, shape (4, 4)
        Homogeneous transform from the world frame to DH frame 0. Default identity.
    tool : array_like, shape (4, 4)
        Homogeneous transform from DH frame ``n`` (the last link's) to the tool frame. Default
        identity.
    parents : sequence of int, optional
        ``parents[i]``: index of the parent link of link ``i``, ``-1`` for a link on the fixed
        base (DH frame 0). Every parent index is smaller than its child's (topological order),
        so the forward recursion runs in index order and the backward one in reverse. Default
        the chain ``(-1, 0, 1, ..., n - 2)``; a defaulted chain stays the chain of the links
        when ``dataclasses.replace(robot, links=...)`` changes them.
    joint_names : sequence of str, optional
        The name of every link's joint (the URDF joint name), in link order. Default the link
        names (which follow the links in ``replace`` as the default chain does).

    Raises
    ------
    RobotDescriptionError
        If there are no links, a link is not a :class:`Link`, names repeat, a transform is not a
        proper rigid transform, gravity is not a finite 3-vector, or ``parents`` is not a tree in
        topological order (wrong length, not integers, an index out of range, a parent index not
        smaller than its child's -- which is what a cycle needs), or ``joint_names`` has the wrong
        length, empty or repeated names.
    """

    name: str
    links: tuple
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -STANDARD_GRAVITY]))
    base: np.ndarray = field(default_factory=lambda: np.eye(4))
    tool: np.ndarray = field(default_factory=lambda: np.eye(4))
    parents: tuple | None = None
    joint_names: tuple | None = None

    def __post_init__(self):
        links = tuple(self.links)
        if not links:
            raise RobotDescriptionError(f"robot {self.name!r} must have at least one link")
        for index, link in enumerate(links):
            if not isinstance(link, Link):
                raise RobotDescriptionError(
                    f"robot {self.name!r} link {index} must be a Link, not {link!r}")
        names = [link.name for link in links]
        if len(set(names)) != len(names):
            raise RobotDescriptionError(f"robot {self.name!r} has repeated link names {names!r}")
        object.__setattr__(self, "links", links)
        object.__setattr__(self, "parents", _check_parents(self.parents, names, self.name))
        object.__setattr__(self, "joint_names",
                           _check_joint_names(self.joint_names, names, self.name))
        object.__setattr__(self, "gravity",
                           _finite_array(self.gravity, (3,), f"robot {self.name!r} gravity"))
        for attr in ("base", "tool"):
            transform = _finite_array(getattr(self, attr), (4, 4), f"robot {self.name!r} {attr}")
            rotation = transform[:3, :3]
            if (not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-9)
                    or not np.isclose(np.linalg.det(rotation), 1.0, atol=1e-9)
                    or not np.array_equal(transform[3], [0, 0, 0, 1])):
                raise RobotDescriptionError(
                    f"robot {self.name!r} {attr} transform must be a rigid transform, not "
                    f"{transform.tolist()!r}")
            object.__setattr__(self, attr, transform)

    @property
    def is_chain(self):
        """bool: whether the robot is a serial chain (``parents == (-1, 0, ..., n - 2)``)."""
        return self.parents == tuple(range(-1, self.n - 1))

    @property
    def children(self):
        """tuple of tuple of int: the children of every link, in increasing index order."""
        children = [[] for _ in self.links]
        for index, parent in enumerate(self.parents):
            if parent >= 0:
                children[parent].append(index)
        return tuple(tuple(c) for c in children)

    @property
    def has_prismatic(self):
        """bool: whether any joint is prismatic."""
        return any(link.joint_type == "prismatic" for link in self.links)

    def ancestors(self, index):
        """Return the indices of link ``index``'s ancestors, base first (``()`` for a root)."""
        path = []
        parent = self.parents[index]
        while parent >= 0:
            path.append(parent)
            parent = self.parents[parent]
        return tuple(reversed(path))

    @property
    def n(self):
        """int: number of joints."""
        return len(self.links)

    @property
    def dh(self):
        """numpy.ndarray, shape (n, 4): columns ``a, d, alpha, offset`` (m, m, rad, rad)."""
        return np.array([[link.a, link.d, link.alpha, link.offset] for link in self.links])

    @property
    def gravity_base(self):
        """numpy.ndarray, shape (3,): gravity expressed in DH frame 0, m/s^2."""
        return self.base[:3, :3].T @ self.gravity

    def parameters(self):
        """Return the stacked dynamic parameters of the whole chain.

        Returns
        -------
        numpy.ndarray, shape (13 n,)
            The paper's 10 inertial parameters of every link (eq. 11), links in order, then the
            3 friction parameters ``(F_c, F_v, F_o)`` of every joint (eq. 20). The order matches
            the columns of :func:`linkdyn.model.regressor`.
        """
        inertial = [link.parameters() for link in self.links]
        friction = [link.friction.parameters for link in self.links]
        return np.concatenate(inertial + friction)

    def parameter_names(self):
        """Return names for :meth:`parameters`, e.g. ``"m_3"`` or ``"F_c_2"`` (1-based joints)."""
        names = [f"{p}_{i + 1}" for i in range(self.n) for p in PARAMETER_NAMES]
        names += [f"{p}_{i + 1}" for i in range(self.n) for p in FRICTION_PARAMETER_NAMES]
        return names

    @property
    def steepness(self):
        """numpy.ndarray, shape (n,): the friction ``atan`` steepness ``k`` of every joint, s/rad."""
        return np.array([link.friction.steepness for link in self.links])

    @property
    def has_friction(self):
        """bool: whether any joint has a non-zero friction model."""
        return any(not link.friction.is_zero for link in self.links)

    def with_parameters(self, parameters):
        """Return a copy with the dynamic parameters replaced.

        Parameters
        ----------
        parameters : array_like, shape (13 n,) or (10 n,)
            Stacked as :meth:`parameters`; with ``10 n`` values the friction is kept.

        Raises
        ------
        RobotDescriptionError
            If the length is wrong or a link's parameters are not physically consistent.
        """
        parameters = np.asarray(parameters, dtype=float)
        if parameters.shape not in ((13 * self.n,), (10 * self.n,)):
            raise RobotDescriptionError(
                f"robot {self.name!r} needs {13 * self.n} (or {10 * self.n}) parameters, not "
                f"an array of shape {parameters.shape}")
        links = []
        for i, link in enumerate(self.links):
            friction = link.friction
            if parameters.shape[0] == 13 * self.n:
                fc, fv, fo = parameters[10 * self.n + 3 * i: 10 * self.n + 3 * i + 3]
                friction = replace(friction, coulomb=fc, viscous=fv, offset=fo)
            links.append(Link.from_parameters(
                link.name, parameters[10 * i: 10 * i + 10], a=link.a, d=link.d,
                alpha=link.alpha, offset=link.offset, joint_type=link.joint_type,
                friction=friction, limits=link.limits, mount=link.mount))
        return replace(self, links=tuple(links))

    def without_friction(self):
        """Return a copy whose joints have no friction."""
        return replace(self, links=tuple(
            replace(link, friction=Friction(steepness=link.friction.steepness))
            for link in self.links))

    def q_limits(self, default=math.pi):
        """Return joint position limits, shape (2, n), rad (m for a prismatic joint); unlimited
        joints get ``±default``."""
        low = [default * -1 if l.limits.q_min is None else l.limits.q_min for l in self.links]
        high = [default if l.limits.q_max is None else l.limits.q_max for l in self.links]
        return np.array([low, high])
