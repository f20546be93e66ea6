"""The LinkDyn node's work as a microprogram: register map, operations, schedule.

This is the single definition of *what* a node computes and in *which order*; the numpy golden
model (:mod:`linkdyn.model.golden`) interprets it and the gateware (:mod:`linkdyn.gateware.node`)
executes its schedule from a ROM, so both agree bit for bit.

Operations (one shared multiply-accumulate unit, paper Sect. 3.1, Fig. 6):

- :class:`Dot`: ``dst = round(sum_k ±term_k)``, one term per MAC cycle. A term is a product
  ``a * b`` (:func:`mul`) or a sum ``a + b`` (:func:`add`, the pre-adder path, for additions).
  Every register has a number format (:class:`RegisterFormat`); the compiler derives the left
  *alignment* of every term and the final right *shift* so that the accumulation is exact and the
  result is rounded once (:mod:`linkdyn.model.fixedpoint`). MATVEC, CROSS and DOT products of the
  paper are all written as such instructions, with the structural zeros (``z = (0, 0, 1)``, the
  zero of ``R``) left out.
- :class:`Lookup`: the sine/cosine table (:mod:`linkdyn.model.tables`) reads a phase word and
  latches the interpolation operands ``sin_base`` ... ``cos_fraction``.
- :class:`Atan`: the CORDIC unit reads ``k qd`` and latches ``atan`` (friction, eq. 20).

The program has four *segments*, run in this order on every update:

``joint``
    needs only the joint inputs: sin/cos of ``theta``, the rotation entries, friction, and the
    joint type's selections (``qd_revolute`` ... ``r_q_z``).

One program runs revolute and prismatic joints: the constant words ``revolute`` and
``prismatic`` (integers, 0 or 1) select, by exact products, the joint rate of ``omega`` or the
moving offset ``d``, the prismatic terms of ``p_ddot`` and the row of ``tau``; a revolute node's
words are those of a program without them (docs/trees.md, *Prismatic nodes*).
``forward``
    needs the proximal neighbour's ``omega, omega_dot, p_ddot`` (forward mailbox); its outputs go
    to the distal neighbour.
``local``
    backward terms that do not need the distal wrench; runs right after ``forward``.
``distal``
    needs the distal neighbour's wrench (backward mailbox); produces ``tau`` and the wrench for
    the proximal neighbour, already rotated into frame ``i-1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from functools import cached_property, lru_cache

from .fixedpoint import QFormat, WORD_WIDTH
from .tables import CORDIC, SINE_TABLE

__all__ = [
    "QUANTITIES", "quantity_of", "NodeFormats", "NODE_FORMATS", "node_formats", "rescale_word",
    "RegisterFormat", "Register", "RegisterMap", "Term", "mul", "add", "Dot", "Lookup", "Atan",
    "MacTiming", "MAC_TIMING", "Segment", "Slot", "Microprogram", "build_microprogram",
    "microprogram",
    "SEGMENTS", "IN_ORDER_SEGMENTS", "LATCHES", "BANKS", "BANK_COUNTS", "BANKED_KINDS",
]

#: Segment names in execution order.
SEGMENTS = ("joint", "forward", "local", "distal")

#: Segments whose ops issue in program order (each as soon as its operands are ready, NOPs
#: while they are not) instead of by the list scheduler's priority: ``distal``, whose order is
#: chosen for the chain's backward hop (see ``_program``).
IN_ORDER_SEGMENTS = ("distal",)

#: Register banks of a banked node (pipelined chain policy): bank 0 is the host-visible map;
#: bank ``b`` of a banked register is at its address plus ``b`` times
#: :attr:`RegisterMap.bank_stride`.
BANKS = 4

#: The bank counts a node may have: 1 (no banks, sequential policy), 2 or :data:`BANKS`.
BANK_COUNTS = (1, 2, BANKS)

#: Register kinds with one copy per bank in a banked node: everything a sample writes or the
#: program produces. Constants (one robot), the mailbox registers (``forward_in`` is node 1's
#: base motion, ``backward_in`` the last node's zero wrench; in a chain the other nodes read
#: their mailboxes, which have their own slots) and the latches are shared by the banks.
BANKED_KINDS = ("input", "forward_out", "backward_out", "output", "scratch")

#: Latched outputs of the sine/cosine table and the CORDIC unit, readable as operands.
LATCHES = ("sin_base", "sin_delta", "sin_fraction", "cos_base", "cos_delta", "cos_fraction",
           "atan")


#: The quantities of the node's registers, each with its own 32-bit fixed-point format
#: (:class:`NodeFormats`), with the registers they hold (by name, see :func:`quantity_of`).
QUANTITIES = {
    "q": "joint position q (rad; m for a prismatic joint)",
    "qd": "joint velocity qd (rad/s; m/s)",
    "qdd": "joint acceleration qdd (rad/s^2; m/s^2)",
    "wrench_ext": "external wrench f_ext, mu_ext (N, N·m)",
    "trig": "sin/cos of theta and alpha, rotation entries",
    "r": "link offset r = (a, d sin alpha, d cos alpha) (m)",
    "mass": "link mass m (kg)",
    "first_moment": "first moments m c (kg·m)",
    "inertia": "inertias I about origin i (kg·m^2)",
    "friction": "friction constants F_c, F_v, F_o, k",
    "omega": "angular velocity omega, omega_in, omega x r (u), omega x m c (w_mc), I omega (h)",
    "omega_dot": "angular acceleration omega_dot, omega_dot_in, v",
    "p_ddot": "linear acceleration p_ddot, p_ddot_in (incl. -g)",
    "force": "forces f, f_local, f_in, f_out (N)",
    "moment": "moments mu, mu_local, mu_in, mu_out (N·m)",
    "torque": "torques tau, tau_coulomb, tau_friction",
}

#: Registers whose format is fixed by the hardware (no quantity): the constant zero, the phase
#: path, the 0/1 joint-type words and ``k_qd``, the CORDIC's Q15.16 input.
_FIXED_REGISTERS = ("zero", "rate", "theta_offset", "phase", "revolute", "prismatic", "k_qd")

#: The joint type's selections of the microprogram and the quantity each copies.
SELECTIONS = {"qd_revolute": "qd", "qdd_revolute": "qdd", "q_prismatic": "q",
              "qd2_prismatic": "qd", "qdd_prismatic": "qdd", "r_q_y": "r", "r_q_z": "r"}


def quantity_of(name):
    """Return the quantity of :data:`QUANTITIES` a register belongs to.

    Parameters
    ----------
    name : str
        Register name, e.g. ``"omega_in_x"``.

    Returns
    -------
    str or None
        The quantity, or ``None`` for the registers whose format is fixed by the hardware
        (zero, phase, rate, joint type, table and CORDIC latches).

    Raises
    ------
    ValueError
        If the name belongs to no quantity.
    """
    if name in _FIXED_REGISTERS or name in LATCHES:
        return None
    if name in ("q", "qd", "qdd"):
        return name
    if name in SELECTIONS:
        return SELECTIONS[name]
    if name.startswith(("f_ext", "mu_ext")):
        return "wrench_ext"
    if name in ("sin_theta", "cos_theta", "sin_alpha", "cos_alpha", "ct_ca", "st_ca", "ct_sa",
                "st_sa"):
        return "trig"
    if name.startswith("r_"):
        return "r"
    if name == "m":
        return "mass"
    if name.startswith("mc_"):
        return "first_moment"
    if name.startswith("I_"):
        return "inertia"
    if name in ("F_c", "F_v", "F_o", "k_friction"):
        return "friction"
    if name.startswith("omega_dot") or name.startswith("v_"):
        return "omega_dot"
    if name.startswith(("omega", "u_", "w_mc_", "h_")):
        return "omega"
    if name.startswith("p_ddot"):
        return "p_ddot"
    if name.startswith("f_"):
        return "force"
    if name.startswith("mu_"):
        return "moment"
    if name in ("tau", "tau_coulomb", "tau_friction"):
        return "torque"
    raise ValueError(f"register {name!r} has no quantity")


@dataclass(frozen=True)
class NodeFormats:
    """The number format of every quantity of a node: fractional bits of its 32-bit word.

    Each field is the number of fractional bits of the quantity of :data:`QUANTITIES` of the
    same name (a register of ``b`` fractional bits holds ``[-2**(31-b), 2**(31-b))`` in steps
    of ``2**-b``). :data:`NODE_FORMATS` are the node's formats, chosen from the certified error
    budget (:mod:`linkdyn.model.certify`, docs/certificate.md); :meth:`uniform` gives every
    quantity but ``trig`` and ``r`` (always Q1.30) one format, as the nodes had before (Q15.16).

    Parameters
    ----------
    q, qd, qdd, wrench_ext, trig, r, mass, first_moment, inertia, friction, omega, omega_dot,
    p_ddot, force, moment, torque : int
        Fractional bits, 0 ..  31.
    name : str
        Name in reports (default from the bits).

    Raises
    ------
    ValueError
        If a count is not an integer in 0 .. 31, or ``friction`` and ``torque`` differ (the
        program adds ``tau_coulomb + F_o`` in the MAC's pre-adder, which takes one format).
    """

    q: int
    qd: int
    qdd: int
    wrench_ext: int
    mass: int
    first_moment: int
    inertia: int
    friction: int
    omega: int
    omega_dot: int
    p_ddot: int
    force: int
    moment: int
    torque: int
    trig: int = WORD_WIDTH - 2
    r: int = WORD_WIDTH - 2
    name: str = ""

    def __post_init__(self):
        for quantity in QUANTITIES:
            value = getattr(self, quantity)
            if not isinstance(value, int) or isinstance(value, bool) \
                    or not 0 <= value <= WORD_WIDTH - 1:
                raise ValueError(f"fractional bits of {quantity!r} must be an integer in "
                                 f"0..{WORD_WIDTH - 1}, not {value!r}")
        if self.friction != self.torque:
            raise ValueError(f"friction and torque must have the same fractional bits (the "
                             f"pre-adder sums tau_coulomb + F_o), not {self.friction} and "
                             f"{self.torque}")
        if not self.name:
            object.__setattr__(self, "name", "per-quantity " + ",".join(
                str(getattr(self, quantity)) for quantity in QUANTITIES))

    @classmethod
    def uniform(cls, fmt):
        """Return the formats with every quantity in ``fmt`` but ``trig`` and ``r`` (Q1.30).

        Raises
        ------
        TypeError
            If ``fmt`` is not a QFormat.
        ValueError
            If ``fmt`` is not :data:`WORD_WIDTH` bits wide.
        """
        if not isinstance(fmt, QFormat):
            raise TypeError(f"fmt must be a QFormat, not {fmt!r}")
        if fmt.width != WORD_WIDTH:
            raise ValueError(f"fmt must be a {WORD_WIDTH}-bit format, not {fmt.name} "
                             f"({fmt.width} bits)")
        bits = {q: fmt.fraction_bits for q in QUANTITIES if q not in ("trig", "r")}
        return cls(**bits, name=fmt.name)

    @property
    def width(self):
        """int: the word width, :data:`WORD_WIDTH`."""
        return WORD_WIDTH

    @property
    def bits(self):
        """dict of str to int: fractional bits per quantity, in :data:`QUANTITIES` order."""
        return {quantity: getattr(self, quantity) for quantity in QUANTITIES}

    def qformat(self, quantity):
        """Return the :class:`~linkdyn.model.fixedpoint.QFormat` of a quantity.

        Raises
        ------
        ValueError
            If ``quantity`` is not one of :data:`QUANTITIES`.
        """
        if quantity not in QUANTITIES:
            raise ValueError(f"unknown quantity {quantity!r}; known: {tuple(QUANTITIES)!r}")
        bits = getattr(self, quantity)
        return QFormat(WORD_WIDTH - 1 - bits, bits)

    def with_bits(self, **bits):
        """Return a copy with some quantities' fractional bits replaced (name recomputed)."""
        values = {**self.bits, **bits}
        return NodeFormats(**values)


#: The node's formats (issue 17), chosen from the certified error budget of UR5, UR10 and
#: Panda in the default box with one or two bits of headroom over the certified ranges, the
#: inputs wider (docs/certificate.md, *Formats per quantity*): ``q`` Q5.26 (±32 rad, or m),
#: ``qd`` Q5.26, ``qdd`` Q9.22, the external wrench Q11.20 (±2048 N: a tool pushes with
#: what the arm's torques allow, 743 N for the UR5 in the contact experiment,
#: docs/experiments.md; 19 bits would need a term alignment the MAC does not have), mass
#: Q6.25, first moments and inertias Q4.27, ``omega`` Q6.25, ``omega_dot`` and ``p_ddot``
#: Q10.21, forces, moments and torques (and friction) Q12.19; sines, cosines and ``r`` Q1.30.
NODE_FORMATS = NodeFormats(q=26, qd=26, qdd=22, wrench_ext=20, mass=25, first_moment=27,
                           inertia=27, friction=19, omega=25, omega_dot=21, p_ddot=21,
                           force=19, moment=19, torque=19, name="LinkDyn formats")


def rescale_word(word, from_bits, to_bits):
    """Convert a 32-bit word between fractional bit counts, as the controlled chain does.

    ``to_bits > from_bits``: a left shift that saturates to the 32-bit range (a value beyond
    the finer format is clamped); ``to_bits < from_bits``: a right shift that rounds half up
    (:func:`~linkdyn.model.fixedpoint.round_shift`, never out of range). The controlled chain
    (:mod:`linkdyn.gateware.controlled_chain`, :mod:`linkdyn.sim.controlled_chain_model`) hands
    the joint controllers' Q15.16 ``q, qd, qdd`` to the nodes' registers and the nodes' ``tau``
    back with it.

    Parameters
    ----------
    word : int
        Signed word.
    from_bits, to_bits : int
        Fractional bits of ``word`` and of the result, 0 .. 31.

    Returns
    -------
    int
        The signed result word.
    """
    word = int(word)
    if to_bits >= from_bits:
        shifted = word << (to_bits - from_bits)
        return max(-(1 << (WORD_WIDTH - 1)), min((1 << (WORD_WIDTH - 1)) - 1, shifted))
    shift = from_bits - to_bits
    return (word + (1 << (shift - 1))) >> shift


def node_formats(fmt=None):
    """Return the :class:`NodeFormats` of ``fmt``.

    Parameters
    ----------
    fmt : NodeFormats, QFormat or None
        ``None``: :data:`NODE_FORMATS`; a QFormat: :meth:`NodeFormats.uniform`.

    Raises
    ------
    TypeError
        If ``fmt`` is neither.
    ValueError
        If a QFormat is not :data:`WORD_WIDTH` bits wide.
    """
    if fmt is None:
        return NODE_FORMATS
    if isinstance(fmt, NodeFormats):
        return fmt
    if isinstance(fmt, QFormat):
        return NodeFormats.uniform(fmt)
    raise TypeError(f"fmt must be NodeFormats or a QFormat, not {fmt!r}")


@dataclass(frozen=True)
class RegisterFormat:
    """The number format class of a register: how many of its word's bits are fractional.

    Parameters
    ----------
    name : str
        a quantity of :data:`QUANTITIES` (its fractional bits from :class:`NodeFormats`:
        ``"q"``, ``"omega"``, ``"trig"`` (sines, cosines, rotation entries), ``"r"`` (the link
        offset in m, which must be below 2 m) ...), ``"count"`` (integers: the joint type, the
        constant zero), ``"phase"`` (turns, ``2**-32`` turn per LSB), ``"rate"``
        (``1/(2 pi)`` turn per rad, 32 fractional bits), ``"entry"`` and ``"fraction"`` (sine
        table operands), ``"atan"`` (Q1.30).
    fraction_bits : int
        Fractional bits of the word.
    wraps : bool
        Whether results in this format wrap (phases) instead of saturating.
    """

    name: str
    fraction_bits: int
    wraps: bool = False


@dataclass(frozen=True)
class Register:
    """One named register of a node.

    Attributes
    ----------
    name : str
        Register name, e.g. ``"omega_x"``.
    address : int or None
        Word address in the node's register file (``None`` for latches, which live outside it).
    kind : str
        ``"constant"`` (robot constants, loaded once), ``"input"`` (joint state and external
        wrench, written per update), ``"forward_in"`` / ``"backward_in"`` (neighbour mailboxes),
        ``"forward_out"`` / ``"backward_out"`` (what the node sends), ``"output"`` (``tau``),
        ``"scratch"`` or ``"latch"``.
    format : RegisterFormat
        Its number format.
    unit : str
        SI unit of the value.
    doc : str
        One line of documentation (frame, meaning).
    """

    name: str
    address: int | None
    kind: str
    format: RegisterFormat
    unit: str
    doc: str


@dataclass(frozen=True)
class Term:
    """One MAC cycle of a :class:`Dot`: ``±(a * b)`` (``kind="mul"``) or ``±(a + b)`` (``"add"``)."""

    a: str
    b: str
    kind: str = "mul"
    negate: bool = False

    def __neg__(self):
        return Term(self.a, self.b, self.kind, not self.negate)


def mul(a, b):
    """Return the product term ``a * b``."""
    return Term(a, b, "mul")


def add(a, b="zero"):
    """Return the sum term ``a + b`` (``b`` defaults to the constant-zero register)."""
    return Term(a, b, "add")


@dataclass(frozen=True)
class Dot:
    """``dst = round(sum of terms)``: one instruction of the shared MAC (see module docstring)."""

    dst: str
    terms: tuple

    def __post_init__(self):
        object.__setattr__(self, "terms", tuple(self.terms))
        if not self.terms:
            raise ValueError(f"Dot into {self.dst!r} has no terms")

    @property
    def sources(self):
        """tuple of str: the registers read, in issue order."""
        return tuple(name for term in self.terms for name in (term.a, term.b))


@dataclass(frozen=True)
class Lookup:
    """Read the phase register ``src`` and latch the sine/cosine interpolation operands."""

    src: str
    dst: tuple = ("sin_base", "sin_delta", "sin_fraction", "cos_base", "cos_delta",
                  "cos_fraction")

    @property
    def sources(self):
        return (self.src,)


@dataclass(frozen=True)
class Atan:
    """Read the word register ``src`` and latch ``atan(src)`` (CORDIC, Q1.30)."""

    src: str
    dst: tuple = ("atan",)

    @property
    def sources(self):
        return (self.src,)


@dataclass(frozen=True)
class MacTiming:
    """Pipeline timing of the node, in clock cycles; the gateware implements exactly this.

    The default is the ECP5 / Spartan-6 pipeline of :mod:`linkdyn.gateware.node` and
    :mod:`linkdyn.gateware.mac` (100 MHz on an ECP5-6): every block-RAM output and every
    multiplier output is registered before logic uses it.

    Attributes
    ----------
    read : int
        Issue of a term to its operands entering the MAC: the synchronous block-RAM read, then
        a register behind the block RAM (a DP16KD's clock-to-output leaves no time for logic).
    multiply : int
        Multiplier stages: the operand register (with the pre-adder of sum terms), the partial
        products of the 18 x 18 multiplier blocks, their sum (the product register).
    accumulate : int
        Accumulator register.
    round : int
        Rounding and saturation register.
    write : int
        Register-file write; a term issued ``latency`` cycles after the last term of a Dot can
        read its result.
    lookup : int
        Issue of a :class:`Lookup` to its latches being readable by an issued term.
    atan : int
        Issue of an :class:`Atan` to its latch being readable by an issued term.
    """

    read: int = 2
    multiply: int = 3
    accumulate: int = 1
    round: int = 1
    write: int = 1
    lookup: int = 5
    atan: int = 2 * CORDIC.iterations + 3

    @property
    def latency(self):
        """int: cycles from issuing the last term of a Dot to a dependent term's issue."""
        return self.read + self.multiply + self.accumulate + self.round + self.write


#: The default pipeline timing.
MAC_TIMING = MacTiming()


@dataclass(frozen=True)
class Slot:
    """One issue cycle of the schedule.

    Attributes
    ----------
    op : str
        ``"term"``, ``"lookup"``, ``"atan"`` or ``"nop"``.
    a, b : int
        Operand addresses (register file or latch, see :meth:`RegisterMap.operand_address`).
    kind : str
        ``"mul"`` or ``"add"`` for terms.
    negate : bool
        Subtract the term.
    align : int
        Left shift of the term before accumulation.
    first, last : bool
        First / last term of its Dot (clear / write the accumulator).
    dst : int
        Destination address (on the last term).
    shift : int
        Final right shift of the Dot (on the last term).
    wraps : bool
        Wrap instead of saturate (phase results), on the last term.
    """

    op: str
    a: int = 0
    b: int = 0
    kind: str = "mul"
    negate: bool = False
    align: int = 0
    first: bool = False
    last: bool = False
    dst: int = 0
    shift: int = 0
    wraps: bool = False


@dataclass(frozen=True)
class Segment:
    """A scheduled segment of the microprogram.

    Attributes
    ----------
    name : str
        One of :data:`SEGMENTS`.
    ops : tuple
        Operations in program order (the golden model's order).
    slots : tuple of Slot
        One issue per clock cycle, NOPs included.
    cycles : int
        Cycles from the first issue until every result is written (the segment's duration).
    """

    name: str
    ops: tuple
    slots: tuple
    cycles: int

    @property
    def mac_terms(self):
        """int: MAC operations (terms) of the segment."""
        return sum(len(op.terms) for op in self.ops if isinstance(op, Dot))

    @property
    def nops(self):
        """int: issue cycles without work (pipeline bubbles)."""
        return sum(1 for slot in self.slots if slot.op == "nop")


class RegisterMap:
    """The register map of a node: names, addresses, formats (the one definition).

    A node of a pipelined chain keeps several *banks* of the registers of
    :data:`BANKED_KINDS` (:meth:`bank_address`): bank 0 is this map, bank ``b`` of a banked
    register lies ``b *`` :attr:`bank_stride` words above it; constants, mailbox registers and
    latches are shared by the banks. The map itself (:attr:`size`, the host-visible addresses)
    does not depend on the banks.

    Parameters
    ----------
    fmt : NodeFormats, QFormat or None
        The formats of the node's quantities (:func:`node_formats`: default
        :data:`NODE_FORMATS`, a QFormat for one format everywhere); every register has its
        quantity's format (:func:`quantity_of`) or one the hardware fixes.

    Raises
    ------
    TypeError, ValueError
        From :func:`node_formats`.
    """

    def __init__(self, fmt=None):
        self.fmt = node_formats(fmt)
        self.formats = {
            **{quantity: RegisterFormat(quantity, bits)
               for quantity, bits in self.fmt.bits.items()},
            "phase": RegisterFormat("phase", 32, wraps=True),
            "rate": RegisterFormat("rate", 32),
            "entry": RegisterFormat("entry", SINE_TABLE.entry_fraction_bits),
            "fraction": RegisterFormat("fraction", SINE_TABLE.fraction_bits),
            "atan": RegisterFormat("atan", 30),
            "count": RegisterFormat("count", 0),
            "cordic": RegisterFormat("cordic", 16),
        }
        self._registers = {}
        address = 0

        def define(kind, name, form, unit, doc):
            nonlocal address
            form = self._form(name, form)
            self._registers[name] = Register(name, address, kind, self.formats[form], unit, doc)
            address += 1

        xyz = "xyz"
        # Constants: loaded once per robot (encode_robot), never written by the program.
        define("constant", "zero", "count", "", "constant 0")
        define("constant", "rate", "rate", "turn/rad",
               "revolute / (2 pi): converts rad to turns (0 for a prismatic joint)")
        define("constant", "theta_offset", "phase", "turn", "DH joint angle offset")
        define("constant", "sin_alpha", "trig", "", "sin of the DH twist alpha_i")
        define("constant", "cos_alpha", "trig", "", "cos of the DH twist alpha_i")
        for c in xyz:
            # Q1.30 like the rotation entries, so r x f needs no extra alignment: |r| < 2 m.
            define("constant", f"r_{c}", "trig", "m",
                   f"r^i_(i-1,i) {c}: (a, d sin alpha, d cos alpha), |r| < 2 m")
        define("constant", "m", "word", "kg", "link mass (eq. 11)")
        for c in xyz:
            define("constant", f"mc_{c}", "word", "kg m", f"first moment m c_{c}, frame i")
        for name in ("I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz"):
            define("constant", name, "word", "kg m^2", f"inertia {name[2:]} about origin i, frame i")
        define("constant", "F_c", "word", "N m", "Coulomb friction level (eq. 20)")
        define("constant", "F_v", "word", "N m s/rad", "viscous friction (eq. 20)")
        define("constant", "F_o", "word", "N m", "torque offset (eq. 20)")
        define("constant", "k_friction", "word", "s/rad", "atan steepness k (eq. 20)")
        # The joint type, selected at run time (docs/trees.md, *Prismatic nodes*): a revolute
        # node has revolute = 1, prismatic = 0, a prismatic node the reverse.
        define("constant", "revolute", "count", "",
               "1 for a revolute joint (q turns theta), else 0")
        define("constant", "prismatic", "count", "",
               "1 for a prismatic joint (q moves d), else 0")
        self.constant_count = address
        # Inputs: written per update.
        define("input", "q", "word", "rad", "joint position")
        define("input", "qd", "word", "rad/s", "joint velocity")
        define("input", "qdd", "word", "rad/s^2", "joint acceleration")
        for c in xyz:
            define("input", f"f_ext_{c}", "word", "N", f"external force {c} link i exerts, frame i")
        for c in xyz:
            define("input", f"mu_ext_{c}", "word", "N m",
                   f"external moment {c} link i exerts, about origin i, frame i")
        # Forward mailbox: from the proximal neighbour (node 1: the base motion), frame i-1.
        for quantity, unit in (("omega", "rad/s"), ("omega_dot", "rad/s^2"),
                               ("p_ddot", "m/s^2")):
            for c in xyz:
                define("forward_in", f"{quantity}_in_{c}", "word", unit,
                       f"{quantity} {c} of node i-1, frame i-1")
        # Backward mailbox: from the distal neighbour (last node: zero), frame i.
        for quantity, unit in (("f", "N"), ("mu", "N m")):
            for c in xyz:
                define("backward_in", f"{quantity}_in_{c}", "word", unit,
                       f"{quantity} {c} of node i+1, rotated into frame i")
        # Forward outputs: sent to the distal neighbour.
        for quantity, unit in (("omega", "rad/s"), ("omega_dot", "rad/s^2"),
                               ("p_ddot", "m/s^2")):
            for c in xyz:
                define("forward_out", f"{quantity}_{c}", "word", unit,
                       f"{quantity} {c} of link i, frame i (p_ddot includes -g)")
        # Backward outputs: sent to the proximal neighbour (node 1: the base wrench).
        for quantity, unit in (("f", "N"), ("mu", "N m")):
            for c in xyz:
                define("backward_out", f"{quantity}_out_{c}", "word", unit,
                       f"{quantity} {c} of link i, about origin i-1, frame i-1")
        define("output", "tau", "word", "N m", "joint torque incl. friction (eqs. 7, 20)")
        self._next_address = address
        self.latch_base = None

    def define_scratch(self, name, form="word", unit="", doc="scratch"):
        """Add a scratch register (used by :func:`build_microprogram`)."""
        if name in self._registers:
            raise ValueError(f"register {name!r} is defined twice")
        self._registers[name] = Register(name, self._next_address, "scratch",
                                         self.formats[self._form(name, form)], unit, doc)
        self._next_address += 1
        return name

    @staticmethod
    def _form(name, form):
        """The format class of a register: its quantity's (:func:`quantity_of`), or ``form``
        for the registers whose format the hardware fixes."""
        if form in ("word", "trig"):
            quantity = quantity_of(name)
            if quantity is None:
                raise ValueError(f"register {name!r} has no quantity")
            return quantity
        return form

    def qformat(self, name):
        """Return the :class:`~linkdyn.model.fixedpoint.QFormat` register ``name`` is encoded in.

        The host encodes and decodes every register in its own format with this
        (``rmap.qformat("q").encode(q, "node 1 q")``).

        Raises
        ------
        KeyError
            If there is no such register.
        ValueError
            If the register's word has no integer part to speak of (phase and rate words,
            32 fractional bits: they are not host values).
        """
        bits = self[name].format.fraction_bits
        if bits > WORD_WIDTH - 1:
            raise ValueError(f"register {name!r} ({self[name].format.name}) has "
                             f"{bits} fractional bits: not a host value")
        return QFormat(WORD_WIDTH - 1 - bits, bits)

    def encode(self, name, value, what=None):
        """Encode host values as words of register ``name``, in its format (half up).

        Parameters
        ----------
        name : str
            Register name (``"q"``, ``"f_ext_x"``, ``"omega_in_z"`` ...).
        value : float or array_like
            Values in the register's unit.
        what : str, optional
            How the error message names the value (default the register's name).

        Returns
        -------
        numpy.ndarray of int64

        Raises
        ------
        FixedPointRangeError
            If a value is not finite or does not fit; the message names ``what`` (the register)
            and the format with its range.
        """
        return self.qformat(name).encode(value, name if what is None else what)

    def decode(self, name, words):
        """Return the float values of words of register ``name`` (its format)."""
        return self.qformat(name).decode(words)

    def decode_wrench(self, words):
        """Decode ``(..., 6)`` words ``f_out_xyz, mu_out_xyz`` (N, N·m) in their formats."""
        words = np.asarray(words)
        return np.concatenate([self.decode("f_out_x", words[..., :3]),
                               self.decode("mu_out_x", words[..., 3:])], axis=-1)

    def define_latches(self):
        """Add the latch registers (after the scratch registers)."""
        forms = {"sin_base": "entry", "sin_delta": "entry", "sin_fraction": "fraction",
                 "cos_base": "entry", "cos_delta": "entry", "cos_fraction": "fraction",
                 "atan": "atan"}
        self.latch_base = self.size
        for index, name in enumerate(LATCHES):
            self._registers[name] = Register(name, None, "latch", self.formats[forms[name]],
                                             "", "table / CORDIC latch")

    @property
    def size(self):
        """int: number of register-file words in use."""
        return self._next_address

    @property
    def depth(self):
        """int: register-file depth, the next power of two above :attr:`size` plus latches."""
        return 1 << max(1, math.ceil(math.log2(self.size + len(LATCHES))))

    def __getitem__(self, name):
        try:
            return self._registers[name]
        except KeyError:
            raise KeyError(f"no register named {name!r}") from None

    def __contains__(self, name):
        return name in self._registers

    def __iter__(self):
        return iter(self._registers.values())

    def of_kind(self, kind):
        """Return the registers of one kind, in address order."""
        return [reg for reg in self if reg.kind == kind]

    @property
    def forward_message(self):
        """list of (str, str): the forward mailbox message, ``(sender register, receiver
        register)`` word by word: node i's ``omega, omega_dot, p_ddot`` (frame i) become node
        i+1's ``*_in`` registers. 9 words in the node's word format."""
        return [(reg.name.replace("_in_", "_"), reg.name) for reg in self.of_kind("forward_in")]

    @property
    def backward_message(self):
        """list of (str, str): the backward mailbox message, ``(sender register, receiver
        register)``: node i+1's ``f_out, mu_out`` (already rotated into frame i) become node
        i's ``f_in, mu_in``. 6 words in the node's word format."""
        return [(reg.name.replace("_in_", "_out_"), reg.name)
                for reg in self.of_kind("backward_in")]

    # -- banks (pipelined chain policy) ------------------------------------------------------

    @property
    def bank_stride(self):
        """int: address distance between the two copies of a banked register (:attr:`depth`).

        Bank ``b`` of a banked register at address ``a`` lives at ``a + b * bank_stride``, after
        every address of the unbanked map, so bank 0 is the host-visible map unchanged.
        """
        return self.depth

    def banked_depth(self, banks=BANKS):
        """Return the register-file depth of a node with ``banks`` banks (``banks * depth``)."""
        return self.depth * banks

    def banked(self, name):
        """Return whether register ``name`` has one copy per bank (:data:`BANKED_KINDS`)."""
        return self[name].kind in BANKED_KINDS

    def bank_address(self, name, bank):
        """Return the register-file address of bank ``bank`` of register ``name``.

        Raises
        ------
        ValueError
            If ``bank`` is negative, or the register is a latch.
        """
        if not isinstance(bank, int) or bank < 0:
            raise ValueError(f"bank must be a non-negative integer, not {bank!r}")
        reg = self[name]
        if reg.address is None:
            raise ValueError(f"{name!r} is a latch, not a register-file word")
        return reg.address + (bank * self.bank_stride if self.banked(name) else 0)

    @property
    def banked_ranges(self):
        """list of (int, int): the ``[start, stop)`` address ranges of the banked registers."""
        ranges = []
        for reg in sorted((r for r in self if r.address is not None), key=lambda r: r.address):
            if reg.kind not in BANKED_KINDS:
                continue
            if ranges and ranges[-1][1] == reg.address:
                ranges[-1] = (ranges[-1][0], reg.address + 1)
            else:
                ranges.append((reg.address, reg.address + 1))
        return ranges

    def operand_address(self, name):
        """Return the operand address of a register: its RAM address, or for a latch
        ``depth - len(LATCHES) + index`` (the top of the address space)."""
        reg = self[name]
        if reg.kind == "latch":
            return self.depth - len(LATCHES) + LATCHES.index(name)
        return reg.address


def _cross(dst, a, b, rmap):
    """Dots of ``dst = a x b`` for 3-vectors of register names (both word format)."""
    return [
        Dot(dst[0], [mul(a[1], b[2]), -mul(a[2], b[1])]),
        Dot(dst[1], [mul(a[2], b[0]), -mul(a[0], b[2])]),
        Dot(dst[2], [mul(a[0], b[1]), -mul(a[1], b[0])]),
    ]


def _cross_terms(a, b):
    """Terms of ``a x b`` per component."""
    return ([mul(a[1], b[2]), -mul(a[2], b[1])],
            [mul(a[2], b[0]), -mul(a[0], b[2])],
            [mul(a[0], b[1]), -mul(a[1], b[0])])


def _rotate_transpose_terms(v, last_z=()):
    """Terms of ``R^T v`` with ``R = Rz(theta) Rx(alpha)`` (entries in scratch registers)."""
    return ([mul("cos_theta", v[0]), mul("sin_theta", v[1])],
            [-mul("st_ca", v[0]), mul("ct_ca", v[1]), mul("sin_alpha", v[2])],
            [mul("st_sa", v[0]), -mul("ct_sa", v[1]), mul("cos_alpha", v[2])])


def _rotate_terms(v):
    """Terms of ``R v`` (frame i to frame i-1), skipping the zero entry ``R[2][0]``."""
    return ([mul("cos_theta", v[0]), -mul("st_ca", v[1]), mul("st_sa", v[2])],
            [mul("sin_theta", v[0]), mul("ct_ca", v[1]), -mul("ct_sa", v[2])],
            [mul("sin_alpha", v[1]), mul("cos_alpha", v[2])])


def _vec(prefix):
    return tuple(f"{prefix}_{c}" for c in "xyz")


def _program(rmap):
    scratch = rmap.define_scratch
    scratch("phase", "phase", "turn", "theta = q + offset in turns")
    scratch("sin_theta", "trig", "", "sin theta")
    scratch("cos_theta", "trig", "", "cos theta")
    for name in ("ct_ca", "st_ca", "ct_sa", "st_sa"):
        scratch(name, "trig", "", f"rotation entry {name}")
    scratch("k_qd", "cordic", "", "k qd, the atan argument (Q15.16, the CORDIC's input)")
    # The joint type's selections (docs/trees.md, *Prismatic nodes*): exact products with the
    # 0/1 words revolute and prismatic, so a revolute node's words are those of a node without
    # them.
    scratch("qd_revolute", "word", "rad/s", "revolute qd: the joint rate in omega")
    scratch("qdd_revolute", "word", "rad/s^2", "revolute qdd: the joint acceleration in omega_dot")
    scratch("q_prismatic", "word", "m", "prismatic q: the joint's move along z_(i-1)")
    scratch("qd2_prismatic", "word", "m/s", "2 prismatic qd: twice the joint's speed")
    scratch("qdd_prismatic", "word", "m/s^2", "prismatic qdd: the joint's acceleration")
    for c in "yz":
        scratch(f"r_q_{c}", "trig", "m",
                f"r_{c} at q: r_{c} + prismatic q (sin, cos) alpha, |r| < 2 m")
    scratch("tau_coulomb", "word", "N m", "F_c atan(k qd)")
    scratch("tau_friction", "word", "N m", "friction torque (eq. 20)")
    for c in "xy":
        scratch(f"v_{c}", "word", "rad/s^2", "omega_dot_(i-1) + qd omega_(i-1) x z, frame i-1")
    for c in "xyz":
        scratch(f"u_{c}", "word", "m/s", "omega x r, frame i")
    for c in "xyz":
        scratch(f"w_mc_{c}", "word", "kg m/s", "omega x m c, frame i")
    for c in "xyz":
        scratch(f"h_{c}", "word", "kg m^2/s", "I omega, frame i")
    for c in "xyz":
        scratch(f"f_local_{c}", "word", "N", "wrench part without the distal wrench")
    for c in "xyz":
        scratch(f"mu_local_{c}", "word", "N m", "wrench part without the distal wrench")
    for c in "xyz":
        scratch(f"f_{c}", "word", "N", "f_i, frame i")
    for c in "xyz":
        scratch(f"mu_{c}", "word", "N m", "mu_i about origin i-1, frame i")
    rmap.define_latches()

    omega_in, omega_dot_in, p_ddot_in = _vec("omega_in"), _vec("omega_dot_in"), _vec("p_ddot_in")
    omega, omega_dot, p_ddot = _vec("omega"), _vec("omega_dot"), _vec("p_ddot")
    # r^i_(i-1,i) at q: r_x = a is constant, r_y and r_z move with a prismatic joint.
    r = ("r_x", "r_q_y", "r_q_z")
    mc, u, w_mc, h = _vec("mc"), _vec("u"), _vec("w_mc"), _vec("h")
    f_local, mu_local, f, mu = _vec("f_local"), _vec("mu_local"), _vec("f"), _vec("mu")
    f_in, mu_in, f_ext, mu_ext = _vec("f_in"), _vec("mu_in"), _vec("f_ext"), _vec("mu_ext")
    f_out, mu_out = _vec("f_out"), _vec("mu_out")
    inertia = (("I_xx", "I_xy", "I_xz"), ("I_xy", "I_yy", "I_yz"), ("I_xz", "I_yz", "I_zz"))

    joint = [
        # theta = q + offset as a phase word: q / (2 pi) turns, wrapping modulo one turn.
        Dot("phase", [mul("q", "rate"), add("theta_offset")]),
        Lookup("phase"),
        Dot("sin_theta", [add("sin_base"), mul("sin_delta", "sin_fraction")]),
        Dot("cos_theta", [add("cos_base"), mul("cos_delta", "cos_fraction")]),
        Dot("ct_ca", [mul("cos_theta", "cos_alpha")]),
        Dot("st_ca", [mul("sin_theta", "cos_alpha")]),
        Dot("ct_sa", [mul("cos_theta", "sin_alpha")]),
        Dot("st_sa", [mul("sin_theta", "sin_alpha")]),
        # Friction, eq. (20): F_c atan(k qd) + F_v qd + F_o.
        # The CORDIC runs beside the MAC; its result is read in the local segment.
        Dot("k_qd", [mul("k_friction", "qd")]),
        Atan("k_qd"),
        # The joint type (revolute, prismatic: 0/1 integers): the products are exact.
        Dot("qd_revolute", [mul("revolute", "qd")]),
        Dot("qdd_revolute", [mul("revolute", "qdd")]),
        Dot("q_prismatic", [mul("prismatic", "q")]),
        Dot("qd2_prismatic", [mul("prismatic", "qd"), mul("prismatic", "qd")]),
        Dot("qdd_prismatic", [mul("prismatic", "qdd")]),
        # d = q + d_offset: r = (a, d sin alpha, d cos alpha) (r_y, r_z: the offset at q = 0).
        Dot("r_q_y", [add("r_y"), mul("q_prismatic", "sin_alpha")]),
        Dot("r_q_z", [add("r_z"), mul("q_prismatic", "cos_alpha")]),
    ]

    rot_w = _rotate_transpose_terms(omega_in)
    rot_v = _rotate_transpose_terms(("v_x", "v_y", omega_dot_in[2]))
    rot_p = _rotate_transpose_terms(p_ddot_in)
    wd_x_r = _cross_terms(omega_dot, r)
    w_x_u = _cross_terms(omega, u)
    w_x_r = _cross_terms(omega, r)
    forward = [
        # omega_i = R^T (omega_(i-1) + qd z); the qd z part only has R^T z = (0, sa, ca).
        # (qd_revolute: a prismatic joint adds no rate.)
        Dot(omega[0], rot_w[0]),
        Dot(omega[1], rot_w[1] + [mul("sin_alpha", "qd_revolute")]),
        Dot(omega[2], rot_w[2] + [mul("cos_alpha", "qd_revolute")]),
        # omega_dot_i = R^T (omega_dot_(i-1) + qd omega_(i-1) x z + qdd z)
        Dot("v_x", [add(omega_dot_in[0]), mul("qd_revolute", omega_in[1])]),
        Dot("v_y", [add(omega_dot_in[1]), -mul("qd_revolute", omega_in[0])]),
        # (the terms that do not read v first: they issue while v is still in the MAC)
        Dot(omega_dot[0], rot_v[0]),
        Dot(omega_dot[1], [mul("sin_alpha", "qdd_revolute"), rot_v[1][2]] + rot_v[1][:2]),
        Dot(omega_dot[2], [mul("cos_alpha", "qdd_revolute"), rot_v[2][2]] + rot_v[2][:2]),
        # p_ddot_i = R^T (p_ddot_(i-1) + qdd_p z) + omega_dot_i x r
        #            + omega_i x (omega_i x r + 2 qd_p R^T z)
        # (qd_p, qdd_p: a prismatic joint's; the Coriolis term 2 omega x (qd_p R^T z) of
        # model/rnea.py joins omega x r in u, R^T z = (0, sa, ca)). The qdd_p terms come
        # first and are not summed into p_ddot_(i-1) z beforehand: in a chain p_ddot_in is the
        # last message word to arrive, and an early read of it would stall the whole segment.
        Dot(u[0], w_x_r[0]),
        Dot(u[1], w_x_r[1] + [mul("qd2_prismatic", "sin_alpha")]),
        Dot(u[2], w_x_r[2] + [mul("qd2_prismatic", "cos_alpha")]),
        Dot(p_ddot[0], rot_p[0] + w_x_u[0] + wd_x_r[0]),
        Dot(p_ddot[1], [mul("sin_alpha", "qdd_prismatic")] + rot_p[1] + w_x_u[1] + wd_x_r[1]),
        Dot(p_ddot[2], [mul("cos_alpha", "qdd_prismatic")] + rot_p[2] + w_x_u[2] + wd_x_r[2]),
    ]

    wd_x_mc = _cross_terms(omega_dot, mc)
    w_x_wmc = _cross_terms(omega, w_mc)
    r_x_f = _cross_terms(r, f_local)
    mc_x_p = _cross_terms(mc, p_ddot)
    w_x_h = _cross_terms(omega, h)
    local = [
        Dot("tau_coulomb", [mul("F_c", "atan")]),
        Dot("tau_friction", [add("tau_coulomb", "F_o"), mul("F_v", "qd")]),
        # f = m p_ddot + omega_dot x mc + omega x (omega x mc) + f_ext        (eq. 12, upper rows)
        *_cross(w_mc, omega, mc, rmap),
        *[Dot(f_local[k], [mul("m", p_ddot[k])] + wd_x_mc[k] + w_x_wmc[k] + [add(f_ext[k])])
          for k in range(3)],
        # mu = r x f + mc x p_ddot + I omega_dot + omega x (I omega) + mu_ext (lower rows)
        *[Dot(h[k], [mul(inertia[k][j], omega[j]) for j in range(3)]) for k in range(3)],
        *[Dot(mu_local[k], r_x_f[k] + mc_x_p[k]
              + [mul(inertia[k][j], omega_dot[j]) for j in range(3)] + w_x_h[k]
              + [add(mu_ext[k])]) for k in range(3)],
    ]

    r_x_fin = _cross_terms(r, f_in)
    rot_f = _rotate_terms(f)
    rot_mu = _rotate_terms(mu)
    # The distal segment issues in this order (IN_ORDER_SEGMENTS): in a chain it is the
    # backward hop, so the wrench words the proximal neighbour reads first (f_out) are written
    # first, and the incoming words are read in the order the distal neighbour writes them
    # (f_in, then mu_in z, x, y, each as the last term of its Dot). A Dot's terms accumulate
    # exactly, so their order does not change its result.
    distal = [
        # (f, mu) = W pi + T (f', mu'), eq. (9): T adds r x f' to the moment.
        *[Dot(f[k], [add(f_local[k], f_in[k])]) for k in range(3)],
        *[Dot(mu[k], r_x_fin[k] + [add(mu_local[k], mu_in[k])]) for k in (2, 0, 1)],
        *[Dot(f_out[k], rot_f[k]) for k in range(3)],
        Dot(mu_out[2], rot_mu[2]),
        Dot(mu_out[0], rot_mu[0]),
        Dot(mu_out[1], rot_mu[1]),
        # tau = mu . R^T z = (R mu)_z, eq. (7); (R mu)_z is mu_out_z. A prismatic joint's
        # is the force along its axis, f . R^T z = f_out_z. mu_out_z is read last, so the
        # first terms issue while it is still in the MAC.
        Dot("tau", [mul("prismatic", f_out[2]), add("tau_friction"),
                    mul("revolute", mu_out[2])]),
    ]
    return {"joint": joint, "forward": forward, "local": local, "distal": distal}


class Microprogram:
    """The compiled and scheduled node microprogram.

    Parameters
    ----------
    fmt : NodeFormats, QFormat or None
        Formats of the node's quantities (:func:`node_formats`, default :data:`NODE_FORMATS`).
    timing : MacTiming
        Pipeline timing the schedule is made for.

    Attributes
    ----------
    registers : RegisterMap
        The register map.
    segments : dict of str to Segment
        The four segments, see :data:`SEGMENTS`.
    """

    def __init__(self, fmt=None, timing=MAC_TIMING):
        self.fmt = node_formats(fmt)
        self.timing = timing
        self.registers = RegisterMap(fmt)
        program = _program(self.registers)
        self._check(program)
        self.segments = {name: self._schedule(name, program[name]) for name in SEGMENTS}
        self._check_atan()

    # -- compilation --------------------------------------------------------------------------

    def term_fraction_bits(self, term):
        """Return the fractional bits of a term's value (product or sum)."""
        fa = self.registers[term.a].format.fraction_bits
        fb = self.registers[term.b].format.fraction_bits
        if term.kind == "mul":
            return fa + fb
        if term.b != "zero" and fa != fb:
            raise ValueError(f"sum term {term.a} + {term.b} mixes formats")
        return fa

    def compile_dot(self, dot):
        """Return ``(aligns, shift, wraps)`` of a Dot: per-term left shifts, the final right
        shift, and whether the destination wraps.

        Raises
        ------
        ValueError
            If the result would need a left shift (more fractional bits than the terms).
        """
        bits = [self.term_fraction_bits(t) for t in dot.terms]
        acc_bits = max(bits)
        dst = self.registers[dot.dst].format
        shift = acc_bits - dst.fraction_bits
        if shift < 0:
            raise ValueError(f"Dot into {dot.dst!r} would need a left shift")
        return tuple(acc_bits - b for b in bits), shift, dst.wraps

    @cached_property
    def shifts(self):
        """tuple of int: the distinct final shifts used (the gateware builds this mux)."""
        return tuple(sorted({self.compile_dot(op)[1] for seg in self.segments.values()
                             for op in seg.ops if isinstance(op, Dot)}))

    @cached_property
    def aligns(self):
        """tuple of int: the distinct term alignments used."""
        return tuple(sorted({a for seg in self.segments.values() for op in seg.ops
                             if isinstance(op, Dot) for a in self.compile_dot(op)[0]}))

    @cached_property
    def max_terms(self):
        """int: the most terms of one Dot (sizes the accumulator)."""
        return max(len(op.terms) for seg in self.segments.values() for op in seg.ops
                   if isinstance(op, Dot))

    def _check(self, program):
        written = {reg.name for reg in self.registers
                   if reg.kind in ("constant", "input", "forward_in", "backward_in")}
        for name in SEGMENTS:
            for op in program[name]:
                for src in op.sources:
                    if src not in self.registers:
                        raise ValueError(f"segment {name}: unknown register {src!r}")
                    if src not in written:
                        raise ValueError(f"segment {name}: {src!r} read before it is written")
                dsts = (op.dst,) if isinstance(op, Dot) else op.dst
                for dst in dsts:
                    reg = self.registers[dst]
                    if reg.kind in ("constant", "input", "forward_in", "backward_in"):
                        raise ValueError(f"segment {name}: writes read-only {dst!r}")
                    if dst in written:
                        raise ValueError(f"segment {name}: {dst!r} is written twice")
                    written.add(dst)
                if isinstance(op, Dot):
                    self.compile_dot(op)

    def _schedule(self, name, ops):
        """List-schedule the ops of one segment onto single-issue cycles.

        A Dot's terms issue on consecutive cycles; an operand produced in this segment can be
        read ``latency`` cycles after the issue of its producer's last term (``lookup`` /
        ``atan`` cycles for latches). Among the ready ops the one heading the longest dependent
        chain issues first; when none is ready, a NOP issues. The segments of
        :data:`IN_ORDER_SEGMENTS` issue their ops in program order instead.
        """
        timing = self.timing
        in_order = name in IN_ORDER_SEGMENTS
        produced_by = {}
        for index, op in enumerate(ops):
            for dst in ((op.dst,) if isinstance(op, Dot) else op.dst):
                produced_by[dst] = index

        def length(op):
            return len(op.terms) if isinstance(op, Dot) else 1

        def delay(op):
            if isinstance(op, Dot):
                return timing.latency
            return timing.lookup if isinstance(op, Lookup) else timing.atan

        users = {i: [] for i in range(len(ops))}
        for index, op in enumerate(ops):
            for src in set(op.sources):
                if src in produced_by:
                    users[produced_by[src]].append(index)
        priority = {}
        for index in reversed(range(len(ops))):
            tail = max((priority[u] for u in users[index]), default=0)
            priority[index] = length(ops[index]) - 1 + delay(ops[index]) + tail

        ready_at = {}  # register name -> first cycle it can be read by an issue
        done = set()
        slots = []
        finish = 0
        cycle = 0
        while len(done) < len(ops):
            best = None
            for index, op in enumerate(ops):
                if index in done:
                    continue
                if any(produced_by.get(src, -1) not in done and src in produced_by
                       for src in op.sources):
                    continue
                if isinstance(op, Dot):
                    ok = all(ready_at.get(src, 0) <= cycle + k
                             for k, term in enumerate(op.terms) for src in (term.a, term.b))
                else:
                    ok = all(ready_at.get(src, 0) <= cycle for src in op.sources)
                if ok and (best is None or priority[index] > priority[best]):
                    best = index
                if in_order:
                    break  # only the first op not issued yet may issue
            if best is None:
                slots.append(Slot("nop"))
                cycle += 1
                continue
            op = ops[best]
            done.add(best)
            addr = self.registers.operand_address
            if isinstance(op, Dot):
                aligns, shift, wraps = self.compile_dot(op)
                for k, term in enumerate(op.terms):
                    last = k == len(op.terms) - 1
                    slots.append(Slot("term", addr(term.a), addr(term.b), term.kind, term.negate,
                                      aligns[k], k == 0, last, addr(op.dst) if last else 0,
                                      shift if last else 0, wraps if last else False))
                cycle += len(op.terms)
                ready_at[op.dst] = cycle - 1 + timing.latency
                finish = max(finish, ready_at[op.dst])
            else:
                kind = "lookup" if isinstance(op, Lookup) else "atan"
                slots.append(Slot(kind, addr(op.src)))
                for dst in op.dst:
                    ready_at[dst] = cycle + delay(op)
                if isinstance(op, Lookup):
                    finish = max(finish, cycle + delay(op))
                else:
                    # The CORDIC runs on beside the MAC; see _check_atan.
                    self._atan_ready = (name, cycle + delay(op))
                cycle += 1
        return Segment(name, tuple(ops), tuple(slots), max(finish, len(slots)))

    def _check_atan(self):
        """Check that the CORDIC result is ready before the segment that reads it starts."""
        name, ready = self._atan_ready
        elapsed = 0
        for seg in SEGMENTS[SEGMENTS.index(name):]:
            if any(isinstance(op, Dot) and "atan" in op.sources
                   for op in self.segments[seg].ops):
                break
            elapsed += self.segments[seg].cycles
        if elapsed < ready:
            raise ValueError(f"the CORDIC result is read {elapsed} cycles after its start, "
                             f"before it is ready ({ready} cycles)")

    # -- reports ------------------------------------------------------------------------------

    def schedule_report(self, n=6):
        """Return a text report: MAC operations and cycles per segment, and a chain estimate.

        Parameters
        ----------
        n : int
            Number of nodes of the chain estimate.

        Returns
        -------
        str
            A Markdown table. The chain estimate of one sequential update assumes all nodes
            run ``joint`` together, then ``forward`` node by node, the last node's ``local``,
            then ``distal`` node by node back to node 1, with ``handover`` cycles per mailbox
            transfer (not counted here: see the chain benchmark for measured figures).
        """
        lines = ["| segment | MAC terms | issue cycles | NOPs | cycles |",
                 "|---|---:|---:|---:|---:|"]
        for seg in self.segments.values():
            lines.append(f"| {seg.name} | {seg.mac_terms} | {len(seg.slots)} | {seg.nops} | "
                         f"{seg.cycles} |")
        s = self.segments
        total = sum(seg.mac_terms for seg in s.values())
        lines.append(f"| **node total** | {total} | | | "
                     f"{sum(seg.cycles for seg in s.values())} |")
        latency = (s["joint"].cycles + n * s["forward"].cycles + s["local"].cycles
                   + n * s["distal"].cycles)
        lines.append("")
        lines.append(f"Sequential update of a {n}-node chain (no mailbox handover cost): "
                     f"{latency} cycles = joint + {n} x forward + local + {n} x distal.")
        return "\n".join(lines)


def build_microprogram(fmt=None, timing=MAC_TIMING):
    """Return the :class:`Microprogram` for a word format and pipeline timing."""
    return Microprogram(fmt, timing)


def microprogram(fmt=None):
    """Return the (cached) :class:`Microprogram` for a word format (the default pipeline timing).

    The one microprogram the golden model and the gateware share: built once per format by
    :func:`build_microprogram` and then returned again (the same object, whether the format is
    given or the default is used).

    Parameters
    ----------
    fmt : NodeFormats, QFormat or None
        Formats of the nodes' quantities (:func:`node_formats`, default :data:`NODE_FORMATS`;
        a QFormat and its :meth:`NodeFormats.uniform` give the same program).

    Returns
    -------
    Microprogram
    """
    return _cached_microprogram(node_formats(fmt))


@lru_cache(maxsize=None)
def _cached_microprogram(fmt):
    return build_microprogram(fmt)
