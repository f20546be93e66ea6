"""Scene elements of the plant (plate, payload, disturbance, state) and argument checks.

Plain data, validated on construction: TypeError/ValueError saying what was expected and what
came. Units SI (m, kg, N, N·m, s); frames as in :mod:`linkdyn.sim.plant`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .mujoco_gl import mujoco

__all__ = ["Plate", "Payload", "Disturbance", "PlantState"]


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------

def check_vector(value, shape, what, *, finite=True):
    """``value`` as a float array of ``shape``; TypeError/ValueError saying what came."""
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numeric, not {value!r}") from None
    if array.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, not {array.shape}")
    if finite and not np.isfinite(array).all():
        raise ValueError(f"{what} must be finite, not {array.tolist()!r}")
    return array


def check_number(value, what, *, minimum=None, strictly=False):
    """``value`` as a finite float (``>= minimum``, or ``>`` with ``strictly``).

    Raises TypeError if it is not a real number (bools are refused), ValueError otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a number, not {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, not {value!r}")
    if minimum is not None and (value <= minimum if strictly else value < minimum):
        raise ValueError(f"{what} must be {'>' if strictly else '>='} {minimum}, not {value!r}")
    return value


def check_per_joint(value, n, what):
    """A scalar or (n,) array of non-negative finite numbers, as an (n,) array.

    Raises TypeError if it is not numeric, ValueError for a wrong shape or a bad value.
    """
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number or {n} numbers, not {value!r}") from None
    if array.shape == ():
        array = np.full(n, float(array))
    if array.shape != (n,):
        raise ValueError(f"{what} must be a number or have shape ({n},), not {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError(f"{what} must be finite and >= 0, not {array.tolist()!r}")
    return array


def check_rotation(value, what):
    """A (3, 3) rotation matrix from a rotation matrix or a non-zero ``(w, x, y, z)`` quaternion
    (normalised); ValueError if it is neither."""
    array = np.array(value, dtype=float)
    if array.shape == (4,):
        norm = float(np.linalg.norm(array))
        if not math.isfinite(norm) or norm < 1e-9:
            raise ValueError(f"{what} quaternion must be finite and non-zero, not "
                             f"{array.tolist()!r}")
        matrix = np.zeros(9)
        mujoco.mju_quat2Mat(matrix, array / norm)
        return matrix.reshape(3, 3)
    array = check_vector(value, (3, 3), f"{what} (a 3x3 rotation matrix or a (w, x, y, z) "
                                   f"quaternion)")
    if (not np.allclose(array @ array.T, np.eye(3), atol=1e-9)
            or not np.isclose(np.linalg.det(array), 1.0, atol=1e-9)):
        raise ValueError(f"{what} must be a rotation matrix, not {array.tolist()!r}")
    return array


def quaternion_of(rotation):
    """Unit quaternion ``(w, x, y, z)`` of a (3, 3) rotation matrix (MuJoCo's convention)."""
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rotation).reshape(9))
    return quat

# --------------------------------------------------------------------------------------------
# Scene elements
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plate:
    """A rigid plate: a box fixed in the world that the tool can push against.

    Parameters
    ----------
    position : array_like, shape (3,)
        Centre of the box in the world frame, m.
    size : array_like, shape (3,)
        Half-extents of the box along its own axes, m, each > 0 (default a 0.4 x 0.4 m plate,
        0.02 m thick).
    rotation : array_like, shape (3, 3) or (4,)
        Orientation of the box in the world frame: a rotation matrix (columns = box axes in
        world coordinates) or a unit quaternion ``(w, x, y, z)``. Default: axis-aligned.
    friction : float
        Sliding friction coefficient of the tool on the plate (MuJoCo's default is 1).

    Raises
    ------
    TypeError, ValueError
        If a value is not numeric, has the wrong shape, is not finite, a half-extent is not
        positive, the rotation is not a rotation or the friction is negative.
    """

    position: np.ndarray
    size: np.ndarray = field(default_factory=lambda: np.array([0.2, 0.2, 0.01]))
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    friction: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "position", check_vector(self.position, (3,), "plate position"))
        size = check_vector(self.size, (3,), "plate size")
        if np.any(size <= 0):
            raise ValueError(f"plate size (half-extents, m) must be > 0, not {size.tolist()!r}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "rotation", check_rotation(self.rotation, "plate rotation"))
        object.__setattr__(self, "friction", check_number(self.friction, "plate friction",
                                                     minimum=0))

    def surface_point(self, normal_axis=2):
        """Return the centre of the box face whose outward normal is ``+axis``, world frame, m."""
        return self.position + self.rotation[:, normal_axis] * self.size[normal_axis]


@dataclass(frozen=True)
class Payload:
    """A rigid payload held by the last link.

    Parameters
    ----------
    mass : float
        Mass, kg, ``>= 0`` (0 removes the payload).
    com : array_like, shape (3,)
        Centre of mass in the tip link frame, m.
    inertia : array_like, shape (3, 3), optional
        Rotational inertia about the centre of mass, tool-frame axes, kg·m^2. Default: zero
        (a point mass).

    Raises
    ------
    TypeError, ValueError
        If the mass is negative or not finite, a vector has the wrong shape or is not finite,
        or the inertia is not symmetric positive semi-definite.
    """

    mass: float
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def __post_init__(self):
        object.__setattr__(self, "mass", check_number(self.mass, "payload mass", minimum=0))
        object.__setattr__(self, "com", check_vector(self.com, (3,), "payload centre of mass"))
        inertia = check_vector(self.inertia, (3, 3), "payload inertia")
        if not np.allclose(inertia, inertia.T, atol=1e-12):
            raise ValueError(f"payload inertia must be symmetric, not {inertia.tolist()!r}")
        if np.linalg.eigvalsh(0.5 * (inertia + inertia.T))[0] < -1e-12:
            raise ValueError(f"payload inertia must be positive semi-definite, not "
                             f"{inertia.tolist()!r}")
        object.__setattr__(self, "inertia", 0.5 * (inertia + inertia.T))


@dataclass(frozen=True)
class Disturbance:
    """An external force (and moment) applied to a body of the plant by its environment.

    Attributes
    ----------
    body : str
        MuJoCo body name (a URDF link name, or :data:`TOOL_BODY`).
    point : numpy.ndarray, shape (3,)
        Point of application in the body's frame (the URDF link frame), m.
    force : numpy.ndarray, shape (3,)
        Force on the body, world axes, N.
    torque : numpy.ndarray, shape (3,)
        Pure moment on the body, world axes, N·m (besides the moment of ``force`` about the
        body's centre of mass, which the plant adds).
    start, until : float
        Plant time (s) from which and until which it acts (``until`` may be ``inf``).
    """

    body: str
    point: np.ndarray
    force: np.ndarray
    torque: np.ndarray
    start: float
    until: float

    def active(self, time):
        """bool: whether the disturbance acts at plant time ``time`` (s): start <= t < until."""
        return self.start <= time < self.until


@dataclass(frozen=True)
class PlantState:
    """A state of the plant.

    Attributes
    ----------
    time : float
        Plant time, s.
    q, qd : numpy.ndarray, shape (n,)
        Joint angles (rad) and velocities (rad/s), linkdyn's joint order, sign and zero.
    """

    time: float
    q: np.ndarray
    qd: np.ndarray

