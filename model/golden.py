"""Fixed-point golden model: the node microprogram interpreted with the exact arithmetic.

The gateware must equal this model word for word. Both derive from the same definitions: the
number formats and arithmetic (:mod:`linkdyn.model.fixedpoint`), the sine table and CORDIC
(:mod:`linkdyn.model.tables`) and the microprogram with its register map
(:mod:`linkdyn.model.microprogram`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .compiled import compiled_microprogram
from .fixedpoint import FixedPointRangeError, QFormat, saturate, wrap, WORD_WIDTH
from .microprogram import Atan, Dot, Lookup, microprogram  # re-exported (one cache)
from .rnea import link_offset_vector
from .robot import Robot
from .tables import CORDIC, SINE_TABLE
from .microprogram import node_formats

__all__ = ["microprogram", "encode_robot", "encode_links", "encode_base_motion", "run_segment",
           "rnea_fixed", "FixedResult", "FixedPointRangeError", "GoldenChain", "ExecutorTables",
           "executor_tables"]


def _phase_word(turns):
    """Encode an angle in turns as a wrapping 32-bit phase word."""
    word = int(math.floor(turns * 2.0 ** 32 + 0.5))
    return int(wrap(word))


def encode_robot(robot, fmt=None):
    """Return the constant words every node of a robot is loaded with.

    Parameters
    ----------
    robot : Robot
        The robot (n links).
    fmt : QFormat
        Word format of the nodes (default Q15.16).

    Returns
    -------
    list of dict
        Per node, ``{register name: word}`` for every ``constant`` register of the register map
        (:class:`~linkdyn.model.microprogram.RegisterMap`), words as Python ints.

    Raises
    ------
    FixedPointRangeError
        If a constant does not fit its format; the message names the node and the constant.
    NotImplementedError
        If the robot is a tree or has a mount: a chain of nodes runs serial chains in plain DH
        (trees and mounts: :func:`linkdyn.model.golden_tree.encode_tree`).
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not robot.is_chain or any(l.has_mount for l in robot.links):
        raise NotImplementedError(
            f"a chain of nodes runs serial chains without mounts; robot {robot.name!r} is a "
            f"tree or has a mount (see linkdyn.model.golden_tree)")
    return encode_links(robot.links, fmt)


def encode_links(links, fmt=None, labels=None):
    """Return the constant words of nodes that run the given links (mounts ignored).

    The per-node part of :func:`encode_robot`, also used by the golden model of a tree
    (:mod:`linkdyn.model.golden_tree`), whose fixed mounts are massless links of their own.

    Parameters
    ----------
    links : sequence of Link
        One link per node, in node order.
    fmt : QFormat
        Word format of the nodes.
    labels : sequence of str, optional
        How error messages name node ``i`` (default ``"node {i + 1}"``).

    Returns
    -------
    list of dict
        Per node, ``{register name: word}`` for every ``constant`` register.

    Raises
    ------
    FixedPointRangeError
        If a constant does not fit its format; the message names the node and the constant.
    """
    program = microprogram(fmt)
    rmap = program.registers
    nodes = []
    for i, link in enumerate(links):
        label = f"node {i + 1}" if labels is None else labels[i]
        r = link_offset_vector(link)  # a prismatic joint's at q = 0
        prismatic = link.joint_type == "prismatic"
        pi = link.parameters()
        values = {
            "zero": 0.0,
            "sin_alpha": math.sin(link.alpha),
            "cos_alpha": math.cos(link.alpha),
            "r_x": r[0], "r_y": r[1], "r_z": r[2],
            "F_c": link.friction.coulomb,
            "F_v": link.friction.viscous,
            "F_o": link.friction.offset,
            "k_friction": link.friction.steepness,
            "revolute": 0.0 if prismatic else 1.0,
            "prismatic": 1.0 if prismatic else 0.0,
        }
        for name, value in zip(("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_xz", "I_yy",
                                "I_yz", "I_zz"), pi):
            values[name] = value
        words = {}
        for reg in rmap.of_kind("constant"):
            what = f"{label} ({link.name!r}) constant {reg.name}"
            if reg.name == "rate":
                # revolute / (2 pi): a prismatic joint's theta is the offset alone.
                words[reg.name] = _encode(0.0 if prismatic else 1.0 / (2 * math.pi),
                                          reg.format.fraction_bits, what)
            elif reg.name == "theta_offset":
                words[reg.name] = _phase_word(link.offset / (2 * math.pi))
            else:
                words[reg.name] = _encode(values[reg.name], reg.format.fraction_bits, what)
        nodes.append(words)
    return nodes


