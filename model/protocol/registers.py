"""The register maps of the host link protocol: the control block, the node access rules, the
build information, and :class:`ProtocolSpec`, the protocol of one chain.

The control block sits at node :data:`CONTROL_NODE` of the register bus
(:mod:`linkdyn.gateware.bus`): registers implemented by the chain (CONTROL, STATUS, the update
counters, RESULT_SELECT) and registers the protocol engine answers itself (frame and error
counters, build information). The node registers are those of the microprogram's
:class:`~linkdyn.model.microprogram.RegisterMap`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from ..fixedpoint import WORD_WIDTH
from ..microprogram import BANK_COUNTS
from .fields import ControlField
from .controller_map import (CONTROLLER_BASE, CONTROLLER_WORDS, RECORD_WORDS, REFERENCE_WORDS,
                             controller_word)
from .frames import PROTOCOL_VERSION, WORD_BYTES, Command, ErrorCode
from .link_map import LINK_WINDOW, LINK_WORDS_MAP
from ..microprogram import node_formats

__all__ = [
    "CONTROL_NODE", "MAX_NODES", "ControlField", "ControlRegister", "CONTROL_FIELDS",
    "STATUS_FIELDS", "RESULT_SELECT_FIELDS", "CONTROL_REGISTERS", "control_register",
    "CONTROL_START", "CONTROL_CLEAR", "CONTROL_STEP", "CONTROL_FAULT_CLEAR", "CONTROL_LOCAL",
    "STATUS_BUSY",
    "STATUS_DONE", "STATUS_OVERFLOW",
    "RESULT_SELECT", "RESULT_FOLLOW", "STATUS_FIRST", "STATUS_COUNT", "INFO_FIRST",
    "INFO_COUNT", "PARENTS_FIRST", "PARENTS_WORDS", "PARENTS_PER_WORD", "pack_parents",
    "unpack_parents", "STEP_CONTROL_FIRST", "STEP_CONTROL_COUNT", "MAGIC", "Access", "ProtocolSpec",
]

#: ``node`` value that selects the chain's control block (the register bus,
#: :mod:`linkdyn.gateware.bus`, takes it from here).
CONTROL_NODE = 0xFF
#: Most nodes a chain may have (one overflow bit per node in a 32-bit word).
MAX_NODES = 32


#: Bits of the CONTROL register (write-only; a write with no bit set does nothing).
CONTROL_FIELDS = (
    ControlField("start", 0, 1, "start one update of the chain (STATUS.busy rises, "
                                "STATUS.done falls)"),
    ControlField("clear", 1, 1, "clear OVERFLOW_STICKY and STATUS.overflow; the protocol "
                                "engine also clears its error counters"),
    ControlField("control_step", 2, 1, "boards with controllers: run one control step (every "
                                       "joint's feedback, one update, every joint's output; "
                                       "STATUS.busy until it ends)"),
    ControlField("fault_clear", 3, 1, "boards with controllers: clear every joint's fault "
                                      "latch and shut-off counters"),
    ControlField("local", 4, 1, "chains built with the local loop: start one local update "
                                "(every node runs its segments on its own registers with the "
                                "messages of the last chain update, no mailbox written; "
                                "ignored with start or without the local loop; a board with "
                                "controllers runs it in its control steps, LOCAL_MULTIPLE)"),
)

#: Bits of the STATUS register.
STATUS_FIELDS = (
    ControlField("busy", 0, 1, "an update (or a control step) is running"),
    ControlField("done", 1, 1, "the last update (or control step) started has finished (0 "
                               "after reset)"),
    ControlField("overflow", 2, 1, "OVERFLOW_STICKY is not zero"),
)

#: Bits of the RESULT_SELECT register (read/write: a read returns the value last accepted).
RESULT_SELECT_FIELDS = (
    ControlField("number", 0, 31, "show update number v (1 .. UPDATE_COUNT, numbered as "
                                  "UPDATE_COUNT counts); refused unless update v has finished "
                                  "and its results have not been reused since (a sequential "
                                  "chain keeps the last update, a pipelined one the last "
                                  "2·banks)"),
    ControlField("follow", 31, 1, "show the last update finished (the reset value; the number "
                                  "bits are then ignored and read 0)"),
)


@dataclass(frozen=True)
class ControlRegister:
    """One register of the control block at :data:`CONTROL_NODE`.

    Attributes
    ----------
    name : str
        Register name.
    address : int
        Word address.
    access : str
        ``"w"`` (host-writable, reads 0), ``"rw"`` (host-writable, reads back the value
        accepted) or ``"r"`` (read-only).
    owner : str
        ``"chain"``: implemented by the chain behind the register bus; ``"engine"``: answered by
        the protocol engine itself, never seen on the bus.
    requires : str
        ``"controller"``: present only on a board with joint controllers
        (:mod:`~linkdyn.model.protocol.controller_map`); ``"distributed"``: only on a
        distributed chain (:mod:`~linkdyn.model.protocol.link_map`); ``"local_loop"``: only
        with controllers and the local loop; ``""``: always.
    unit : str
        Unit of the value.
    doc : str
        Meaning.
    fields : tuple of ControlField
        Bit fields, if any.
    """

    name: str
    address: int
    access: str
    owner: str
    unit: str
    doc: str
    fields: tuple = ()
    requires: str = ""

    @property
    def writable(self):
        """bool: the host may write the register (access ``"w"`` or ``"rw"``)."""
        return "w" in self.access


def _control_registers():
    regs = [
        ControlRegister("CONTROL", 0x00, "w", "chain", "", "commands to the chain (bits below)",
                        CONTROL_FIELDS),
        ControlRegister("STATUS", 0x01, "r", "chain", "", "state of the chain (bits below)",
                        STATUS_FIELDS),
        ControlRegister("OVERFLOW", 0x02, "r", "chain", "",
                        "bit i: node i saturated a result in the last update"),
        ControlRegister("OVERFLOW_STICKY", 0x03, "r", "chain", "",
                        "bit i: node i saturated a result since the last clear"),
        ControlRegister("LATENCY_CYCLES", 0x04, "r", "chain", "cycles",
                        "cycles from the start of the last update to its end"),
        ControlRegister("INTERVAL_CYCLES", 0x05, "r", "chain", "cycles",
                        "cycles between the starts of the last two updates"),
        ControlRegister("UPDATE_COUNT", 0x06, "r", "chain", "",
                        "updates finished since reset (wraps)"),
        ControlRegister("FRAME_COUNT", 0x07, "r", "engine", "",
                        "frames executed without error since reset (wraps)"),
        ControlRegister("UART_FRAME_ERRORS", 0x08, "r", "engine", "",
                        "bytes received with a bad stop bit (saturating)"),
        ControlRegister("UART_OVERFLOWS", 0x09, "r", "engine", "",
                        "bytes lost because the receive buffer was full (saturating)"),
    ]
    for code in ErrorCode:
        if code is ErrorCode.OK:
            continue
        regs.append(ControlRegister(f"ERRORS_{code.name}", 0x09 + code, "r", "engine", "",
                                    f"error replies with status {code.name} (saturating)"))
    regs.append(ControlRegister(
        "RESULT_SELECT", 0x15, "rw", "chain", "",
        "which finished update the result reads show: `tau` of every node, node 0's base "
        "wrench, OVERFLOW and the banked node registers (bits below)", RESULT_SELECT_FIELDS))
    for address, name, access, unit, doc in (
            (0x16, "CONTROL_PERIOD", "rw", "cycles",
             "0: control steps only on CONTROL.control_step or the CONTROL command; p > 0: "
             "also one every p cycles (a step due while one runs is skipped and counted in "
             "CONTROL_OVERRUNS)"),
            (0x17, "CONTROL_STEPS", "r", "", "control steps finished since reset (wraps)"),
            (0x18, "FAULTS", "r", "", "bit i: joint i has a latched fault"),
            (0x19, "CONTROL_OVERRUNS", "r", "", "periodic control steps skipped because one "
                                                "was running (saturating)"),
            (0x1A, "CONTROL_LATENCY_CYCLES", "r", "cycles",
             "cycles from the start of the last control step to its end"),
    ):
        regs.append(ControlRegister(name, address, access, "chain", unit, doc,
                                    requires="controller"))
    regs.append(ControlRegister(
        "LOCAL_MULTIPLE", 0x1B, "rw", "chain", "",
        "boards with controllers and the local loop: m >= 1 (reset 1), control steps per chain "
        "update; the first step after a write (or reset) runs a chain update, the next m - 1 "
        "a local update each (the controllers on the local torques, no neighbour-message "
        "strobe); 0, or a write while a control step runs, is refused", requires="local_loop"))
    info = [
        ("MAGIC", "", "0x4E59444C, the bytes 'LDYN'"),
        ("PROTOCOL_VERSION", "", "PROTOCOL_VERSION"),
        ("NODES", "", "number of nodes n"),
        ("WORD_FORMAT", "", "fraction bits | integer bits << 8 | word width << 16"),
        ("CLOCK_HZ", "Hz", "system clock frequency"),
        ("BAUDRATE", "baud", "line rate of the UART"),
        ("BOARD_ID", "", "board identifier (boards.<board>)"),
        ("NODE_MAP_SIZE", "words", "host-addressable words per node"),
        ("BUFFER_WORDS", "words", "frame buffer size, the longest payload"),
        ("BANKS", "", "register banks of the chain: 1 (sequential policy), 2 or 4 (pipelined)"),
        ("CONTROLLERS", "", "bit 0: a joint controller beside every node (the controller "
                            "window, the CONTROL command); bit 1: and the local loop "
                            "(LOCAL_MULTIPLE); 0: none"),
        ("MAP_CHECK", "", "CRC-32 of the register maps (ProtocolSpec.map_check)"),
    ]
    for k, (name, unit, doc) in enumerate(info):
        regs.append(ControlRegister(name, 0x20 + k, "r", "engine", unit, doc))
    # The topology of the nodes (docs/trees.md): after MAP_CHECK, part of the INFO reply.
    first = 0x20 + len(info)
    for k in range(MAX_NODES // PARENTS_PER_WORD):
        nodes = f"{PARENTS_PER_WORD * k} .. {PARENTS_PER_WORD * k + PARENTS_PER_WORD - 1}"
        regs.append(ControlRegister(
            f"PARENTS_{k}", first + k, "r", "engine", "",
            f"node topology, nodes {nodes}: byte j (bits 8j .. 8j+7) is the parent of node "
            f"{PARENTS_PER_WORD * k} + j plus 1 (0: a root on the base; 0 past NODES)"
            + ("; a chain of 4 or more nodes reads 0x03020100" if k == 0 else "")))
    regs.append(ControlRegister("LINK_DOWN", 0x34, "r", "chain", "",
                                "distributed chain: bit h, the link from board h to board h+1 "
                                "is down (as board h sees it)", requires="distributed"))
    regs.append(ControlRegister("BOARDS", 0x35, "r", "engine", "",
                                "distributed chain: the number of boards (one node each)",
                                requires="distributed"))
    return tuple(sorted(regs, key=lambda reg: reg.address))


#: Parents packed into one PARENTS_k word of the build information (a byte each).
PARENTS_PER_WORD = 4


#: The control block at :data:`CONTROL_NODE`, in address order.
CONTROL_REGISTERS = _control_registers()
_CONTROL_BY_NAME = {reg.name: reg for reg in CONTROL_REGISTERS}
#: Words 0x01 .. STATUS_END-1: the STATUS command's reply.
STATUS_FIRST = _CONTROL_BY_NAME["STATUS"].address
STATUS_COUNT = _CONTROL_BY_NAME[f"ERRORS_{ErrorCode.TIMEOUT.name}"].address + 1 - STATUS_FIRST
#: The INFO command's reply: the build-information words.
INFO_FIRST = _CONTROL_BY_NAME["MAGIC"].address
INFO_COUNT = _CONTROL_BY_NAME[f"PARENTS_{MAX_NODES // PARENTS_PER_WORD - 1}"].address + 1 \
    - INFO_FIRST
#: Address and count of the PARENTS_k words (the node topology) in the control block.
PARENTS_FIRST = _CONTROL_BY_NAME["PARENTS_0"].address
PARENTS_WORDS = MAX_NODES // PARENTS_PER_WORD
#: The words after ``tau`` in a STEP reply: OVERFLOW .. UPDATE_COUNT.
STEP_CONTROL_FIRST = _CONTROL_BY_NAME["OVERFLOW"].address
STEP_CONTROL_COUNT = _CONTROL_BY_NAME["UPDATE_COUNT"].address + 1 - STEP_CONTROL_FIRST
MAGIC = 0x4E59444C


def control_register(name):
    """Return the :class:`ControlRegister` called ``name``."""
    try:
        return _CONTROL_BY_NAME[name]
    except KeyError:
        raise KeyError(f"no control register named {name!r}") from None


def _field_mask(fields, name):
    for f in fields:
        if f.name == name:
            return ((1 << f.width) - 1) << f.offset
    raise KeyError(name)


CONTROL_START = _field_mask(CONTROL_FIELDS, "start")
CONTROL_CLEAR = _field_mask(CONTROL_FIELDS, "clear")
CONTROL_STEP = _field_mask(CONTROL_FIELDS, "control_step")
CONTROL_FAULT_CLEAR = _field_mask(CONTROL_FIELDS, "fault_clear")
CONTROL_LOCAL = _field_mask(CONTROL_FIELDS, "local")
STATUS_BUSY = _field_mask(STATUS_FIELDS, "busy")
STATUS_DONE = _field_mask(STATUS_FIELDS, "done")
STATUS_OVERFLOW = _field_mask(STATUS_FIELDS, "overflow")
#: Address of RESULT_SELECT in the control block.
RESULT_SELECT = _CONTROL_BY_NAME["RESULT_SELECT"].address
#: RESULT_SELECT value (the ``follow`` bit) for "the last update finished", the reset value.
RESULT_FOLLOW = _field_mask(RESULT_SELECT_FIELDS, "follow")


def _chain_parents(n_nodes):
    """Return the parents of a chain of ``n_nodes`` nodes, ``(-1, 0, 1, ..., n - 2)``."""
    return tuple(range(-1, n_nodes - 1))


def _check_parents(parents, n_nodes):
    if parents is None:
        return _chain_parents(n_nodes)
    if isinstance(parents, (str, bytes)) or not hasattr(parents, "__len__"):
        raise TypeError(f"Parents must be a sequence of {n_nodes} integers, not {parents!r}")
    values = tuple(parents)
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in values):
        raise TypeError(f"Parents must be a sequence of {n_nodes} integers, not {parents!r}")
    if len(values) != n_nodes:
        raise ValueError(f"Parents must have one entry per node ({n_nodes}), not "
                         f"{len(values)}")
    for node, parent in enumerate(values):
        if not -1 <= parent < node:
            raise ValueError(f"Parent of node {node} must be -1 (a root) or a node before it "
                             f"(0 .. {node - 1}), not {parent}")
    return values


def pack_parents(parents):
    """Return the :data:`PARENTS_WORDS` PARENTS_k words of a node topology.

    Parameters
    ----------
    parents : sequence of int
        The parent of every node (``-1`` a root on the base), at most :data:`MAX_NODES`.

    Returns
    -------
    tuple of int
        Word ``k``, byte ``j`` (bits ``8j .. 8j+7``): the parent of node
        ``PARENTS_PER_WORD * k + j`` plus 1 (0 for a root), 0 past the last node.
    """
    words = [0] * PARENTS_WORDS
    for node, parent in enumerate(parents):
        words[node // PARENTS_PER_WORD] |= (parent + 1) << (8 * (node % PARENTS_PER_WORD))
    return tuple(words)


def unpack_parents(words, n_nodes):
    """Return the parents of ``n_nodes`` nodes from PARENTS_k words (:func:`pack_parents`).

    Raises
    ------
    ValueError
        If a parent is not ``-1`` or a node before its child, or a byte past the last node is
        not 0 (the words are not a topology of ``n_nodes`` nodes).
    """
    words = tuple(words)
    if len(words) != PARENTS_WORDS:
        raise ValueError(f"Expected {PARENTS_WORDS} PARENTS words, not {len(words)}")
    parents = []
    for node in range(MAX_NODES):
        byte = (words[node // PARENTS_PER_WORD] >> (8 * (node % PARENTS_PER_WORD))) & 0xFF
        if node >= n_nodes:
            if byte:
                raise ValueError(f"PARENTS byte of node {node} is {byte}, past the last node "
                                 f"({n_nodes - 1}): not a topology of {n_nodes} nodes")
            continue
        parents.append(byte - 1)
    return _check_parents(parents, n_nodes)


@dataclass(frozen=True)
class Access:
    """Host access to one register word: whether it exists, is writable, and who answers it."""

    exists: bool
    writable: bool = False
    owner: str = "node"


class ProtocolSpec:
    """The protocol for one chain: node count, word format, sizes, access rules, build info.

    Parameters
    ----------
    n_nodes : int
        Number of nodes, ``1 .. MAX_NODES``.
    fmt : NodeFormats, QFormat or None
        Formats of the nodes' quantities (default
        :data:`~linkdyn.model.microprogram.NODE_FORMATS`; a QFormat: one format everywhere).
    clock_hz : int
        System clock frequency, Hz (reported by INFO).
    baudrate : int
        UART line rate, baud (reported by INFO).
    board_id : int
        Board identifier, 32 bits (reported by INFO; :data:`linkdyn.boards.BOARD_IDS`).
    banks : int
        Register banks of the chain (reported by INFO): 1 for the sequential update policy, 2
        or 4 for the pipelined one (``docs/chain.md``); a host zeroes the external wrench of
        every bank before it streams STEPs without it.
    controllers : bool
        A joint controller beside every node (reported by INFO): the controller window of
        every node, the control block's controller registers and the CONTROL command
        (:mod:`~linkdyn.model.protocol.controller_map`). Only with the sequential policy
        (``banks == 1``).
    parents : sequence of int, optional
        The parent node of every node (``-1`` a root on the base, every parent before its
        children; docs/trees.md), reported by INFO (PARENTS_k, :func:`pack_parents`); default
        the chain ``(-1, 0, 1, ..., n - 2)``.
    boards : int, optional
        A distributed chain of ``boards`` boards, one node each (``boards == n_nodes``;
        ``docs/distributed.md``): the control block's LINK_DOWN and BOARDS and every node's
        link window (:mod:`~linkdyn.model.protocol.link_map`). ``None`` (default): all nodes
        on one FPGA.
    local_loop : bool
        The chain is built with the local update (CONTROL.local; ``LinkDynChain(...,
        local_loop=True)``), and with controllers the control block's LOCAL_MULTIPLE (reported
        by INFO: CONTROLLERS bit 1). Sequential chain only.

    Raises
    ------
    TypeError, ValueError
        If a parameter has the wrong type or range.

    Notes
    -----
    Node registers (:class:`~linkdyn.model.microprogram.RegisterMap` of
    ``linkdyn.model.golden.microprogram(fmt)``): every address below :attr:`node_map_size`
    can be read; ``constant`` and ``input`` registers can be written on every node, the
    ``forward_in`` registers on node 0 only (the base motion); everything else is read-only.
    With controllers, the words of :data:`~linkdyn.model.protocol.controller_map.CONTROLLER_WORDS`
    follow their own access; on a distributed chain the link window
    (:data:`~linkdyn.model.protocol.link_map.LINK_WORDS_MAP`) is read-only on every node.
    """

    def __init__(self, n_nodes, fmt=None, *, clock_hz=0, baudrate=0, board_id=0, banks=1,
                 controllers=False, parents=None, boards=None, local_loop=False):
        if not isinstance(n_nodes, int) or isinstance(n_nodes, bool):
            raise TypeError(f"Node count must be an integer, not {n_nodes!r}")
        if not 1 <= n_nodes <= MAX_NODES:
            raise ValueError(f"Node count must be 1 .. {MAX_NODES}, not {n_nodes!r}")
        fmt = node_formats(fmt)
        for name, value, bits in (("clock_hz", clock_hz, 32), ("baudrate", baudrate, 32),
                                  ("board_id", board_id, 32)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if not 0 <= value < (1 << bits):
                raise ValueError(f"{name} must be 0 .. 2**{bits}-1, not {value!r}")
        if banks not in BANK_COUNTS or isinstance(banks, bool):
            raise ValueError(f"Bank count must be one of {BANK_COUNTS}, not {banks!r}")
        if not isinstance(controllers, bool):
            raise TypeError(f"controllers must be a bool, not {controllers!r}")
        if controllers and banks != 1:
            raise ValueError(f"joint controllers need the sequential policy (1 bank), not "
                             f"{banks} banks")
        parents = _check_parents(parents, n_nodes)
        if controllers and parents != _chain_parents(n_nodes):
            raise ValueError("joint controllers are built beside a chain of nodes, not a tree")
        if boards is not None:
            if not isinstance(boards, int) or isinstance(boards, bool):
                raise TypeError(f"Board count must be an integer or None, not {boards!r}")
            if boards != n_nodes:
                raise ValueError(f"A distributed chain has one node per board: {n_nodes} "
                                 f"nodes need boards={n_nodes}, not {boards!r}")
            if parents != _chain_parents(n_nodes):
                raise ValueError("a distributed chain is a chain of boards, not a tree of nodes")
        if not isinstance(local_loop, bool):
            raise TypeError(f"local_loop must be a bool, not {local_loop!r}")
        if local_loop and (banks != 1 or parents != _chain_parents(n_nodes)
                           or boards is not None):
            raise ValueError("the local loop is built into a sequential chain on one FPGA only")
        from ..golden import microprogram
        self.local_loop = local_loop
        self.n_nodes = n_nodes
        self.parents = parents
        self.boards = boards
        self.fmt = fmt
        self.clock_hz = clock_hz
        self.baudrate = baudrate
        self.board_id = board_id
        self.banks = banks
        self.controllers = controllers
        self.registers = microprogram(fmt).registers
        rmap = self.registers
        self.node_map_size = rmap.size
        constants = rmap.of_kind("constant")
        inputs = rmap.of_kind("input")
        forward_in = rmap.of_kind("forward_in")
        self.constant_count = len(constants)
        self.input_address = inputs[0].address
        self.input_count = len(inputs)
        if [r.name for r in inputs[:3]] != ["q", "qd", "qdd"]:
            raise ValueError("the first three input registers must be q, qd, qdd")
        self.base_motion_address = forward_in[0].address
        self.base_motion_count = len(forward_in)
        self.tau_address = rmap["tau"].address
        # Writable words form one range from address 0 (constants, then inputs), extended by
        # the forward mailbox on node 0; the gateware checks ranges, so check that they are.
        writable = sorted(r.address for r in constants + inputs)
        if writable != list(range(len(writable))):
            raise ValueError("constant and input registers must be the addresses 0 .. k-1")
        self.writable_end = len(writable)
        fwd = [r.address for r in forward_in]
        if fwd != list(range(self.writable_end, self.writable_end + len(fwd))):
            raise ValueError("the forward mailbox must follow the input registers")
        self.writable_end_node0 = self.writable_end + len(fwd)
        if self.node_map_size > CONTROLLER_BASE:
            raise ValueError("the node register map reaches into the controller window")
        if self.node_map_size > LINK_WINDOW:
            raise ValueError("the node register map reaches into the link window")
        present = {"": True, "controller": controllers, "distributed": boards is not None,
                   "local_loop": local_loop and controllers}
        self.control_registers = tuple(reg for reg in CONTROL_REGISTERS
                                       if present[reg.requires])
        self._link_addresses = frozenset(w.address for w in LINK_WORDS_MAP) \
            if boards is not None else frozenset()

    @property
    def distributed(self):
        """bool: a distributed chain (``boards`` given): LINK_DOWN, BOARDS, the link window."""
        return self.boards is not None

    # -- sizes -------------------------------------------------------------------------------

    @property
    def load_robot_words(self):
        """int: payload words of LOAD_ROBOT: every node's constants, then the base motion."""
        return self.n_nodes * self.constant_count + self.base_motion_count

    def step_words(self, wrench=False):
        """Return the payload words of STEP: 3 per node, or all inputs with the wrench."""
        return self.n_nodes * (self.input_count if wrench else 3)

    @property
    def step_reply_words(self):
        """int: reply words of STEP: tau per node, then OVERFLOW .. UPDATE_COUNT."""
        return self.n_nodes + STEP_CONTROL_COUNT

    @property
    def max_batch(self):
        """int: the most samples one BATCH may carry: the chain's banks on a pipelined chain
        (every sample of a batch in a bank of its own, every result still kept when the
        batch ends), 0 on a sequential one (no BATCH)."""
        return self.banks if self.banks > 1 else 0

    def batch_words(self, samples, wrench=False):
        """Return the payload words of a BATCH of ``samples``: the count, then per sample the
        STEP payload (:meth:`step_words`)."""
        return 1 + samples * self.step_words(wrench)

    def batch_reply_words(self, samples):
        """Return the reply words of a BATCH of ``samples``: per sample every node's ``tau``,
        OVERFLOW and the update number, then OVERFLOW .. UPDATE_COUNT of the last update."""
        return samples * (self.n_nodes + 2) + STEP_CONTROL_COUNT

    @property
    def control_words(self):
        """int: payload words of CONTROL: the reference (:data:`REFERENCE_WORDS`) per node."""
        return self.n_nodes * len(REFERENCE_WORDS)

    @property
    def control_reply_words(self):
        """int: reply words of CONTROL: the record (:data:`RECORD_WORDS`) per node, then
        OVERFLOW .. UPDATE_COUNT."""
        return self.n_nodes * len(RECORD_WORDS) + STEP_CONTROL_COUNT

    @property
    def buffer_words(self):
        """int: frame buffer words: the longest request or reply payload of any command
        (a whole node register map plus the block word fits in one WRITE)."""
        sizes = [self.load_robot_words, self.step_words(True), self.step_reply_words,
                 STATUS_COUNT, INFO_COUNT, self.node_map_size + 1]
        if self.controllers:
            sizes += [self.control_words, self.control_reply_words, len(CONTROLLER_WORDS) + 1]
        if self.max_batch:
            sizes += [self.batch_words(self.max_batch, True),
                      self.batch_reply_words(self.max_batch)]
        return max(sizes)

    @property
    def max_payload_bytes(self):
        """int: the longest payload a frame may carry, bytes."""
        return WORD_BYTES * self.buffer_words

    @property
    def commands(self):
        """tuple of Command: the commands this board implements (CONTROL only with
        controllers, BATCH only on a pipelined chain); any other command code is answered with
        UNKNOWN_COMMAND."""
        built = {Command.CONTROL: self.controllers, Command.BATCH: self.max_batch > 0}
        return tuple(c for c in Command if built.get(c, True))

    def request_lengths(self, command):
        """Return the allowed payload lengths (bytes) of a command, or ``None`` for WRITE
        (``4 + 4 * count``, checked against the block word)."""
        command = Command(command)
        if command in (Command.INFO, Command.STATUS, Command.CLEAR):
            return (0,)
        if command is Command.READ:
            return (WORD_BYTES,)
        if command is Command.LOAD_ROBOT:
            return (WORD_BYTES * self.load_robot_words,)
        if command is Command.STEP:
            return (WORD_BYTES * self.step_words(False), WORD_BYTES * self.step_words(True))
        if command is Command.CONTROL:
            return (WORD_BYTES * self.control_words,)
        if command is Command.BATCH:
            return tuple(sorted({WORD_BYTES * self.batch_words(k, wrench)
                                 for k in range(1, self.max_batch + 1)
                                 for wrench in (False, True)}))
        return None

    def batch_lengths(self, samples):
        """Return the payload lengths (bytes) a BATCH whose word 0 is ``samples`` may have,
        ``(without wrench, with wrench)``, or ``()`` if ``samples`` is not 1 .. max_batch."""
        if not 1 <= samples <= self.max_batch:
            return ()
        return (WORD_BYTES * self.batch_words(samples),
                WORD_BYTES * self.batch_words(samples, True))

    # -- access ------------------------------------------------------------------------------

    def access(self, node, addr):
        """Return the :class:`Access` of word ``addr`` of ``node`` (or of the control block)."""
        if node == CONTROL_NODE:
            for reg in self.control_registers:
                if reg.address == addr:
                    return Access(True, reg.writable, reg.owner)
            return Access(False)
        if not 0 <= node < self.n_nodes:
            return Access(False)
        if addr in self._link_addresses:
            return Access(True, False, "node")
        if self.controllers and addr >= CONTROLLER_BASE:
            try:
                word = controller_word(addr)
            except KeyError:
                return Access(False)
            return Access(True, word.writable, "controller")
        if not 0 <= addr < self.node_map_size:
            return Access(False)
        end = self.writable_end_node0 if node == 0 else self.writable_end
        return Access(True, addr < end, "node")

    def node_valid(self, node):
        """Return whether ``node`` addresses a node or the control block."""
        return node == CONTROL_NODE or 0 <= node < self.n_nodes

    # -- build info ----------------------------------------------------------------------------

    @property
    def word_format(self):
        """int: the WORD_FORMAT build-info word.

        Bits 0-7 the fractional bits of ``tau``, 8-15 its integer bits, 16-23 the word width,
        bit 24 set when the quantities have formats of their own (:class:`NodeFormats` not
        uniform; MAP_CHECK covers every register's format).
        """
        bits = self.fmt.bits
        uniform = len({v for k, v in bits.items() if k not in ("trig", "r")}) == 1
        tau = bits["torque"]
        return (tau | ((WORD_WIDTH - 1 - tau) << 8) | (WORD_WIDTH << 16)
                | (0 if uniform else 1 << 24))

    @property
    def map_check(self):
        """int: CRC-32 of the node register map and the control map (a host compares it)."""
        text = [f"v{PROTOCOL_VERSION}"]
        for reg in self.registers:
            if reg.address is not None:
                text.append(f"{reg.address}:{reg.name}:{reg.kind}:{reg.format.fraction_bits}")
        for reg in self.control_registers:
            text.append(f"c{reg.address}:{reg.name}:{reg.access}:{reg.owner}")
        if self.controllers:
            for word in CONTROLLER_WORDS:
                fraction = "-" if word.format is None else word.format.fraction_bits
                text.append(f"k{word.address}:{word.name}:{word.access}:{fraction}")
        if self.distributed:
            for word in LINK_WORDS_MAP:
                text.append(f"l{word.address}:{word.name}")
        return zlib.crc32(";".join(text).encode())

    def build_info(self):
        """Return the build-information words (INFO reply), ``{name: word}`` in address order."""
        return {
            "MAGIC": MAGIC,
            "PROTOCOL_VERSION": PROTOCOL_VERSION,
            "NODES": self.n_nodes,
            "WORD_FORMAT": self.word_format,
            "CLOCK_HZ": self.clock_hz,
            "BAUDRATE": self.baudrate,
            "BOARD_ID": self.board_id,
            "BANKS": self.banks,
            "CONTROLLERS": int(self.controllers)
            | (2 if self.local_loop and self.controllers else 0),
            "NODE_MAP_SIZE": self.node_map_size,
            "BUFFER_WORDS": self.buffer_words,
            "MAP_CHECK": self.map_check,
            **{f"PARENTS_{k}": word for k, word in enumerate(pack_parents(self.parents))},
        }

    @property
    def is_chain(self):
        """bool: the nodes form one chain (parents ``-1, 0, 1, ...``)."""
        return self.parents == _chain_parents(self.n_nodes)

    def engine_words(self):
        """Return every word the engine answers from its build, ``{name: word}``: the INFO
        words (:meth:`build_info`) and BOARDS (the board count; 1 on a single FPGA, where the
        register does not exist)."""
        words = self.build_info()
        words["BOARDS"] = self.boards if self.boards is not None else 1
        return words

    def __repr__(self):
        boards = f", boards={self.boards}" if self.boards is not None else ""
        local = ", local_loop=True" if self.local_loop else ""
        return (f"ProtocolSpec(n_nodes={self.n_nodes}, fmt={self.fmt.name}, "
                f"clock_hz={self.clock_hz}, baudrate={self.baudrate}, "
                f"board_id={self.board_id:#x}, banks={self.banks}, "
                f"controllers={self.controllers}"
                + ("" if self.is_chain else f", parents={self.parents}") + f"{boards}{local})")
