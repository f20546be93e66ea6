"""Test cases of the chain: robots, joint states, external wrenches, and the golden words.

One case is a small JSON-able dict, so that a pytest function can hand it to the cocotb test in
the simulator process (``extra_env``) and both sides build exactly the same states::

    {"robot": "ur5", "states": 500, "seed": 1, "wrench": "mixed", "saturate": 4}

``robot``
    ``"ur5"``, ``"puma560"`` (built-in robots), ``"panda"`` (example-robot-data's
    ``panda_description/urdf/panda.urdf`` up to ``panda_hand``, located at run time), a key of
    :data:`linkdyn.model.reference.REFERENCE_URDFS` prefixed with ``"urdf:"`` (the URDF itself,
    e.g. ``"urdf:ur5"``), or ``"random:<n>:<seed>"`` (:func:`random_robot`).
``states``
    Random states inside the joint limits (:func:`linkdyn.model.accuracy.joint_ranges`).
``seed``
    Seed of the states and wrenches.
``wrench``
    ``"none"``; ``"mixed"``: state ``s`` gets no external wrench (``s % 4 == 0``), one on the
    last link (1), on the middle link (2), on both (3); ``"random"``: wrenches on every link.
``saturate``
    Extra states at the end that saturate some result (the flags and the clamped words are the
    golden model's).
``gravity``
    Optional gravity magnitude, m/s^2, along the robot's own gravity direction (Pinocchio uses
    9.81).
``base``
    Optional, ``"fixed"`` (default) or ``"moving"``: one base motion for all states, drawn
    from the seed (:data:`MOVING_BASE`), written into node 0's base-motion registers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import numpy as np

from linkdyn.model import Friction, Link, Robot, load_robot
from linkdyn.model.accuracy import joint_ranges
from linkdyn.model.golden import encode_base_motion, encode_robot, microprogram, rnea_fixed

__all__ = ["CaseData", "random_robot", "load_case_robot", "build_case", "encode_cases",
           "decode_cases", "WRENCH_FORCE", "WRENCH_MOMENT", "MOVING_BASE"]

#: Ranges of a ``"moving"`` base (frame 0): angular velocity uniform in ``±omega`` rad/s,
#: angular acceleration in ``±omega_dot`` rad/s^2, linear acceleration ``-g`` plus a uniform
#: ``±p_ddot`` m/s^2.
MOVING_BASE = {"omega": 1.0, "omega_dot": 2.0, "p_ddot": 2.0}

#: External wrench components of the test states: force uniform in ``±WRENCH_FORCE`` N, moment
#: in ``±WRENCH_MOMENT`` N·m (frame i, about its origin).
WRENCH_FORCE = 50.0
WRENCH_MOMENT = 5.0


def random_robot(n, seed):
    """Return a random, physically valid robot of ``n`` revolute joints.

    Standard DH with ``a, d`` in ±0.8 m (so ``|r| < 2 m``, the range of the ``r`` constants),
    any twist (0, ±pi/2, pi or arbitrary) and offset; masses 0.2 .. 8 kg, centres of mass
    within ±0.25 m, inertias about the centre of mass with principal moments that satisfy the
    triangle inequality, turned into a random frame; friction (eq. 20) on every joint; gravity
    9.81 m/s^2 in a random direction.

    Parameters
    ----------
    n : int
        Number of joints, >= 1.
    seed : int
        Random seed.

    Returns
    -------
    Robot
    """
    rng = np.random.default_rng([int(seed), int(n), 7041])
    twists = (0.0, math.pi / 2, -math.pi / 2, math.pi)
    links = []
    for i in range(n):
        alpha = (twists[rng.integers(len(twists))] if rng.random() < 0.7
                 else rng.uniform(-math.pi, math.pi))
        a = 0.0 if rng.random() < 0.25 else rng.uniform(-0.8, 0.8)
        d = 0.0 if rng.random() < 0.25 else rng.uniform(-0.8, 0.8)
        mass = rng.uniform(0.2, 8.0)
        com = rng.uniform(-0.25, 0.25, 3)
        moments = rng.uniform(2e-3, 0.2, 3)
        principal = np.array([moments[1] + moments[2], moments[0] + moments[2],
                              moments[0] + moments[1]])
        q, r = np.linalg.qr(rng.normal(size=(3, 3)))
        rotation = q * np.sign(np.diag(r))
        if np.linalg.det(rotation) < 0:
            rotation = -rotation
        inertia = rotation @ np.diag(principal) @ rotation.T
        friction = Friction(coulomb=rng.uniform(0.0, 3.0), viscous=rng.uniform(0.0, 2.0),
                            offset=rng.uniform(-0.5, 0.5), steepness=rng.uniform(10.0, 200.0))
        links.append(Link(f"link{i + 1}", a=a, d=d, alpha=alpha,
                          offset=rng.uniform(-math.pi, math.pi), mass=mass, com=com,
                          inertia=0.5 * (inertia + inertia.T), friction=friction))
    direction = rng.normal(size=3)
    gravity = 9.81 * direction / np.linalg.norm(direction)
    return Robot(f"random{n}-{seed}", tuple(links), gravity=gravity)


def load_case_robot(spec):
    """Return the :class:`~linkdyn.model.Robot` named by a case's ``robot`` (module docstring).

    Raises
    ------
    FileNotFoundError
        For ``"panda"`` and ``"urdf:..."`` when example-robot-data is not installed.
    ValueError
        If the name is not understood.
    """
    if spec.startswith("random:"):
        _, n, seed = spec.split(":")
        return random_robot(int(n), int(seed))
    if spec.startswith("urdf:"):
        from linkdyn.model.reference import load_reference_robot
        return load_reference_robot(spec[len("urdf:"):])
    if spec == "panda":
        from linkdyn.model.reference import load_reference_robot
        return load_reference_robot("panda")
    return load_robot(spec)


@dataclass
class CaseData:
    """A case's robot, states and expected words.

    Attributes
    ----------
    spec : dict
        The case (module docstring).
    robot : Robot
    q, qd, qdd : numpy.ndarray, shape (states, n)
        Joint states, rad, rad/s, rad/s^2.
    f_ext : numpy.ndarray, shape (states, n, 6)
        External wrenches (N, N·m).
    constants : list of dict
        Per node ``{register: word}`` (:func:`linkdyn.model.golden.encode_robot`).
    base_motion : dict
        Node 0's forward-mailbox words.
    inputs : list of list of dict
        Per state and node, ``{input register: word}``.
    tau_words : numpy.ndarray of int64, shape (states, n)
        The golden ``tau`` words.
    overflow : numpy.ndarray of bool, shape (states, n)
        The golden overflow flags.
    base_wrench_words : numpy.ndarray of int64, shape (states, 6)
        Node 0's ``f_out``, ``mu_out`` words.
    """

    spec: dict
    robot: Robot
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    f_ext: np.ndarray
    constants: list
    base_motion: dict
    inputs: list
    tau_words: np.ndarray
    overflow: np.ndarray
    base_wrench_words: np.ndarray

    @property
    def n(self):
        """int: joints (nodes)."""
        return self.robot.n

    @property
    def count(self):
        """int: states."""
        return len(self.q)


def _saturating_states(robot, count, fmt=None):
    """States at the edge of the input formats: huge accelerations, velocities and wrenches
    (180 rad/s, 30,000 rad/s^2 and 30,000 N, or 90 % of what the register's format holds)."""
    n = robot.n
    rmap = microprogram(fmt).registers
    qd_max = min(180.0, 0.9 * rmap.qformat("qd").max_value)
    qdd_max = min(30000.0, 0.9 * rmap.qformat("qdd").max_value)
    force = min(30000.0, 0.9 * rmap.qformat("f_ext_x").max_value)
    patterns = [
        (np.full(n, qd_max), np.full(n, qdd_max), 0.0),
        (np.full(n, -qd_max), np.full(n, -qdd_max), 0.0),
        (np.zeros(n), np.full(n, qdd_max), force),
        (np.full(n, 1.0), np.full(n, -qdd_max), -force),
    ]
    q = np.tile(np.linspace(-1.0, 1.0, n), (count, 1))
    qd = np.empty((count, n))
    qdd = np.empty((count, n))
    f_ext = np.zeros((count, n, 6))
    for s in range(count):
        qd[s], qdd[s], force = patterns[s % len(patterns)]
        f_ext[s] = force * np.array([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
    return q, qd, qdd, f_ext


def build_case(spec, fmt=None):
    """Return the :class:`CaseData` of a case (module docstring).

    The golden model (:func:`linkdyn.model.golden.rnea_fixed`) gives the expected words.
    """
    robot = load_case_robot(spec["robot"])
    if spec.get("gravity") is not None:
        g = np.asarray(robot.gravity, dtype=float)
        robot = replace(robot, gravity=g / np.linalg.norm(g) * float(spec["gravity"]))
    n = robot.n
    count = int(spec.get("states", 0))
    rng = np.random.default_rng([int(spec.get("seed", 0)), n, 911])
    ranges = joint_ranges(robot)
    u = rng.random((count, 3, n))
    q = ranges["q_min"] + u[:, 0] * (ranges["q_max"] - ranges["q_min"])
    qd = (2 * u[:, 1] - 1) * ranges["qd_max"]
    qdd = (2 * u[:, 2] - 1) * ranges["qdd_max"]
    scale = np.array([WRENCH_FORCE] * 3 + [WRENCH_MOMENT] * 3)
    f_ext = np.zeros((count, n, 6))
    wrench = spec.get("wrench", "none")
    if wrench == "mixed":
        w = (2 * rng.random((count, 2, 6)) - 1) * scale
        for s in range(count):
            if s % 4 in (1, 3):
                f_ext[s, n - 1] += w[s, 0]
            if s % 4 in (2, 3):
                f_ext[s, (n - 1) // 2] += w[s, 1]
    elif wrench == "random":
        f_ext = (2 * rng.random((count, n, 6)) - 1) * scale
    elif wrench != "none":
        raise ValueError(f"wrench must be 'none', 'mixed' or 'random', not {wrench!r}")
    base = spec.get("base", "fixed")
    if base == "moving":
        b = 2 * rng.random((3, 3)) - 1
        base_motion = (b[0] * MOVING_BASE["omega"], b[1] * MOVING_BASE["omega_dot"],
                       -robot.gravity_base + b[2] * MOVING_BASE["p_ddot"])
    elif base == "fixed":
        base_motion = None
    else:
        raise ValueError(f"base must be 'fixed' or 'moving', not {base!r}")
    saturate = int(spec.get("saturate", 0))
    if saturate:
        extra = _saturating_states(robot, saturate, fmt)
        q, qd, qdd, f_ext = (np.concatenate([a, b]) for a, b in zip((q, qd, qdd, f_ext), extra))
    result = rnea_fixed(robot, q, qd, qdd, fmt, f_ext=f_ext, base_motion=base_motion,
                        keep_registers=True)
    rmap = microprogram(fmt).registers
    input_names = [reg.name for reg in rmap.of_kind("input")]
    words = np.concatenate(
        [np.stack([rmap.encode(name, a) for name, a in zip(("q", "qd", "qdd"), (q, qd, qdd))],
                  axis=-1),
         np.stack([rmap.encode(name, f_ext[..., c]) for c, name in enumerate(input_names[3:])],
                  axis=-1)], axis=-1).astype(np.int64)
    inputs = [[dict(zip(input_names, (int(w) for w in words[s, i]))) for i in range(n)]
              for s in range(len(q))]
    base_wrench = np.stack([result.registers[0][f"{quantity}_out_{c}"]
                            for quantity in ("f", "mu") for c in "xyz"], axis=-1)
    return CaseData(spec=dict(spec), robot=robot, q=q, qd=qd, qdd=qdd, f_ext=f_ext,
                    constants=encode_robot(robot, fmt),
                    base_motion=encode_base_motion(robot, fmt, base_motion),
                    inputs=inputs, tau_words=result.tau_words, overflow=result.overflow,
                    base_wrench_words=base_wrench)


def encode_cases(cases):
    """Return a list of case dicts as the JSON text of an environment variable."""
    return json.dumps(list(cases), separators=(",", ":"))


def decode_cases(text):
    """Return the list of case dicts of :func:`encode_cases`."""
    return json.loads(text)