def _encode(value, fraction_bits, what):
    return int(QFormat(WORD_WIDTH - 1 - fraction_bits, fraction_bits, "").encode(value, what)) \
        if fraction_bits < WORD_WIDTH else _encode_wide(value, fraction_bits, what)


def _encode_wide(value, fraction_bits, what):
    # Formats with all 32 bits fractional (and beyond): |value| < 2**(31 - fraction_bits).
    word = math.floor(value * 2.0 ** fraction_bits + 0.5)
    if not -(1 << (WORD_WIDTH - 1)) <= word < (1 << (WORD_WIDTH - 1)):
        raise FixedPointRangeError(f"{what} = {value!r} does not fit a word with "
                                   f"{fraction_bits} fractional bits")
    return int(word)


def encode_base_motion(robot, fmt=None, base_motion=None):
    """Return node 1's forward-mailbox words: the base motion, in DH frame 0.

    Parameters
    ----------
    robot : Robot
        The robot; its gravity and base transform give ``p_ddot_0 = -g`` in frame 0.
    fmt : QFormat
        Word format.
    base_motion : tuple of array_like, optional
        ``(omega_0, omega_dot_0, p_ddot_0)``, frame 0 (rad/s, rad/s^2, m/s^2, ``p_ddot_0``
        including ``-g``); default a fixed base.

    Returns
    -------
    dict
        ``{"omega_in_x": word, ...}`` for the 9 forward-mailbox registers.
    """
    if base_motion is None:
        base_motion = (np.zeros(3), np.zeros(3), -robot.gravity_base)
    rmap = microprogram(fmt).registers
    words = {}
    for quantity, vector in zip(("omega", "omega_dot", "p_ddot"), base_motion):
        for c, value in zip("xyz", np.asarray(vector, dtype=float)):
            name = f"{quantity}_in_{c}"
            words[name] = int(rmap.encode(name, value, f"base {quantity} {c}"))
    return words


def _dot(regs, program, op, batch_shape):
    aligns, shift, wraps = program.compile_dot(op)
    high = np.zeros(batch_shape, dtype=np.int64)
    low = np.zeros(batch_shape, dtype=np.int64)
    for term, align in zip(op.terms, aligns):
        a, b = regs[term.a], regs[term.b]
        value = a * b if term.kind == "mul" else a + b
        if term.negate:
            value = -value
        if align >= shift:
            high = high + (value << (align - shift))
        else:
            drop = shift - align
            high = high + (value >> drop)
            low = low + ((value & ((1 << drop) - 1)) << align)
    if shift:
        result = high + ((low + (1 << (shift - 1))) >> shift)
    elif any(term.kind == "mul" for term in op.terms):
        # No shift: products of two words (up to 2**62) would overflow int64 when summed, so
        # they are carried as 2**32 * high + low; a high part beyond 2**29 is far outside the
        # word either way and is clamped before it is recombined (saturate flags it).
        high = np.zeros(batch_shape, dtype=np.int64)
        low = np.zeros(batch_shape, dtype=np.int64)
        for term, align in zip(op.terms, aligns):
            a, b = regs[term.a], regs[term.b]
            value = (a * b if term.kind == "mul" else a + b) << align
            if term.negate:
                value = -value
            high = high + (value >> 32)
            low = low + (value & 0xFFFFFFFF)
        result = (np.clip(high, -(1 << 29), 1 << 29) << 32) + low
    else:
        result = high + low
    if wraps:
        return wrap(result), np.zeros(batch_shape, dtype=bool)
    return saturate(result)


def run_segment(regs, segment, fmt=None):
    """Interpret one segment of the microprogram on a node's registers, in place.

    Parameters
    ----------
    regs : dict of str to numpy.ndarray of int64
        The node's registers by name, each of the batch shape; results are added to it.
    segment : str
        One of ``"joint"``, ``"forward"``, ``"local"``, ``"distal"``.
    fmt : QFormat
        Word format.

    Returns
    -------
    numpy.ndarray of bool
        Where any result of this segment saturated (batch shape).
    """
    program = microprogram(fmt)
    batch_shape = np.shape(regs["q"])
    overflow = np.zeros(batch_shape, dtype=bool)
    for op in program.segments[segment].ops:
        if isinstance(op, Dot):
            regs[op.dst], flag = _dot(regs, program, op, batch_shape)
            overflow |= flag
        elif isinstance(op, Lookup):
            for name, value in zip(op.dst, SINE_TABLE.lookup(regs[op.src])):
                regs[name] = np.asarray(value, dtype=np.int64)
        elif isinstance(op, Atan):
            regs[op.dst[0]] = CORDIC.atan(regs[op.src])
    return overflow


