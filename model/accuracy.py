"""Measured accuracy of the fixed-point golden model against the float model.

``python -m linkdyn.model.accuracy [--states 10000] [--out docs/accuracy.md]``

The golden model (:func:`linkdyn.model.golden.rnea_fixed`, each register in its quantity's
format, :data:`~linkdyn.model.microprogram.NODE_FORMATS`, the fixed-point contract
of docs/architecture.md) is compared with the float model (:func:`linkdyn.model.rnea`, float64)
on random joint states of real robots (docs/architecture.md, *Verification*, step 2):

* UR5, UR10 and Puma 560: the built-in robots of :func:`linkdyn.model.library.load_robot`;
* Panda: ``panda_description/urdf/panda.urdf`` of example-robot-data up to ``panda_hand``.

Every robot is measured with friction off and on (eq. 20). "On" is the robot's own friction when
it has any (Puma 560); the UR5, UR10 and Panda publish none, so they get the typical friction
:data:`TYPICAL_FRICTION` (``F_c = 2`` N·m, ``F_v = 1`` N·m·s/rad, ``F_o = 0``, ``k = 100`` s/rad
on every joint).

States (:func:`random_states`): ``q`` uniform within the joint limits, ``qd`` uniform within the
velocity limits (:data:`DEFAULT_QD_MAX` where a robot has none), ``qdd`` uniform within
``±qdd_max`` (:data:`DEFAULT_QDD_MAX` where a robot has none; no robot here publishes one), from a
fixed seed. :func:`limit_states` puts every joint at a corner of its limits;
:func:`random_wrenches` adds external wrenches on the last and the middle link; the zero state
(gravity only) is measured too.

The error budget (:func:`error_budget`) says where the error comes from. It runs the node
microprogram with float registers (:func:`microprogram_float`: same operations, same order as
the golden model) and switches on one error source at a time (:data:`ERROR_SOURCES`): the
quantisation of ``q``, ``qd``, ``qdd`` to their formats; of the robot constants; the sine table; the CORDIC; the
rounding of every result. With every source off it equals the float model (to about 1e-12 N·m);
with every source on it reproduces the golden model.

The function to import is :func:`measured_bounds`; :func:`measure` returns everything the report
shows and :func:`report` formats it as Markdown.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from .fixedpoint import WORD_WIDTH, wrap
from .golden import encode_base_motion, encode_robot, microprogram, rnea_fixed
from .microprogram import NODE_FORMATS, Atan, Dot, Lookup
from .reference import REFERENCE_URDFS
from .rnea import link_offset_vector, rnea
from .robot import Friction
from .tables import CORDIC, SINE_TABLE

__all__ = [
    "ROBOTS", "SEED", "STATES", "LIMIT_STATES", "TYPICAL_FRICTION", "DEFAULT_QD_MAX",
    "DEFAULT_QDD_MAX", "WRENCH_FORCE", "WRENCH_MOMENT", "FRICTION_CASES", "ERROR_SOURCES",
    "F_EXT_SOURCE", "WHAT_IF", "load_accuracy_robot", "with_friction", "joint_ranges",
    "random_states", "limit_states", "random_wrenches", "torque_error", "microprogram_float",
    "error_budget", "sine_table_worst_case", "cordic_worst_case", "measure", "measured_bounds",
    "report", "main",
]

#: Robots measured, in report order.
ROBOTS = ("ur5", "ur10", "puma560", "panda")

#: Seed of the random states (the report's date, 2026-11-30).
SEED = 20261130

#: Default number of random states per robot.
STATES = 10_000

#: Default number of states at the limits per robot.
LIMIT_STATES = 2_000

#: Friction of the "friction on" case for robots that publish none (UR5, UR10, Panda): typical
#: values of a geared joint (assumed, not measured), the same on every joint.
TYPICAL_FRICTION = Friction(coulomb=2.0, viscous=1.0, offset=0.0, steepness=100.0)

#: Velocity bound for joints without a velocity limit (Puma 560), rad/s.
DEFAULT_QD_MAX = math.pi

#: Acceleration bound for joints without an acceleration limit (all robots here), rad/s^2: of
#: the order of the Panda's published limits (7.5 to 20 rad/s^2).
DEFAULT_QDD_MAX = 10.0

#: External wrench of the "with f_ext" measurement: every force component uniform in
#: ``±WRENCH_FORCE`` N, every moment component in ``±WRENCH_MOMENT`` N·m, on the last and the
#: middle link (a payload and a contact on the elbow).
WRENCH_FORCE = 50.0
WRENCH_MOMENT = 5.0

#: Friction cases measured per robot.
FRICTION_CASES = ("off", "on")

#: Error sources of :func:`microprogram_float`, in budget order.
ERROR_SOURCES = ("q", "qd", "qdd", "gravity", "kinematics", "inertia", "friction", "table",
                 "cordic", "rounding")

#: Further error source of :func:`microprogram_float`: the quantisation of ``f_ext``.
F_EXT_SOURCE = "f_ext"

#: Budget rows "every source except these": what exact constants (or a better table) would give.
WHAT_IF = {
    "all but the constants": ("gravity", "kinematics", "inertia", "friction"),
    "all but the constants and the table": ("gravity", "kinematics", "inertia", "friction",
                                            "table"),
}

_CONSTANT_GROUPS = {
    "kinematics": ("rate", "theta_offset", "sin_alpha", "cos_alpha", "r_x", "r_y", "r_z",
                   "revolute", "prismatic"),
    "inertia": ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz"),
    "friction": ("F_c", "F_v", "F_o", "k_friction"),
}



def _source_doc(source, fmt=None):
    """One line on what an error source is, with the formats of the register map."""
    rmap = microprogram(fmt).registers

    def form(name):
        bits = rmap[name].format.fraction_bits
        return f"{bits} fractional bits, step {2.0 ** -bits:.1e}"

    docs = {
        "q": f"rounding of q to {rmap.qformat('q').name} ({form('q')} rad)",
        "qd": f"rounding of qd to {rmap.qformat('qd').name}",
        "qdd": f"rounding of qdd to {rmap.qformat('qdd').name}",
        "gravity": f"rounding of the base acceleration -g to {rmap.qformat('p_ddot_in_z').name}",
        "kinematics": f"rounding of r = (a, d sin alpha, d cos alpha) ({form('r_x')} m), "
                      f"sin/cos alpha ({form('sin_alpha')}), the theta offset (phase word) and "
                      f"1/(2 pi) ({form('rate')})",
        "inertia": f"rounding of m, m c, I ({form('m')})",
        "friction": f"rounding of F_c, F_v, F_o, k ({form('F_c')})",
        "table": f"sine table: {SINE_TABLE.size} entries of {SINE_TABLE.entry_bits} bits per "
                 f"quarter wave, linear interpolation",
        "cordic": f"CORDIC arctangent ({CORDIC.iterations} iterations)",
        "rounding": "rounding of every result to its register (half up) and saturation; the "
                    "phase to 2^-32 turn",
    }
    return docs[source]


# ----------------------------------------------------------------------------------------------
# Robots and states
# ----------------------------------------------------------------------------------------------

def load_accuracy_robot(name):
    """Return one of the measured robots (:data:`ROBOTS`) as loaded, with its own friction.

    Parameters
    ----------
    name : str
        ``"ur5"``, ``"ur10"``, ``"puma560"`` (built-in robots) or ``"panda"`` (the
        example-robot-data URDF up to ``panda_hand``, located at run time).

    Raises
    ------
    ValueError
        If the name is not one of :data:`ROBOTS`.
    FileNotFoundError
        For ``"panda"`` when example-robot-data is not installed.
    """
    from .library import load_robot
    if name not in ROBOTS:
        raise ValueError(f"robot must be one of {ROBOTS!r}, not {name!r}")
    if name == "panda":
        from .reference import load_reference_robot
        return load_reference_robot("panda")
    return load_robot(name)


def with_friction(robot, case):
    """Return the robot of a friction case.

    Parameters
    ----------
    robot : Robot
        The robot as loaded.
    case : {"off", "on"}
        ``"off"``: no friction. ``"on"``: the robot's own friction if it has any, else
        :data:`TYPICAL_FRICTION` on every joint.

    Returns
    -------
    (Robot, str)
        The robot and a description of its friction for reports.
    """
    if case == "off":
        return robot.without_friction(), "none"
    if case != "on":
        raise ValueError(f"friction case must be 'off' or 'on', not {case!r}")
    if robot.has_friction:
        return robot, "the robot's own"
    links = tuple(replace(link, friction=TYPICAL_FRICTION) for link in robot.links)
    f = TYPICAL_FRICTION
    return (replace(robot, links=links),
            f"typical: F_c = {f.coulomb:g} N·m, F_v = {f.viscous:g} N·m·s/rad, "
            f"k = {f.steepness:g} s/rad")


def joint_ranges(robot):
    """Return the sampled ranges of a robot's joints.

    Returns
    -------
    dict
        ``"q_min"``, ``"q_max"`` (rad; joints without limits get ``±pi``), ``"qd_max"`` (rad/s,
        :data:`DEFAULT_QD_MAX` where none), ``"qdd_max"`` (rad/s^2, :data:`DEFAULT_QDD_MAX` where
        none), each a numpy array of shape (n,).
    """
    low, high = robot.q_limits()
    qd_max = [DEFAULT_QD_MAX if link.limits.qd_max is None else link.limits.qd_max
              for link in robot.links]
    qdd_max = [DEFAULT_QDD_MAX if link.limits.qdd_max is None else link.limits.qdd_max
               for link in robot.links]
    return {"q_min": low, "q_max": high, "qd_max": np.array(qd_max),
            "qdd_max": np.array(qdd_max)}


def _rng(robot, seed, salt):
    key = [int(seed), salt] + [ord(c) for c in robot.name]
    return np.random.default_rng(key)


def random_states(robot, count, seed=SEED):
    """Return random joint states inside the limits (:func:`joint_ranges`).

    The first ``k`` states do not depend on ``count`` (a test can use the first 2,000 of the
    report's 10,000 states).

    Parameters
    ----------
    robot : Robot
        The robot (its name is part of the random key).
    count : int
        Number of states.
    seed : int
        Random seed.

    Returns
    -------
    q, qd, qdd : numpy.ndarray, shape (count, n)
        rad, rad/s, rad/s^2.
    """
    ranges = joint_ranges(robot)
    u = _rng(robot, seed, 1).random((count, 3, robot.n))
    q = ranges["q_min"] + u[:, 0] * (ranges["q_max"] - ranges["q_min"])
    qd = (2 * u[:, 1] - 1) * ranges["qd_max"]
    qdd = (2 * u[:, 2] - 1) * ranges["qdd_max"]
    return q, qd, qdd


def limit_states(robot, count, seed=SEED):
    """Return states with every joint at a corner of its limits.

    Each of ``q_i`` (``q_min`` or ``q_max``), ``qd_i`` (``±qd_max``) and ``qdd_i``
    (``±qdd_max``) is chosen at random; the first state has everything at the lower limits and
    the second at the upper ones. The first ``k`` states do not depend on ``count``.

    Returns
    -------
    q, qd, qdd : numpy.ndarray, shape (count, n)
    """
    ranges = joint_ranges(robot)
    upper = _rng(robot, seed, 2).random((count, 3, robot.n)) < 0.5
    if count > 0:
        upper[0] = False
    if count > 1:
        upper[1] = True
    q = np.where(upper[:, 0], ranges["q_max"], ranges["q_min"])
    qd = np.where(upper[:, 1], 1.0, -1.0) * ranges["qd_max"]
    qdd = np.where(upper[:, 2], 1.0, -1.0) * ranges["qdd_max"]
    return q, qd, qdd


def random_wrenches(robot, count, seed=SEED):
    """Return random external wrenches on the last and the middle link.

    Parameters
    ----------
    robot : Robot
        The robot (n links); the middle link is link ``(n + 1) // 2`` (1-based).
    count : int
        Number of wrench sets; the first ``k`` do not depend on ``count``.
    seed : int
        Random seed.

    Returns
    -------
    numpy.ndarray, shape (count, n, 6)
        ``f_ext`` as for :func:`linkdyn.model.rnea`: force (N, uniform in ``±WRENCH_FORCE``)
        and moment about the origin of frame ``i`` (N·m, ``±WRENCH_MOMENT``), frame ``i``; zero
        on the other links.
    """
    u = _rng(robot, seed, 3).random((count, 2, 6))
    scale = np.array([WRENCH_FORCE] * 3 + [WRENCH_MOMENT] * 3)
    wrenches = np.zeros((count, robot.n, 6))
    wrenches[:, robot.n - 1] = (2 * u[:, 0] - 1) * scale
    wrenches[:, (robot.n - 1) // 2] += (2 * u[:, 1] - 1) * scale
    return wrenches


def torque_error(robot, q, qd, qdd, f_ext=None):
    """Return ``rnea_fixed - rnea`` (N·m, shape (..., n)) and whether any node overflowed."""
    fixed = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext)
    return fixed.tau - rnea(robot, q, qd, qdd, f_ext=f_ext), bool(np.any(fixed.overflow))


# ----------------------------------------------------------------------------------------------
# The microprogram with float registers: the error budget
# ----------------------------------------------------------------------------------------------

def _constant_values(robot):
    """Per node, the exact (float) value of every constant register, in its register's unit."""
    nodes = []
    for link in robot.links:
        r = link_offset_vector(link)  # a prismatic joint's at q = 0
        revolute = 0.0 if link.joint_type == "prismatic" else 1.0
        values = {
            "zero": 0.0, "rate": revolute / (2 * math.pi),
            "theta_offset": link.offset / (2 * math.pi),
            "revolute": revolute, "prismatic": 1.0 - revolute,
            "sin_alpha": math.sin(link.alpha), "cos_alpha": math.cos(link.alpha),
            "r_x": r[0], "r_y": r[1], "r_z": r[2],
            "F_c": link.friction.coulomb, "F_v": link.friction.viscous,
            "F_o": link.friction.offset, "k_friction": link.friction.steepness,
        }
        values.update(zip(_CONSTANT_GROUPS["inertia"], link.parameters()))
        nodes.append(values)
    return nodes


def _round_to(value, fraction_bits, wraps):
    """Round float values to a register format (half up) and saturate or wrap; as floats."""
    scale = 2.0 ** fraction_bits
    word = np.floor(np.asarray(value) * scale + 0.5)
    half = 2.0 ** (WORD_WIDTH - 1)
    if wraps:
        word = np.mod(word + half, 2 * half) - half
    else:
        word = np.clip(word, -half, half - 1)
    return word / scale


def microprogram_float(robot, q, qd, qdd, f_ext=None, sources=(), fmt=None):
    """Run the node microprogram on float registers, with chosen fixed-point error sources.

    The same operations in the same order as :func:`linkdyn.model.golden.rnea_fixed`, but every
    register holds a float64 value (in its unit: turns for the phase, rad for ``atan``). Each
    error source of :data:`ERROR_SOURCES` can be switched on alone:

    ``q``, ``qd``, ``qdd``, ``f_ext``
        the input is rounded to ``fmt``;
    ``gravity``, ``kinematics``, ``inertia``, ``friction``
        those constants take the values of their words (:func:`encode_robot`,
        :func:`encode_base_motion`);
    ``table``
        sine and cosine get the table's error ``S(w) - sin(w)`` at the phase word ``w`` nearest
        to the phase (the error of the 18-bit entries and of the interpolation);
    ``cordic``
        ``atan`` gets the CORDIC's error at the Q15.16 word nearest to ``k qd``;
    ``rounding``
        every Dot result is rounded half up to its register's format and saturated (phases
        wrapped), as in the golden model.

    Parameters
    ----------
    robot : Robot
        The robot.
    q, qd, qdd : array_like, shape (..., n)
        Joint state (rad, rad/s, rad/s^2).
    f_ext : array_like, shape (..., n, 6), optional
        External wrenches as for :func:`linkdyn.model.rnea`.
    sources : iterable of str
        Error sources switched on (default none: the float model's result):
        :data:`ERROR_SOURCES` and :data:`F_EXT_SOURCE`.
    fmt : QFormat
        Word format.

    Returns
    -------
    numpy.ndarray, shape (..., n)
        Joint torques, N·m.

    Raises
    ------
    ValueError
        If a source is unknown.
    """
    sources = frozenset(sources)
    known = ERROR_SOURCES + (F_EXT_SOURCE,)
    unknown = sources - set(known)
    if unknown:
        raise ValueError(f"unknown error sources {sorted(unknown)!r}; known: {known!r}")
    program = microprogram(fmt)
    rmap = program.registers
    n = robot.n
    arrays = [np.asarray(v, dtype=float) for v in (q, qd, qdd)]
    batch = np.broadcast_shapes(*(a.shape for a in arrays))[:-1]
    arrays = [np.broadcast_to(a, batch + (n,)) for a in arrays]

    def quantise(value, name):
        return rmap.decode(name, rmap.encode(name, value))

    inputs = {name: quantise(a, name) if name in sources else a
              for name, a in zip(("q", "qd", "qdd"), arrays)}
    if f_ext is not None:
        f_ext = np.broadcast_to(np.asarray(f_ext, dtype=float), batch + (n, 6))
        if F_EXT_SOURCE in sources:
            f_ext = np.concatenate([quantise(f_ext[..., :3], "f_ext_x"),
                                    quantise(f_ext[..., 3:], "mu_ext_x")], axis=-1)

    exact = _constant_values(robot)
    words = encode_robot(robot, fmt)
    constants = []
    for i in range(n):
        values = dict(exact[i])
        for group, names in _CONSTANT_GROUPS.items():
            if group in sources:
                for name in names:
                    bits = rmap[name].format.fraction_bits
                    values[name] = words[i][name] * 2.0 ** -bits
        constants.append(values)
    base_words = encode_base_motion(robot, fmt)
    # The base motion, in the forward message's word order: omega, omega_dot, p_ddot = -g.
    exact_base = np.concatenate([np.zeros(3), np.zeros(3), -robot.gravity_base])
    base = {receiver: (rmap.decode(receiver, base_words[receiver]) if "gravity" in sources
                       else value)
            for (_, receiver), value in zip(rmap.forward_message, exact_base)}

    rounding = "rounding" in sources

    def run(regs, segment):
        for op in program.segments[segment].ops:
            if isinstance(op, Dot):
                acc = 0.0
                for term in op.terms:
                    a, b = regs[term.a], regs[term.b]
                    value = a * b if term.kind == "mul" else a + b
                    acc = acc - value if term.negate else acc + value
                if rounding:
                    form = rmap[op.dst].format
                    acc = _round_to(acc, form.fraction_bits, form.wraps)
                regs[op.dst] = np.broadcast_to(acc, batch)
            elif isinstance(op, Lookup):
                sin, cos = _trig(regs[op.src], "table" in sources)
                regs.update(sin_base=sin, sin_delta=0.0, sin_fraction=0.0,
                            cos_base=cos, cos_delta=0.0, cos_fraction=0.0)
            elif isinstance(op, Atan):
                regs["atan"] = _atan(regs[op.src], "cordic" in sources)

    nodes = []
    previous = base
    for i in range(n):
        regs = dict(constants[i])
        for name in ("q", "qd", "qdd"):
            regs[name] = inputs[name][..., i]
        for k, reg in enumerate(rmap.of_kind("input")[3:]):
            regs[reg.name] = 0.0 if f_ext is None else f_ext[..., i, k]
        for source, receiver in rmap.forward_message:
            regs[receiver] = previous[receiver] if i == 0 else previous[source]
        for segment in ("joint", "forward", "local"):
            run(regs, segment)
        nodes.append(regs)
        previous = regs
    for i in reversed(range(n)):
        regs = nodes[i]
        for source, receiver in rmap.backward_message:
            regs[receiver] = 0.0 if i == n - 1 else nodes[i + 1][source]
        run(regs, "distal")
    return np.stack([np.broadcast_to(nodes[i]["tau"], batch) for i in range(n)], axis=-1)


def _trig(phase, table):
    """Sine and cosine of a phase (turns), exact or with the table's error."""
    angle = 2 * math.pi * np.asarray(phase, dtype=float)
    sin, cos = np.sin(angle), np.cos(angle)
    if table:
        word = wrap(np.floor(np.asarray(phase) * 2.0 ** 32 + 0.5).astype(np.int64))
        table_sin, table_cos = SINE_TABLE.evaluate(word)
        angle_word = 2 * math.pi * (word * 2.0 ** -32)
        sin = sin + (table_sin - np.sin(angle_word))
        cos = cos + (table_cos - np.cos(angle_word))
    return sin, cos


def _atan(x, cordic):
    """Arctangent (rad), exact or with the CORDIC's error."""
    x = np.asarray(x, dtype=float)
    value = np.arctan(x)
    if cordic:
        half = 2.0 ** (WORD_WIDTH - 1)
        word = np.clip(np.floor(x * 2.0 ** 16 + 0.5), -half, half - 1).astype(np.int64)
        value = value + (CORDIC.atan(word) * 2.0 ** -30 - np.arctan(word * 2.0 ** -16))
    return value


def error_budget(robot, q, qd, qdd, fmt=None):
    """Return the torque error of each error source alone, and of all of them together.

    Parameters
    ----------
    robot : Robot
        The robot.
    q, qd, qdd : array_like, shape (..., n)
        Joint states.

    Returns
    -------
    dict of str to numpy.ndarray, shape (..., n)
        ``microprogram_float(..., sources={s}) - rnea`` for every ``s`` of
        :data:`ERROR_SOURCES`; ``"all"``: every source on; ``"float check"``: no source on
        (the interpreter's own float error against :func:`rnea`, ~1e-12 N·m); and one entry
        per :data:`WHAT_IF` (every source on except some).
    """
    reference = rnea(robot, q, qd, qdd)
    budget = {"float check": microprogram_float(robot, q, qd, qdd, fmt=fmt) - reference}
    for source in ERROR_SOURCES:
        budget[source] = microprogram_float(robot, q, qd, qdd, sources={source},
                                            fmt=fmt) - reference
    budget["all"] = microprogram_float(robot, q, qd, qdd, sources=ERROR_SOURCES,
                                       fmt=fmt) - reference
    for label, left_out in WHAT_IF.items():
        kept = [s for s in ERROR_SOURCES if s not in left_out]
        budget[label] = microprogram_float(robot, q, qd, qdd, sources=kept, fmt=fmt) - reference
    return budget


# ----------------------------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------------------------

def _summary(error):
    error = np.asarray(error).reshape(-1, np.shape(error)[-1])
    return {
        "max": float(np.max(np.abs(error))),
        "rms": float(np.sqrt(np.mean(error ** 2))),
        "max_per_joint": tuple(float(v) for v in np.max(np.abs(error), axis=0)),
        "rms_per_joint": tuple(float(v) for v in np.sqrt(np.mean(error ** 2, axis=0))),
    }


def measure(states=STATES, seed=SEED, robots=ROBOTS, limit_count=LIMIT_STATES, budget=True,
            progress=None):
    """Measure the golden model's torque error on every robot and friction case.

    Parameters
    ----------
    states : int
        Random states per robot (:func:`random_states`), the same for both friction cases.
    seed : int
        Random seed.
    robots : sequence of str
        Names from :data:`ROBOTS`.
    limit_count : int
        States at the limits per robot (:func:`limit_states`).
    budget : bool
        Also compute the error budget (:func:`error_budget`).
    progress : callable, optional
        Called with a line of text after each measurement.

    Returns
    -------
    dict
        ``{robot: {"n": int, "joints": [names], "ranges": joint_ranges, "cases": {case: {...}}}}``
        where every case holds ``"friction"`` (text); the summaries (``max``, ``rms``,
        ``max_per_joint``, ``rms_per_joint`` in N·m) ``"random"`` (random states),
        ``"limits"`` (:func:`limit_states`), ``"zero"`` (the zero state: gravity only) and
        ``"wrench"`` (the random states with :func:`random_wrenches`);
        ``"overflow"`` (any node saturated), ``"max_tau"`` (largest ``|tau|``, N·m),
        ``"friction_slope"`` (largest ``F_c k``, N·m·s/rad), ``"budget"`` (summaries per
        :func:`error_budget` entry, and ``"golden - all"``: golden model minus the float
        interpreter with every source) and ``"seconds"`` (golden model time).
    """
    results = {}
    for name in robots:
        loaded = load_accuracy_robot(name)
        q, qd, qdd = random_states(loaded, states, seed)
        lq, lqd, lqdd = limit_states(loaded, limit_count, seed)
        wrenches = random_wrenches(loaded, states, seed)
        entry = {"n": loaded.n, "joints": [link.name for link in loaded.links],
                 "ranges": joint_ranges(loaded), "cases": {}}
        for case in FRICTION_CASES:
            robot, friction = with_friction(loaded, case)
            start = time.perf_counter()
            fixed = rnea_fixed(robot, q, qd, qdd)
            seconds = time.perf_counter() - start
            reference = rnea(robot, q, qd, qdd)
            limits_error, limits_overflow = torque_error(robot, lq, lqd, lqdd)
            zero = np.zeros(loaded.n)
            zero_error, zero_overflow = torque_error(robot, zero, zero, zero)
            wrench_error, wrench_overflow = torque_error(robot, q, qd, qdd, f_ext=wrenches)
            result = {
                "friction": friction,
                "random": _summary(fixed.tau - reference),
                "limits": _summary(limits_error),
                "zero": _summary(zero_error),
                "wrench": _summary(wrench_error),
                "overflow": bool(np.any(fixed.overflow)) or limits_overflow or zero_overflow
                or wrench_overflow,
                "max_tau": float(np.max(np.abs(reference))),
                "friction_slope": max(link.friction.coulomb * link.friction.steepness
                                      for link in robot.links),
                "seconds": seconds,
            }
            if budget:
                parts = error_budget(robot, q, qd, qdd)
                result["budget"] = {source: _summary(error) for source, error in parts.items()}
                result["budget"]["golden - all"] = _summary(
                    fixed.tau - reference - parts["all"])
            entry["cases"][case] = result
            if progress is not None:
                progress(f"{name} friction {case}: max {result['random']['max']:.3e} N·m, "
                         f"RMS {result['random']['rms']:.3e} N·m ({seconds:.2f} s)")
        results[name] = entry
    return results


#: Trees of revolute joints measured by :func:`measure_trees` (:mod:`linkdyn.model.tree_robots`).
TREE_ROBOTS = ("two_arm_tree", "baxter_revolute")
_TREE_TITLES = {"two_arm_tree": "two-arm tree (UR5 arms)",
                "baxter_revolute": "Baxter without fingers"}


#: A published joint velocity limit above this (rad/s) is taken for a placeholder (Baxter's
#: ``head_pan``: 10,000 rad/s): :func:`measure_trees` draws that joint's ``qd`` within
#: ±:data:`DEFAULT_QD_MAX`, as for a joint without a limit.
PLACEHOLDER_QD_MAX = 100.0


def load_tree_robot(name):
    """Return a tree of :data:`TREE_ROBOTS` (``baxter_revolute`` needs example-robot-data:
    FileNotFoundError without it)."""
    from . import tree_robots
    if name not in TREE_ROBOTS:
        raise ValueError(f"Tree robot must be one of {', '.join(TREE_ROBOTS)}, not {name!r}")
    return getattr(tree_robots, name)()


def measure_trees(states=STATES, seed=SEED, robots=TREE_ROBOTS, progress=None):
    """Measure the golden tree's torque error on trees of revolute joints (docs/trees.md).

    The fixed-point tree (:class:`linkdyn.model.golden_tree.GoldenTree`: the node microprogram
    on every node, the children's backward messages merged by an exact sum saturated once)
    against the float :func:`~linkdyn.model.rnea` of the same tree, on :func:`random_states`
    (no friction, no external wrench).

    Parameters
    ----------
    states : int
        Random states per robot.
    seed : int
        Random seed.
    robots : sequence of str
        Names from :data:`TREE_ROBOTS`; one whose data is not installed is left out.
    progress : callable, optional
        Called with a line of text after each robot.

    Returns
    -------
    dict
        ``{robot: {"n", "nodes", "roots", "mounts", "joints", "parents", "random" (summary:
        max, rms, max_per_joint, rms_per_joint, N·m), "max_tau" (N·m), "overflow" (bool),
        "capped" (joints whose placeholder velocity limit was replaced), "seconds"}}``.
    """
    from .golden_tree import GoldenTree
    results = {}
    for name in robots:
        try:
            robot = load_tree_robot(name)
        except FileNotFoundError:
            continue
        capped = [joint for joint, link in zip(robot.joint_names, robot.links)
                  if link.limits.qd_max is not None and link.limits.qd_max > PLACEHOLDER_QD_MAX]
        if capped:
            robot = replace(robot, links=tuple(
                replace(link, limits=replace(link.limits, qd_max=DEFAULT_QD_MAX))
                if link.limits.qd_max is not None and link.limits.qd_max > PLACEHOLDER_QD_MAX
                else link for link in robot.links))
        golden = GoldenTree(robot)
        q, qd, qdd = random_states(robot, states, seed)
        start = time.perf_counter()
        steps = [golden.step(q[k], qd[k], qdd[k]) for k in range(states)]
        seconds = time.perf_counter() - start
        fixed = np.array([step.tau for step in steps])
        reference = rnea(robot, q, qd, qdd)
        results[name] = {
            "n": robot.n, "nodes": golden.tree.n, "roots": len(golden.tree.roots),
            "mounts": sum(link.has_mount for link in robot.links),
            "joints": list(robot.joint_names), "parents": list(robot.parents),
            "capped": capped,
            "random": _summary(fixed - reference),
            "max_tau": float(np.max(np.abs(reference))),
            "overflow": any(bool(np.any(step.overflow)) for step in steps),
            "seconds": seconds,
        }
        if progress is not None:
            progress(f"{name}: max {results[name]['random']['max']:.3e} N·m, RMS "
                     f"{results[name]['random']['rms']:.3e} N·m ({seconds:.2f} s)")
    return results


def _tree_section(trees, states, seed):
    lines = ["## Trees", "",
             f"The golden model of a kinematic tree (`linkdyn.model.golden_tree.GoldenTree`, "
             f"docs/trees.md: the node microprogram on every node, a mount node in front of "
             f"every mounted link, the children's backward messages summed exactly and "
             f"saturated once) against the float `rnea` of the same tree, on {states:,} random "
             f"states per robot (seed {seed}, drawn as above; no friction, no external wrench). "
             "Two-arm tree: `linkdyn.model.tree_robots.two_arm_tree()` (a torso joint with two "
             "arms of the UR5's links, the left one mounted 0.5 m across the torso); Baxter "
             "without fingers: `baxter_revolute()` (example-robot-data's `baxter.urdf`, head and "
             "both 7-joint arms, the four prismatic finger joints and their masses dropped)."
             + "".join(f" {_TREE_TITLES[name]}: the published velocity limit of "
                       + ", ".join(f"`{joint}`" for joint in entry["capped"])
                       + f" is above {PLACEHOLDER_QD_MAX:g} rad/s, a placeholder (Baxter's "
                       f"`head_pan`: 10,000 rad/s, which saturates the head node's words), so "
                       f"its `qd` is drawn within ±{DEFAULT_QD_MAX:.4g} rad/s, as for a joint "
                       f"without a limit."
                       for name, entry in trees.items() if entry["capped"]),
             "",
             "| robot | joints | nodes | roots | mounts | max \\|error\\| (N·m) | RMS (N·m) | "
             "max \\|tau\\| (N·m) | overflow |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, entry in trees.items():
        lines.append(f"| {_TREE_TITLES[name]} | {entry['n']} | {entry['nodes']} | "
                     f"{entry['roots']} | {entry['mounts']} | {_e(entry['random']['max'])} | "
                     f"{_e(entry['random']['rms'])} | {entry['max_tau']:.1f} | "
                     f"{'yes' if entry['overflow'] else 'no'} |")
    for name, entry in trees.items():
        lines += ["", f"**{_TREE_TITLES[name]}**, worst \\|tau_fixed - tau_float\\| per joint:",
                  "", "| joint | parent | max (N·m) | RMS (N·m) |", "|---|---|---:|---:|"]
        for i, joint in enumerate(entry["joints"]):
            parent = entry["parents"][i]
            above = "base" if parent < 0 else entry["joints"][parent]
            lines.append(f"| {joint} | {above} | {_e(entry['random']['max_per_joint'][i])} | "
                         f"{_e(entry['random']['rms_per_joint'][i])} |")
    return lines


def plot_trees(trees, path):
    """Plot the trees' worst and RMS torque error per joint (bars, log scale) against the goal
    of 1e-3 N·m, one panel per tree; write a PNG to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(trees), 1, figsize=(10, 3.2 * len(trees)), squeeze=False)
    for axis, (name, entry) in zip(axes[:, 0], trees.items()):
        index = np.arange(entry["n"])
        axis.bar(index - 0.2, entry["random"]["max_per_joint"], 0.4, label="max |error|")
        axis.bar(index + 0.2, entry["random"]["rms_per_joint"], 0.4, label="RMS")
        axis.axhline(1e-3, color="k", linestyle="--", linewidth=1, label="goal 1e-3 N·m")
        axis.set_yscale("log")
        axis.set_xticks(index, entry["joints"], rotation=35, ha="right", fontsize=8)
        axis.set_ylabel("|tau_fixed - tau_float| (N·m)")
        axis.set_title(f"{_TREE_TITLES[name]}: {entry['n']} joints on {entry['nodes']} nodes")
        axis.set_ylim(top=2e-2)
        axis.legend(fontsize=8, loc="upper right", ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def measured_bounds(states=STATES, seed=SEED, robots=ROBOTS):
    """Return the measured torque-error bounds of the golden model per robot.

    Parameters
    ----------
    states : int
        Random states per robot (default 10,000).
    seed : int
        Random seed.
    robots : sequence of str
        Names from :data:`ROBOTS`.

    Returns
    -------
    dict
        ``{robot: {"friction off": {...}, "friction on": {...}}}``, each with ``"max"`` and
        ``"rms"`` (N·m, over all joints and states), ``"max_per_joint"`` and
        ``"rms_per_joint"`` (tuples, N·m), ``"limits_max"`` (N·m, on
        :data:`LIMIT_STATES` states at the limits), ``"zero_state_max"`` (N·m, the zero
        state), ``"wrench_max"`` and ``"wrench_max_per_joint"`` (N·m, the random states with
        :func:`random_wrenches`), ``"states"`` and ``"friction"`` (text).
    """
    results = measure(states, seed, robots, budget=False)
    bounds = {}
    for name, entry in results.items():
        bounds[name] = {}
        for case, result in entry["cases"].items():
            bounds[name][f"friction {case}"] = dict(
                result["random"], limits_max=result["limits"]["max"],
                zero_state_max=result["zero"]["max"], wrench_max=result["wrench"]["max"],
                wrench_max_per_joint=result["wrench"]["max_per_joint"], states=states,
                friction=result["friction"])
    return bounds


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------

_TITLES = {"ur5": "UR5", "ur10": "UR10", "puma560": "Puma 560", "panda": "Panda"}


def _e(value):
    return f"{value:.2e}"


def report(results, *, states, seed, command, date, cores, trees=None, tree_plot=None):
    """Return the Markdown report of :func:`measure`'s results.

    Parameters
    ----------
    results : dict
        From :func:`measure` (with the budget).
    states, seed : int
        The measurement's parameters, for the text.
    command : str
        The command that generated the report.
    date : str
        Date of the run.
    cores : int
        CPU cores of the machine.
    trees : dict, optional
        From :func:`measure_trees`: a section *Trees*.
    tree_plot : str, optional
        Path of the trees' plot relative to the report (:func:`plot_trees`), shown there.
    """
    fmt = NODE_FORMATS
    program = microprogram(fmt)
    table_error = SINE_TABLE.worst_case_error()
    cordic_error = CORDIC.worst_case_error()
    out = []
    w = out.append
    w("# Fixed-point accuracy of the golden model")
    w("")
    w(f"Generated by `{command}` on {date} (machine: {cores} cores). Do not edit by hand: "
      f"rerun the command.")
    w("")
    rmap = program.registers
    w("The fixed-point golden model (`linkdyn.model.golden.rnea_fixed`: the node microprogram "
      "on 32-bit words, each register in its quantity's format (`NODE_FORMATS`: "
      f"q {rmap.qformat('q').name}, qd {rmap.qformat('qd').name}, qdd "
      f"{rmap.qformat('qdd').name}, masses {rmap.qformat('m').name}, first moments and "
      f"inertias {rmap.qformat('I_xx').name}, omega {rmap.qformat('omega_x').name}, "
      f"omega_dot and p_ddot {rmap.qformat('p_ddot_x').name}, forces, moments and torques "
      f"{rmap.qformat('tau').name}, sin/cos and r Q1.30; docs/certificate.md, *Formats per "
      f"quantity*; sine table {SINE_TABLE.size:,} entries), the fixed-point contract of "
      "docs/architecture.md) against the float model "
      "(`linkdyn.model.rnea`, float64) on the same joint states. Error = fixed - float, N·m.")
    w("")
    w("These are sampled errors. The guaranteed bounds of the same node per robot and joint "
      "(a static analysis of the microprogram), set beside the sampled maxima, how the formats "
      "were chosen from that error budget, their cost in cycles and LUTs, and RoboPrec's "
      "approach beside ours: docs/certificate.md.")
    w("")
    w("## States and robots")
    w("")
    w(f"- {states:,} random states per robot, seed {seed}: `q` uniform within the joint limits "
      f"(±pi where a joint has none), `qd` uniform within ±(velocity limit) "
      f"(±{DEFAULT_QD_MAX:.4g} rad/s where a robot publishes none: Puma 560), "
      f"`qdd` uniform within ±{DEFAULT_QDD_MAX:g} rad/s² (none of these robots publishes an "
      f"acceleration limit here; Franka's published Panda limits are 7.5 to 20 rad/s²).")
    w(f"- {LIMIT_STATES:,} states at the limits per robot: every `q_i` at its lower or upper "
      "limit, every `qd_i` and `qdd_i` at ± its bound (random corners, the first all lower, the "
      "second all upper).")
    w("- UR5, UR10, Puma 560: built-in robots (`load_robot(\"ur5\")` ...; sources in "
      "`python -m linkdyn.model info --robot ...`). Panda: example-robot-data "
      f"`{REFERENCE_URDFS['panda'][0]}` up to `panda_hand` (fingers merged at zero).")
    f = TYPICAL_FRICTION
    w("- Friction off: no friction term. Friction on: the robot's own friction (Puma 560, "
      "eq. 20 from Corke's model); the UR5, UR10 and Panda publish none, so they get a "
      f"typical friction on every joint: F_c = {f.coulomb:g} N·m, F_v = {f.viscous:g} "
      f"N·m·s/rad, F_o = {f.offset:g}, k = {f.steepness:g} s/rad.")
    w("")
    w("## Torque error")
    w("")
    w("| robot | friction | max \\|error\\| (N·m) | RMS (N·m) | at the limits: max | "
      "zero state | with f_ext: max | max \\|tau\\| (N·m) | overflow |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, entry in results.items():
        for case, result in entry["cases"].items():
            w(f"| {_TITLES[name]} | {case} | "
              f"{_e(result['random']['max'])} | {_e(result['random']['rms'])} | "
              f"{_e(result['limits']['max'])} | {_e(result['zero']['max'])} | "
              f"{_e(result['wrench']['max'])} | {result['max_tau']:.1f} | "
              f"{'yes' if result['overflow'] else 'no'} |")
    w("")
    w("Columns: random states; states at the limits; the zero state q = qd = qdd = 0 (gravity "
      f"only); the random states with an external wrench on the last and the middle link "
      f"(force components uniform in ±{WRENCH_FORCE:g} N, moments in ±{WRENCH_MOMENT:g} N·m, "
      "`random_wrenches`); the largest float torque of the random states; whether any node "
      "saturated. Friction on: "
      + "; ".join(f"{_TITLES[name]} {entry['cases']['on']['friction']}"
                  for name, entry in results.items()) + ".")
    w("")
    goal = 1e-3
    above = [f"{_TITLES[name]} (friction {case})" for name, entry in results.items()
             for case, result in entry["cases"].items() if result["random"]["max"] > goal]
    if above:
        w(f"The accuracy goal of docs/architecture.md, {goal:g} N·m, is **not met** in the "
          "worst case by: "
          + ", ".join(above) + ". The error budget below says why.")
    else:
        w(f"Every robot meets the accuracy goal of docs/architecture.md, {goal:g} N·m.")
    w("")
    w("### Per joint (random states)")
    w("")
    for name, entry in results.items():
        joints = entry["n"]
        w(f"**{_TITLES[name]}**")
        w("")
        w("| | " + " | ".join(f"joint {j + 1}" for j in range(joints)) + " |")
        w("|---|" + "---:|" * joints)
        for case, result in entry["cases"].items():
            w(f"| max, friction {case} | "
              + " | ".join(_e(v) for v in result["random"]["max_per_joint"]) + " |")
            w(f"| RMS, friction {case} | "
              + " | ".join(_e(v) for v in result["random"]["rms_per_joint"]) + " |")
        w("")
    if trees:
        out.extend(_tree_section(trees, states, seed))
        w("")
        if tree_plot:
            w(f"![worst and RMS torque error per joint of the trees]({tree_plot})")
            w("")
    w("## Sine table and CORDIC")
    w("")
    t = SINE_TABLE
    cordic_exhaustive, cordic_word = cordic_worst_case()
    w(f"- Sine table: {t.size} entries of {t.entry_bits} bits per quarter wave, linear "
      f"interpolation with a {t.fraction_bits}-bit fraction. Worst-case |S - sin| over all "
      f"2^32 phase words (exact, `sine_table_worst_case`): **{sine_table_worst_case():.4e}**; "
      f"`SINE_TABLE.worst_case_error()` ({1 << 22:,} phases): {table_error:.4e}. It is the "
      f"interpolation error h²/8 = {_interpolation_error():.3e} (h = "
      f"{math.pi / 2 / t.size:.3e} rad) plus the entry rounding, at most 2^-{t.entry_bits} = "
      f"{2.0 ** -t.entry_bits:.1e}. The node then rounds S to Q1.30 (2^-31 = "
      f"{2.0 ** -31:.1e}).")
    w(f"- CORDIC arctangent: {CORDIC.iterations} iterations, {CORDIC.state_bits}-bit state. "
      f"Worst-case |atan - atan| over every Q15.16 word |x| < 2^20: **{cordic_exhaustive:.4e}** "
      f"rad, at x = {cordic_word} · 2^-16; `CORDIC.worst_case_error()` (every 37th small word "
      f"and a log-spaced set): {cordic_error:.4e} rad"
      + (", which misses that word." if cordic_error < cordic_exhaustive else "."))
    w("")
    w("## Error budget")
    w("")
    w("The node microprogram run with float registers (`microprogram_float`: same operations "
      "and order as the golden model), with one fixed-point error source switched on at a time, "
      "against the float model; random states as above. Max and RMS over all joints, N·m.")
    w("")
    w("| source | what |")
    w("|---|---|")
    for source in ERROR_SOURCES:
        w(f"| {source} | {_source_doc(source)} |")
    w("")
    for case in FRICTION_CASES:
        w(f"**Friction {case}**: max (RMS), N·m")
        w("")
        names = list(results)
        w("| source | " + " | ".join(_TITLES[name] for name in names) + " |")
        w("|---|" + "---:|" * len(names))
        rows = list(ERROR_SOURCES) + ["all", "golden - all", "float check"]
        for source in rows:
            cells = []
            for name in names:
                part = results[name]["cases"][case]["budget"][source]
                cells.append(f"{_e(part['max'])} ({_e(part['rms'])})")
            label = {"all": "**all sources together**",
                     "golden - all": "golden model - all sources",
                     "float check": "no source (interpreter check)"}.get(source, source)
            w(f"| {label} | " + " | ".join(cells) + " |")
        sums = [sum(results[name]["cases"][case]["budget"][s]["max"] for s in ERROR_SOURCES)
                for name in names]
        w("| sum of the maxima of the sources | " + " | ".join(_e(v) for v in sums) + " |")
        for label in WHAT_IF:
            cells = [f"{_e(results[name]['cases'][case]['budget'][label]['max'])} "
                     f"({_e(results[name]['cases'][case]['budget'][label]['rms'])})"
                     for name in names]
            w(f"| what if: {label} | " + " | ".join(cells) + " |")
        w("")
    w(_budget_text(results))
    w("")
    w("## Schedule")
    w("")
    for n in sorted({entry["n"] for entry in results.values()}):
        w(f"`build_microprogram().schedule_report({n})`:")
        w("")
        w(program.schedule_report(n))
        w("")
    w("## Run time")
    w("")
    w("Golden model (numpy, vectorised over the states), one friction case: "
      + ", ".join(f"{_TITLES[name]} {entry['cases']['off']['seconds']:.2f} s"
                  for name, entry in results.items())
      + f" for {states:,} states.")
    if trees:
        w("")
        w("Golden tree (one state at a time): "
          + ", ".join(f"{_TREE_TITLES[name]} {entry['seconds']:.1f} s"
                      for name, entry in trees.items())
          + f" for {states:,} states.")
    w("")
    return "\n".join(out)


def _interpolation_error(table=SINE_TABLE):
    """h²/8, the largest error of linear interpolation of sin with step h (rad)."""
    return (math.pi / 2 / table.size) ** 2 / 8


def sine_table_worst_case(table=SINE_TABLE):
    """Return the largest ``|S - sin|`` of a sine table over *all* 2**32 phase words.

    The quadrant rule maps every phase word (sine and cosine) to a position ``v`` in
    ``[0, 2**30]`` with the same error, so the quarter wave suffices. On one interpolation
    segment ``sin`` is concave, so ``S - sin`` is convex: its largest magnitude is at an end
    (an entry's rounding) or next to the interior minimum, where ``cos`` equals the chord's
    slope. Those few words of every segment are evaluated.

    Returns
    -------
    float
        The worst-case error (unrounded interpolation, before the Q1.30 rounding).
    """
    entries = [int(v) for v in table.entries]
    f, e = table.fraction_bits, table.entry_fraction_bits
    scale = 2 * math.pi / 2 ** 32
    worst = 0.0
    for k in range(table.size):
        delta = entries[k + 1] - entries[k]
        centre = int(math.floor(math.acos(min(1.0, delta * 2.0 ** -(f + e) / scale)) / scale))
        v = np.clip(np.array([k << f, (k + 1) << f] + list(range(centre - 2, centre + 4)),
                             dtype=np.int64), k << f, (k + 1) << f)
        s = (entries[k] * 2.0 ** f + delta * (v - (k << f)).astype(float)) * 2.0 ** -(f + e)
        worst = max(worst, float(np.max(np.abs(s - np.sin(v * scale)))))
    return worst


def cordic_worst_case(limit=1 << 20, cordic=CORDIC):
    """Return the largest CORDIC error over every Q15.16 word ``|w| < limit``.

    Returns
    -------
    (float, int)
        The error (rad) and the word where it occurs.
    """
    words = np.arange(-limit + 1, limit, dtype=np.int64)
    error = np.abs(cordic.atan(words) * 2.0 ** -30 - np.arctan(words * 2.0 ** -16))
    index = int(np.argmax(error))
    return float(error[index]), int(words[index])


def _budget_text(results):
    """The explanation under the budget tables, with the measured numbers."""
    rmap = microprogram().registers
    q_format = rmap.qformat("q")
    lsb = q_format.resolution / 2
    qd_lsb = rmap.qformat("qd").resolution / 2
    inertia_lsb = rmap.qformat("m").resolution / 2
    r_lsb = 2.0 ** -(rmap["r_x"].format.fraction_bits + 1)
    table_error = SINE_TABLE.worst_case_error()
    lines = ["**Reading the budget.**", ""]
    for name, entry in results.items():
        for case, result in entry["cases"].items():
            budget = result["budget"]
            ranked = sorted(ERROR_SOURCES, key=lambda s: budget[s]["max"], reverse=True)
            top = ", ".join(f"{s} {_e(budget[s]['max'])}" for s in ranked[:3])
            lines.append(f"- {_TITLES[name]}, friction {case}: largest sources {top} N·m "
                         f"(max); all together {_e(result['random']['max'])} N·m.")
    goal = 1e-3
    alone = []
    for source in ERROR_SOURCES:
        over = [f"{_TITLES[name]} {case} {_e(result['budget'][source]['max'])}"
                for name, entry in results.items() for case, result in entry["cases"].items()
                if result["budget"][source]["max"] > goal]
        if over:
            alone.append(f"*{source}* ({', '.join(over)})")
    lines += ["", "Sources that alone exceed the goal of 1e-3 N·m (robot, friction, max N·m): "
              + ("; ".join(alone) if alone else "none") + ". These need more fractional bits "
              "(a finer format for that input or constant) to meet the goal; the others only "
              "add up."]
    exact = all(result["budget"]["golden - all"]["max"] == 0.0
                for entry in results.values() for result in entry["cases"].values())
    worst_gap = max(result["budget"]["golden - all"]["max"]
                    for entry in results.values() for result in entry["cases"].values())
    slopes = ", ".join(
        f"{_TITLES[name]} {entry['cases']['on']['friction_slope']:.4g} N·m·s/rad "
        f"({_e(entry['cases']['on']['friction_slope'] * qd_lsb)} N·m)"
        for name, entry in results.items())
    lines += [
        "",
        f"- *q*: rounding `q` to {q_format.name} moves an angle by up to "
        f"2^-{q_format.fraction_bits + 1} = {lsb:.2e} rad; "
        f"a gravity torque of G N·m moves by about {lsb:.2e} G (the fixed-point contract of "
        "docs/architecture.md).",
        "- *qd* with friction on: the Coulomb term F_c atan(k qd) has the slope F_c k at "
        f"qd = 0, so rounding `qd` by up to {qd_lsb:.2e} rad/s costs up to {qd_lsb:.2e} max(F_c k) "
        f"N·m; max(F_c k) with friction on: {slopes}. This is the friction model's own "
        f"sensitivity, not the datapath's: a velocity known to 2^-{rmap.qformat('qd').fraction_bits} "
        "rad/s gives the same.",
        f"- *kinematics*: `r = (a, d sin alpha, d cos alpha)` is rounded to {r_lsb:.2e} m, "
        f"which moves the moment of a force of F N by up to about {r_lsb:.2e} F N·m per link. "
        f"*inertia*: m, m c and I are rounded to {inertia_lsb:.2e} kg, "
        f"{rmap.qformat('mc_x').resolution / 2:.2e} kg·m and "
        f"{rmap.qformat('I_xx').resolution / 2:.2e} kg·m²; a 1e-3 kg·m² inertia is then known "
        f"to {100 * rmap.qformat('I_xx').resolution / 2 / 1e-3:.4f} %. "
        "The rows *what if* give the error left with exact "
        "constants (and a table without error): what stays is mostly the rounding of `q` "
        "(row *q*) and, with friction, of `qd`.",
        f"- *table*: sine and cosine are each off by up to {table_error:.2e} (interpolation "
        f"error h²/8 = {_interpolation_error():.2e}, entry rounding "
        f"2^-{SINE_TABLE.entry_bits} = {2.0 ** -SINE_TABLE.entry_bits:.1e}), independently: "
        "every joint's rotation is off by an angle and a scale of that size, applied to the "
        "gravity vector and to the wrenches at every joint.",
        "- *rounding*: every result is rounded once, to half an LSB of its register's format "
        f"(2^-{rmap.qformat('tau').fraction_bits + 1} for forces, moments and torques, "
        f"2^-{rmap.qformat('omega_x').fraction_bits + 1} for omega, 2^-31 for the Q1.30 "
        "rotation entries); errors of the forward recursion are multiplied by masses and "
        "lengths in the backward one.",
        "- *all sources together* is below the sum of the maxima (the worst cases of the "
        "sources do not coincide). "
        + ("It equals the golden model exactly on every state (row *golden model - all "
           "sources*), so the budget is complete: the float interpreter with every source on "
           "makes the same rounding decisions as the integer golden model."
           if exact else
           f"It differs from the golden model by at most {_e(worst_gap)} N·m (row *golden "
           "model - all sources*: float against exact integer accumulation at rounding ties)."),
    ]
    return "\n".join(lines)


def main(argv=None):
    """Run the measurement and write the report; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m linkdyn.model.accuracy",
        description="Measure the fixed-point golden model against the float model on UR5, "
                    "UR10, Puma 560 and Panda and write a Markdown report.")
    parser.add_argument("--states", type=int, default=STATES,
                        help=f"random states per robot (default {STATES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    parser.add_argument("--robots", nargs="+", choices=ROBOTS, default=list(ROBOTS),
                        metavar="ROBOT", help=f"robots to measure (default: {' '.join(ROBOTS)})")
    parser.add_argument("--no-trees", action="store_true",
                        help="leave out the trees (two-arm tree, Baxter without fingers)")
    parser.add_argument("--plot", metavar="PNG",
                        help="also plot the trees' error per joint (shown in the report)")
    parser.add_argument("--out", metavar="MARKDOWN",
                        help="write the report to this file (default: print it)")
    args = parser.parse_args(argv)
    if args.states < 1:
        parser.error(f"--states must be positive, not {args.states}")
    command = f"python -m linkdyn.model.accuracy --states {args.states}"
    if args.seed != SEED:
        command += f" --seed {args.seed}"
    if list(args.robots) != list(ROBOTS):
        command += " --robots " + " ".join(args.robots)
    if args.no_trees:
        command += " --no-trees"
    if args.plot:
        command += f" --plot {args.plot}"
    if args.out:
        command += f" --out {args.out}"
    results = measure(args.states, args.seed, args.robots,
                      progress=lambda line: print(line, file=sys.stderr, flush=True))
    trees = None if args.no_trees else measure_trees(
        args.states, args.seed, progress=lambda line: print(line, file=sys.stderr, flush=True))
    tree_plot = None
    if trees and args.plot:
        plot_trees(trees, args.plot)
        base = Path(args.out).parent if args.out else Path.cwd()
        tree_plot = os.path.relpath(Path(args.plot).resolve(), base.resolve())
    text = report(results, states=args.states, seed=args.seed, command=command,
                  date=datetime.date.today().isoformat(), cores=os.cpu_count(), trees=trees,
                  tree_plot=tree_plot)
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