@dataclass(frozen=True)
class FixedResult:
    """Result of :func:`rnea_fixed`.

    Attributes
    ----------
    tau : numpy.ndarray, shape (..., n)
        Joint torques, N·m (decoded words).
    tau_words : numpy.ndarray of int64, shape (..., n)
        The raw ``tau`` words.
    overflow : numpy.ndarray of bool, shape (..., n)
        Per-node sticky overflow flag: some result of that node saturated.
    base_wrench : numpy.ndarray, shape (..., 6)
        ``(f, mu)`` of node 1 in frame 0 (N, N·m), the wrench sent to the central PC.
    registers : list of dict or None
        Per node, every register's words (batch shape) when ``keep_registers`` was set.
    """

    tau: np.ndarray
    tau_words: np.ndarray
    overflow: np.ndarray
    base_wrench: np.ndarray
    registers: list | None = None


def _check_constants(constants, n, rmap):
    names = {reg.name for reg in rmap.of_kind("constant")}
    if not isinstance(constants, (list, tuple)) or len(constants) != n or not all(
            isinstance(words, dict) and set(words) == names for words in constants):
        raise ValueError(f"constants must be encode_robot(robot, fmt): {n} dicts of the "
                         f"{len(names)} constant registers, not {constants!r:.80}")


def _joint_words(fmt, value, name, batch_shape, n):
    rmap = microprogram(fmt).registers
    array = np.broadcast_to(np.asarray(value, dtype=float), batch_shape + (n,))
    words = np.empty(array.shape, dtype=np.int64)
    for i in range(n):
        words[..., i] = rmap.encode(name, array[..., i], f"node {i + 1} {name}")
    return words


def rnea_fixed(robot, q, qd, qdd, fmt=None, f_ext=None, base_motion=None,
               keep_registers=False, constants=None):
    """Compute the inverse dynamics with the node microprogram in fixed point, node by node.

    This is the golden model of the gateware (the fixed-point contract of docs/architecture.md):
    the forward segments run from node 1 to node n, each node's forward outputs becoming the
    next node's forward mailbox; the backward segments run from node n (zero incoming wrench) to node 1.

    Parameters
    ----------
    robot : Robot
        The robot (n revolute or prismatic joints), including friction when it has any.
    q, qd, qdd : array_like, shape (..., n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2); encoded in ``fmt``.
    fmt : QFormat
        Word format (default Q15.16).
    f_ext : array_like, shape (..., n, 6), optional
        External wrench per link, as for :func:`linkdyn.model.rnea`.
    base_motion : tuple, optional
        Base motion, see :func:`encode_base_motion`.
    keep_registers : bool
        Return every node's registers (for gateware tests).
    constants : list of dict, optional
        The robot's constant words, ``encode_robot(robot, fmt)``, encoded once by the caller;
        default: encoded on every call. For one state at a time see :class:`GoldenChain`.

    Returns
    -------
    FixedResult

    Raises
    ------
    FixedPointRangeError
        If an input or a constant does not fit ``fmt``; the message names the node and quantity.
    ValueError
        If an array has the wrong trailing dimension, or ``constants`` is not one dict of the
        constant registers per link.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    n = robot.n
    arrays = [np.asarray(v, dtype=float) for v in (q, qd, qdd)]
    for name, array in zip(("q", "qd", "qdd"), arrays):
        if array.ndim == 0 or array.shape[-1] != n:
            raise ValueError(f"{name} must have shape (..., {n}), not {array.shape}")
    batch_shape = np.broadcast_shapes(*(a.shape for a in arrays))[:-1]
    words = {name: _joint_words(fmt, a, name, batch_shape, n)
             for name, a in zip(("q", "qd", "qdd"), arrays)}
    if f_ext is not None:
        f_ext = np.asarray(f_ext, dtype=float)
        if f_ext.shape[-2:] != (n, 6):
            raise ValueError(f"f_ext must have shape (..., {n}, 6), not {f_ext.shape}")
        f_ext = np.broadcast_to(f_ext, batch_shape + (n, 6))
    program = microprogram(fmt)
    rmap = program.registers
    if constants is None:
        constants = encode_robot(robot, fmt)
    else:
        _check_constants(constants, n, rmap)
    base = encode_base_motion(robot, fmt, base_motion)

    nodes = []
    overflow = np.zeros(batch_shape + (n,), dtype=bool)
    previous = base
    for i in range(n):
        regs = {name: np.full(batch_shape, word, dtype=np.int64)
                for name, word in constants[i].items()}
        for name in ("q", "qd", "qdd"):
            regs[name] = words[name][..., i]
        for k, reg in enumerate(rmap.of_kind("input")[3:]):
            if f_ext is None:
                regs[reg.name] = np.zeros(batch_shape, dtype=np.int64)
            else:
                regs[reg.name] = rmap.encode(reg.name, f_ext[..., i, k],
                                             f"node {i + 1} {reg.name}")
        for source, target in rmap.forward_message:
            value = previous[target] if i == 0 else previous[source]
            regs[target] = np.broadcast_to(np.asarray(value, dtype=np.int64),
                                           batch_shape).copy()
        for segment in ("joint", "forward", "local"):
            overflow[..., i] |= run_segment(regs, segment, fmt)
        nodes.append(regs)
        previous = regs
    for i in reversed(range(n)):
        regs = nodes[i]
        for source, target in rmap.backward_message:
            if i == n - 1:
                regs[target] = np.zeros(batch_shape, dtype=np.int64)
            else:
                regs[target] = nodes[i + 1][source].copy()
        overflow[..., i] |= run_segment(regs, "distal", fmt)

    tau_words = np.stack([nodes[i]["tau"] for i in range(n)], axis=-1)
    base_wrench = rmap.decode_wrench(np.stack([nodes[0][f"{q}_out_{c}"] for q in ("f", "mu")
                                               for c in "xyz"], axis=-1))
    return FixedResult(rmap.decode("tau", tau_words), tau_words, overflow, base_wrench,
                       nodes if keep_registers else None)


@dataclass(frozen=True)
class ExecutorTables:
    """What a one-state executor of nodes needs from the microprogram (:func:`executor_tables`).

    Attributes
    ----------
    segments : dict
        The compiled segments (:func:`linkdyn.model.compiled.compiled_microprogram`).
    wrench_inputs : list of str
        The input registers after ``q, qd, qdd``: the external wrench, in register order.
    forward, backward : tuple of (str, str)
        The forward and backward messages, ``(source, receiver)`` register names.
    """

    segments: dict
    wrench_inputs: list
    forward: tuple
    backward: tuple


def executor_tables(fmt):
    """Return the :class:`ExecutorTables` of the microprogram for word format ``fmt``.

    Raises
    ------
    TypeError
        If ``fmt`` is not a QFormat.
    """
    fmt = node_formats(fmt)
    rmap = microprogram(fmt).registers
    return ExecutorTables(compiled_microprogram(fmt),
                          [reg.name for reg in rmap.of_kind("input")[3:]],
                          rmap.forward_message, rmap.backward_message)


class GoldenChain:
    """The golden model of one robot's node chain, for one state at a time (a control loop).

    Equal word for word to :func:`rnea_fixed` (``tau`` words, every register, the overflow
    flags; tests/model/test_golden_fast.py), and much faster for a single state: the robot's
    constants and the base motion are encoded once, here, and every segment runs as Python
    functions over integers compiled from the same microprogram
    (:mod:`linkdyn.model.compiled`), the sine table and CORDIC called once per update for all
    nodes. For batches of states use :func:`rnea_fixed`, which is vectorised.

    Parameters
    ----------
    robot : Robot
        The robot (a serial chain of n revolute or prismatic joints, no mounts), friction
        included when it has any.
    fmt : QFormat
        Word format (default Q15.16).
    base_motion : tuple, optional
        Base motion of every update, see :func:`encode_base_motion` (default a fixed base).

    Attributes
    ----------
    robot : Robot
    fmt : QFormat
    constants : list of dict
        ``encode_robot(robot, fmt)``, the words every node is loaded with.
    last_nodes : list of dict or None
        Every node's registers (plain ints) after the last :meth:`step`, the messages it
        received included (:class:`linkdyn.model.local_loop.LocalLoopChain` re-runs a node on
        them); ``None`` before the first.

    Raises
    ------
    TypeError
        If ``robot`` is not a Robot or ``fmt`` not a QFormat.
    FixedPointRangeError
        If a constant or the base motion does not fit its format.
    NotImplementedError
        If the robot is a tree or has a mount (see :func:`encode_robot`).
    """

    def __init__(self, robot, fmt=None, base_motion=None):
        tables = executor_tables(fmt)
        self.robot = robot
        self.fmt = node_formats(fmt)
        self.registers = microprogram(fmt).registers
        self.constants = encode_robot(robot, fmt)
        self._base = encode_base_motion(robot, fmt, base_motion)
        self._segments = tables.segments
        self._wrench_inputs = tables.wrench_inputs
        self._forward = tables.forward
        self._backward = tables.backward
        self._input_formats = {}
        self.last_nodes = None

    def _words(self, values, names, shape):
        """Encode inputs of ``shape`` in one call; on a bad value raise rnea_fixed's message."""
        arrays = [np.asarray(v, dtype=float) for v in values]
        for array, name in zip(arrays, names):
            if array.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, not {array.shape}")
        rmap = self.registers
        formats = self._input_formats.get(names)
        if formats is None:
            # One QFormat per input array (and wrench component): encoded in one call each.
            formats = self._input_formats[names] = (
                [rmap.qformat(name) for name in names] if len(shape) == 1
                else [[rmap.qformat(reg) for reg in self._wrench_inputs]])
        try:
            if len(shape) == 1:
                return [f.encode(array, "input").tolist() for f, array in zip(formats, arrays)]
            return [np.stack([f.encode(arrays[0][:, k], "input")
                              for k, f in enumerate(formats[0])], axis=-1).tolist()]
        except FixedPointRangeError:
            pass
        # Find the first offender in rnea_fixed's order and name it as rnea_fixed does.
        for array, name in zip(arrays, names):
            for i in range(self.robot.n):
                if len(shape) == 1:
                    rmap.encode(name, array[i], f"node {i + 1} {name}")
                else:
                    for k, reg in enumerate(self._wrench_inputs):
                        rmap.encode(reg, array[i, k], f"node {i + 1} {reg}")
        raise AssertionError("unreachable: the inputs were refused as a whole")

    def step(self, q, qd, qdd, f_ext=None, keep_registers=False):
        """Compute the inverse dynamics of one state, as :func:`rnea_fixed` does.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (n,)
            Joint positions (rad), velocities (rad/s), accelerations (rad/s^2).
        f_ext : array_like, shape (n, 6), optional
            External wrench per link (the wrench the link exerts, DH frame of the link, N and
            N·m about its origin), as for :func:`linkdyn.model.rnea`.
        keep_registers : bool
            Return every node's registers (0-d int64 arrays, as :func:`rnea_fixed` does).

        Returns
        -------
        FixedResult
            ``tau`` and ``tau_words`` of shape (n,), ``overflow`` (n,), ``base_wrench`` (6,).

        Raises
        ------
        ValueError
            If an input has the wrong shape.
        FixedPointRangeError
            If an input does not fit the format; the message names the node and quantity.
        """
        n = self.robot.n
        words = self._words((q, qd, qdd), ("q", "qd", "qdd"), (n,))
        wrench = None if f_ext is None else self._words((f_ext,), ("f_ext",), (n, 6))[0]
        nodes = []
        for i in range(n):
            regs = dict(self.constants[i])
            regs["q"], regs["qd"], regs["qdd"] = words[0][i], words[1][i], words[2][i]
            for k, name in enumerate(self._wrench_inputs):
                regs[name] = 0 if wrench is None else wrench[i][k]
            nodes.append(regs)
        segments = self._segments
        overflow = [False] * n
        if segments["joint"].lockstep:
            overflow = segments["joint"].run(nodes)
        forward_all = ("forward", "local") if segments["joint"].lockstep \
            else ("joint", "forward", "local")
        previous = self._base
        for i, regs in enumerate(nodes):
            for source, target in self._forward:
                regs[target] = previous[target] if i == 0 else previous[source]
            for name in forward_all:
                if segments[name].run([regs])[0]:
                    overflow[i] = True
            previous = regs
        distal = segments["distal"]
        for i in reversed(range(n)):
            regs = nodes[i]
            for source, target in self._backward:
                regs[target] = 0 if i == n - 1 else nodes[i + 1][source]
            if distal.run([regs])[0]:
                overflow[i] = True
        self.last_nodes = nodes
        rmap = self.registers
        tau_words = np.array([regs["tau"] for regs in nodes], dtype=np.int64)
        base_wrench = rmap.decode_wrench(np.array([nodes[0][f"{q}_out_{c}"] for q in ("f", "mu")
                                                   for c in "xyz"], dtype=np.int64))
        registers = None
        if keep_registers:
            registers = [{name: np.asarray(word, dtype=np.int64) for name, word in regs.items()}
                         for regs in nodes]
        return FixedResult(rmap.decode("tau", tau_words), tau_words,
                           np.array(overflow, dtype=bool),
                           base_wrench, registers)
