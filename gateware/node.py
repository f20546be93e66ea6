"""The LinkDyn node: one link's inverse dynamics, sequenced from the microprogram's schedule.

Structure (source paper Fig. 5-6; docs/architecture.md, *Gateware blocks*)::

    host / neighbours --ext port--> register file (2 copies in block RAM, written together)
                                        |  read a        |  read b
                     latches -------> operand mux -> MultiplyAccumulate --write--> register file
                  (sine table, CORDIC)      |
    schedule ROM -> sequencer (issues one slot per cycle); Lookup -> SineCosineLookup,
                                                           Atan   -> CordicArctangent

The register file is laid out by :class:`linkdyn.model.microprogram.RegisterMap`; latches are
read at the operand addresses ``depth - 7 .. depth - 1``. The sequencer walks a ROM built from
``build_microprogram().segments[name].slots``, one slot per clock, each segment followed by the
cycles that drain its last results, so that a segment lasts exactly its ``.cycles``:

* the ``forward`` request runs ``joint``, ``forward`` and ``local`` back to back;
  ``forward_done`` pulses when the forward outputs are in the register file (the local segment
  goes on); the overflow flag is cleared when the request is taken.
* the ``backward`` request runs ``distal``; ``backward_done`` pulses when it has finished.

Pipeline of one term issued in cycle ``t`` (its slot is the schedule ROM's output register):
operand addresses to the block RAMs (``t``), the words out of the RAMs into registers
(``t + 1``), the operand mux (words, latches, inbox) into the MAC's operand registers
(``t + 2``), partial products (``t + 3``), product (``t + 4``), accumulator (``t + 5``),
round/saturate (``t + 6``), register-file write (``t + 7``); a term issued in ``t + 8`` reads the
result: the microprogram's :class:`~linkdyn.model.microprogram.MacTiming` (latency 8). Every
block-RAM output and every multiplier output is registered before logic uses it (100 MHz on an
ECP5-6). A Lookup or Atan starts its unit in ``t + 2`` with the registered word read from the
register file.

Chain options (:mod:`linkdyn.gateware.chain`; all off by default, the node above):

* ``split_joint``: the ``joint`` request runs ``joint`` alone and ``forward`` runs ``forward``
  and ``local``, so that every node of a chain runs its ``joint`` segment at the start of an
  update, without waiting for its proximal neighbour. ``split_local``: the ``local`` request
  runs ``local`` alone and ``forward`` stops after ``forward`` (finer requests interleave
  better in a pipelined chain).
* ``interlock``: no drain cycles after ``joint``, ``forward`` and ``local`` (the ``distal``
  segment, which ends an update, keeps its drain); instead, an issue that may read a result of
  another segment still in the MAC pipeline stalls until enough cycles have passed since the
  last term of the previous request's last Dot (a per-slot count computed from the schedule,
  in the ROM). Within a segment the schedule never reads a result early; across requests the
  next one may start while the previous one drains.
* ``inbox``: the ``forward_in`` and/or ``backward_in`` words are read from a neighbour's mailbox
  (the ``inbox`` port) instead of the register file. A term that reads an inbox word which is not
  present yet *stalls* the sequencer (the slot is issued again in the next cycle, the MAC sees a
  bubble), so a request may start before its mailbox is complete and run as the words arrive.
* ``banks``: 2 or 4 banks of the registers a sample writes or produces
  (:data:`~linkdyn.model.microprogram.BANKED_KINDS`); every request carries a bank, so the
  segments of several samples can run interleaved (pipelined chain policy) and external writes
  are accepted while the node runs (in cycles without a MAC write).
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH, ceil_log2
from linkdyn.model.microprogram import BANK_COUNTS, LATCHES, SEGMENTS, microprogram
from linkdyn.model.tables import CORDIC

from .cordic import CordicArctangent
from .mac import MultiplyAccumulate, product_alignments
from .sincos import SineCosineLookup
from linkdyn.model.microprogram import node_formats

__all__ = ["LinkDynNode", "ScheduleRom", "RegisterPortSignature", "ResultSnoopSignature",
           "InboxSignature", "RequestSignature", "SLOT_OPS", "COUNTER_WIDTH", "REQUESTS",
           "INBOX_KINDS", "SCHEDULE_ROM_STYLE"]

#: Where the schedule ROM goes, by the Amaranth platform's ``family`` (the platform given to
#: ``elaborate``; ``"logic"`` for any other platform and without one, as in simulation):
#: Spartan-6, one RAMB8BWER (207 x 33 bits fit its 256 x 36), about 150 LUT6 fewer per node
#: (the XC6SLX9 is LUT-bound and has block RAM to spare); elsewhere logic, whose registered
#: output keeps the block RAM's clock-to-output out of the sequencer's paths (the ECP5 at
#: 100 MHz). Both read synchronously with the same clock enable: the same cycles and words.
SCHEDULE_ROM_STYLE = {"spartan6": "block"}

#: Slot operations, encoded as their index in the schedule ROM.
SLOT_OPS = ("nop", "term", "lookup", "atan")

#: Request kinds, in the order of the ``request_kind`` encoding and of taking priority
#: (the last first).
REQUESTS = ("joint", "local", "forward", "backward")

#: Register kinds a node may read from a neighbour's mailbox (``inbox``).
INBOX_KINDS = ("forward_in", "backward_in")

#: Width of the cycle counters, bits.
COUNTER_WIDTH = 16

#: The pipeline the gateware implements, as :class:`~linkdyn.model.microprogram.MacTiming`
#: fields; the microprogram must be scheduled for it.
_PIPELINE = {"read": 2, "multiply": 3, "accumulate": 1, "round": 1, "write": 1}


class RegisterPortSignature(wiring.Signature):
    """Signature of a node's external register port, from the initiator's side (a bus, a test).

    Parameters
    ----------
    addr_width : int
        Register-file address width, bits (:attr:`LinkDynNode.addr_width`).
    banks : int
        Register banks of the node (1: no ``bank`` member).

    Members
    -------
    addr : Out(addr_width)
        Register-file address (the unbanked map).
    bank : Out(range(banks))
        Banked node only: the bank of ``addr`` (for banked registers).
    write_data : Out(signed(32))
        Word to write.
    write_enable : Out(1)
        Write ``write_data`` to ``addr`` (only with ``write_ready``).
    write_ready : In(1)
        A write presented in this cycle is accepted.
    read_data : In(signed(32))
        The word at the ``addr`` of :attr:`LinkDynNode.ext_read_latency` cycles before.
    """

    def __init__(self, addr_width, banks=1):
        members = {"addr": Out(addr_width)}
        if banks > 1:
            members["bank"] = Out(range(banks))
        members.update({
            "write_data": Out(signed(WORD_WIDTH)),
            "write_enable": Out(1),
            "write_ready": In(1),
            "read_data": In(signed(WORD_WIDTH)),
        })
        super().__init__(members)


class ResultSnoopSignature(wiring.Signature):
    """Signature of a node's result snoop port, from the node's side: the MAC's register-file
    writes as they happen (for mailboxes that forward the outputs while the node runs on).

    Parameters
    ----------
    addr_width : int
        Register-file address width, bits.
    banks : int
        Register banks of the node (1: no ``bank`` member).

    Members
    -------
    valid : Out(1)
        The MAC writes ``data`` to ``addr`` in this cycle.
    addr : Out(addr_width)
        The register written (the unbanked map).
    data : Out(signed(32))
        The word written.
    overflow : Out(1)
        With ``valid``: the result saturated.
    bank : Out(range(banks))
        Banked node only: with ``valid``, the bank written.
    """

    def __init__(self, addr_width, banks=1):
        members = {
            "valid": Out(1),
            "addr": Out(addr_width),
            "data": Out(signed(WORD_WIDTH)),
            "overflow": Out(1),
        }
        if banks > 1:
            members["bank"] = Out(range(banks))
        super().__init__(members)


class InboxSignature(wiring.Signature):
    """Signature of a node's inbox port, from the node's (the reader's) side: the words of a
    neighbour's mailbox read as operands.

    Parameters
    ----------
    addr_width : int
        Register-file address width, bits.
    banks : int
        Register banks of the node (mailbox slots).
    message_words : int
        Words of the longest neighbour message (``word`` indexes a message).
    inbox_words : int
        Words of both messages (the width of ``present_words``).

    Members
    -------
    read : Out(1)
        The slot at issue reads the inbox word ``addr`` (its register address) of bank
        ``bank``; the word must be addressed in this cycle and its data given in the next.
    addr : Out(addr_width)
        The register address of the inbox word.
    word : Out(range(message_words))
        The same word as its index in its mailbox message (``forward_in`` / ``backward_in``
        registers in address order: :func:`~linkdyn.gateware.mailbox.message_layout`), from
        the schedule ROM.
    backward : Out(1)
        The inbox word is a ``backward_in`` word (else ``forward_in``).
    bank : Out(range(banks))
        The bank of the running request (the mailbox slot).
    present : In(1)
        The inbox word addressed is present (else the issue stalls); default 1.
    present_words : In(inbox_words)
        Another way to say it (a chain uses this one, a test bench may use either): per word of
        both messages (the ``forward_in`` words, then the ``backward_in`` words, each in message
        order), whether it is present in the mailbox slot of the running request's bank;
        default all ones. The issue stalls unless both say the word is present. A registered
        (late) copy of the mailbox's present bits is fine: a word seen late only stalls longer.
        The word is selected by a one-hot field of the schedule ROM, so the stall depends on no
        address decoding.
    data : In(signed(32))
        The word addressed in the previous cycle.
    """

    def __init__(self, addr_width, banks, message_words, inbox_words):
        super().__init__({
            "read": Out(1),
            "addr": Out(addr_width),
            "word": Out(range(message_words)),
            "backward": Out(1),
            "bank": Out(range(banks)),
            "present": In(1, init=1),
            "present_words": In(inbox_words, init=(1 << inbox_words) - 1),
            "data": In(signed(WORD_WIDTH)),
        })


class RequestSignature(wiring.Signature):
    """Signature of one request of a node (``forward``, ``backward``, ``joint``, ``local``),
    from the requester's side.

    Parameters
    ----------
    banks : int
        Register banks of the node (1: no ``bank`` member).

    Members
    -------
    start : Out(1)
        Make the request pending (sticky until it is taken).
    bank : Out(range(banks))
        Banked node only: the bank of the request, sampled with ``start``.
    ack : In(1)
        Pulses in the cycle the request is taken.
    """

    def __init__(self, banks=1):
        members = {"start": Out(1)}
        if banks > 1:
            members["bank"] = Out(range(banks))
        members["ack"] = In(1)
        super().__init__(members)



class ScheduleRom(wiring.Component):
    """The node's schedule ROM: one slot per row, synchronous read, in logic or block RAM
    (:data:`SCHEDULE_ROM_STYLE`).

    A component of its own so that synthesis keeps the ROM's logic apart from the sequencer
    that computes its address (merged, the two grow larger).

    Parameters
    ----------
    layout : data.StructLayout
        The slot layout.
    rows : list of dict
        The ROM contents.

    Members
    -------
    addr : In(range(len(rows)))
        Row to read.
    en : In(1)
        Read: ``data`` takes the row at ``addr`` in the next cycle (else it holds).
    data : Out(layout)
        The row addressed in the last cycle with ``en``.
    """

    def __init__(self, layout, rows):
        self._layout = layout
        self._rows = list(rows)
        super().__init__({
            "addr": In(range(len(self._rows))),
            "en": In(1, init=1),
            "data": Out(layout),
        })

    def elaborate(self, platform):
        m = Module()
        style = SCHEDULE_ROM_STYLE.get(getattr(platform, "family", None), "logic")
        m.submodules.memory = memory = Memory(
            shape=self._layout, depth=len(self._rows), init=self._rows,
            attrs={"rom_style": style})
        port = memory.read_port()
        m.d.comb += [port.addr.eq(self.addr), port.en.eq(self.en), self.data.eq(port.data)]
        return m


class LinkDynNode(wiring.Component):
    """One LinkDyn node: register file, schedule ROM, sequencer, shared MAC, sine table, CORDIC.

    Requests: a cycle with ``forward.start`` (``backward.start``, ``joint.start``,
    ``local.start``) high makes the request pending (sticky). While the node is idle and
    ``hold`` is low, a pending request is taken (backward first, then forward, local, joint):
    ``forward.ack`` (``backward.ack``, ...) pulses for that cycle, and the run starts in the
    next. A request input high in the cycle its request is taken belongs to that request (a
    trigger held until its acknowledge starts one run). A running computation is never
    interrupted; requests arriving meanwhile wait.

    External port (``ext``): ``ext.addr`` selects a register-file word. A write
    (``ext.write_enable``) is accepted in a cycle with ``ext.write_ready`` (while ``ready``; in
    a banked node, in every cycle without a MAC write), else ignored. ``ext.read_data`` is the
    word at the ``ext.addr`` of :attr:`ext_read_latency` (2) cycles before if the node was not
    ``busy`` in that cycle (while busy it shows the sequencer's operands): the block RAM's read
    and the register behind it. ``result`` shows every register-file write of the MAC as it
    happens, e.g. for a mailbox that forwards the outputs while the node runs on.

    Parameters
    ----------
    fmt : QFormat
        Word format of the node (default Q15.16); its width must be 32 bits.
    split_joint : bool
        The ``joint`` request runs the ``joint`` segment; ``forward`` no longer does.
    split_local : bool
        The ``local`` request runs the ``local`` segment; ``forward`` no longer does.
    interlock : bool
        Drop the drain cycles after ``joint``, ``forward`` and ``local``; stall an issue that
        may read a result of the previous request still in the MAC pipeline (see the module
        docstring).
    inbox : sequence of str
        Register kinds of :data:`INBOX_KINDS` read from the ``inbox`` port (a neighbour's
        mailbox) instead of the register file.
    banks : int
        Register banks: 1 (no banks), 2 or 4 copies of the registers of
        :data:`~linkdyn.model.microprogram.BANKED_KINDS`
        (:meth:`~linkdyn.model.microprogram.RegisterMap.bank_address`), chosen per request.
    cordic_step_cycles : int
        Cycles per step of the CORDIC (:class:`~linkdyn.gateware.cordic.CordicArctangent`'s
        ``step_cycles``): 2 (default, every shift and addition registered: 100 MHz on an ECP5)
        or 1 (fewer LUT6 on a Spartan-6; per family: :data:`linkdyn.gateware.cordic.
        STEP_CYCLES`). Only the CORDIC's latency
        changes (49 or 25 cycles, both within the schedule's ``MacTiming.atan``), not the
        schedule, the cycle counts or the results.

    Members
    -------
    forward : In(RequestSignature(banks))
        Request ``joint``, ``forward``, ``local`` (without the segments split off): ``start``,
        ``bank`` (banked node: sampled with ``start``), ``ack`` (pulses in the cycle the request
        is taken).
    backward : In(RequestSignature(banks))
        Request ``distal``.
    joint, local : In(RequestSignature(banks))
        With ``split_joint`` (``split_local``): request ``joint`` (``local``).
    hold : In(1)
        Take no pending request (the running one goes on): the node becomes idle, e.g. for
        external reads.
    forward_done : Out(1)
        Pulses in the first cycle the forward outputs (``omega``, ``omega_dot``, ``p_ddot``)
        are in the register file (without ``interlock``; with it, after their last issue).
    backward_done : Out(1)
        Pulses in the first cycle after the distal segment (``tau``, ``f_out``, ``mu_out``
        written); the node is idle again.
    request_done : Out(1)
        Pulses in the first cycle after any run; ``request_kind`` (index in :data:`REQUESTS`)
        and ``request_bank`` (banked node) say which.
    busy : Out(1)
        A request runs.
    bank : Out(range(banks))
        Banked node: the bank of the running (or last) request.
    segment : Out(range(4))
        While ``busy``: index in :data:`~linkdyn.model.microprogram.SEGMENTS` of the segment
        that runs (its slots and its drain cycles).
    ready : Out(1)
        Idle with no request pending.
    overflow : Out(1)
        Sticky: some result saturated since the last request that runs ``joint`` was taken.
    forward_cycles, backward_cycles : Out(16)
        Duration of the last forward (backward) run, clock cycles from its first issue to its
        last write (stall cycles included).
    ext : In(RegisterPortSignature(addr_width, banks))
        The external register port: ``addr``, ``bank`` (banked node), ``write_data``,
        ``write_enable``, ``write_ready``, ``read_data``.
    result : Out(ResultSnoopSignature(addr_width, banks))
        The MAC's register-file writes as they happen: ``valid``, ``addr``, ``data``,
        ``overflow``, ``bank`` (banked node).
    inbox : Out(InboxSignature(addr_width, banks, message_words, inbox_words))
        With ``inbox``: the neighbour mailboxes' words, read as operands (``message_words``:
        the longest message of the register map, 9; ``inbox_words``: both messages, 15).
    stall : Out(1)
        The slot at issue waits (inbox word missing, or operand interlock).

    Raises
    ------
    TypeError
        If ``fmt`` is not a :class:`~linkdyn.model.fixedpoint.QFormat`.
    ValueError
        If ``fmt`` is not 32 bits wide, or the microprogram was scheduled for another pipeline
        than this gateware's (``MacTiming``), or the table/CORDIC latency does not fit it, or
        ``inbox`` names another kind than :data:`INBOX_KINDS`, or ``banks`` is not 1, 2 or 4,
        or ``cordic_step_cycles`` is not 1 or 2.
    """

    #: Cycles from ``ext.addr`` to its word on ``ext.read_data`` (block-RAM read, register).
    ext_read_latency = 2

    def __init__(self, fmt=None, *, split_joint=False, split_local=False, interlock=False,
                 inbox=(), banks=1, cordic_step_cycles=2):
        fmt = node_formats(fmt)
        if isinstance(inbox, str):
            inbox = (inbox,)
        inbox = tuple(inbox)
        for kind in inbox:
            if kind not in INBOX_KINDS:
                raise ValueError(f"inbox kinds must be of {INBOX_KINDS!r}, not {kind!r}")
        if banks not in BANK_COUNTS:
            raise ValueError(f"banks must be one of {BANK_COUNTS}, not {banks!r}")
        # One check of the step timing, the CORDIC's own (its message names this parameter).
        CordicArctangent.check_step_cycles(cordic_step_cycles, name="cordic_step_cycles")

        program = microprogram(fmt)
        timing = program.timing
        for field, cycles in _PIPELINE.items():
            if getattr(timing, field) != cycles:
                raise ValueError(f"the microprogram is scheduled for "
                                 f"{field}={getattr(timing, field)}"
                                 f" cycles; this gateware has {cycles}")
        # A latch is read in the read stage of a term issued `lookup` (`atan`) cycles after the
        # op, which itself starts the unit in its own read stage.
        if SineCosineLookup.latency > timing.lookup:
            raise ValueError(f"the sine table needs {SineCosineLookup.latency} cycles, the "
                             f"schedule allows {timing.lookup}")
        atan_latency = CordicArctangent.latency_of(CORDIC, cordic_step_cycles)
        if atan_latency > timing.atan:
            raise ValueError(f"the CORDIC needs {atan_latency} cycles, "
                             f"the schedule allows {timing.atan}")
        self._fmt = fmt
        self._program = program
        self._split_joint = bool(split_joint)
        self._split_local = bool(split_local)
        self._interlock = bool(interlock)
        self._inbox = tuple(kind for kind in INBOX_KINDS if kind in inbox)
        self._banks = banks
        self._banked = banks > 1
        self._cordic_step_cycles = cordic_step_cycles
        self._bank_bits = ceil_log2(banks)
        rmap = program.registers
        self._addr_width = ceil_log2(rmap.depth)
        # The neighbour messages of the register map: the longest one (the forward one, omega,
        # omega_dot, p_ddot) sizes a word index, both together the inbox's present bits.
        self._message_words = max(len(rmap.forward_message), len(rmap.backward_message))
        self._inbox_words = len(rmap.forward_message) + len(rmap.backward_message)
        fields = {
            "op": range(len(SLOT_OPS)),
            "a": self._addr_width,
            "b": self._addr_width,
            "add": 1,
            "negate": 1,
            "align": range(len(program.aligns)),
            "last": 1,
            "dst": self._addr_width,
            "shift": range(len(program.shifts)),
            "wraps": 1,
        }
        if self._banked:
            fields.update({"a_banked": 1, "b_banked": 1})
        if self._inbox:
            fields.update({"b_inbox": 1, "b_word": range(self._message_words),
                           "b_backward": 1, "b_wait_on": self._inbox_words})
        if self._interlock:
            fields["wait"] = range(program.timing.latency + 1)
        self._slot_layout = data.StructLayout(fields)
        drains = ("distal",) if self._interlock else SEGMENTS
        self._rom, self._segment_start, self._latch_sides = self._build_rom(
            program, self._inbox, self._banked, drains,
            program.timing.latency if self._interlock else 0)
        if self._interlock:
            self._check_atan_without_drains()
        # Requests: name -> (first segment, last segment), in taking priority order (last
        # first).
        spans = {"backward": ("distal", "distal")}
        first = "forward" if self._split_joint else "joint"
        last = "forward" if self._split_local else "local"
        spans["forward"] = (first, last)
        if self._split_local:
            spans["local"] = ("local", "local")
        if self._split_joint:
            spans["joint"] = ("joint", "joint")
        self._requests = {name: spans[name] for name in REQUESTS if name in spans}
        members = {"hold": In(1)}
        for name in self._requests:
            members[name] = In(RequestSignature(banks))
        members.update({
            "forward_done": Out(1),
            "backward_done": Out(1),
            "request_done": Out(1),
            "request_kind": Out(range(len(REQUESTS))),
            "busy": Out(1),
            "stall": Out(1),
            "segment": Out(range(len(SEGMENTS))),
            "ready": Out(1),
            "overflow": Out(1),
            "forward_cycles": Out(COUNTER_WIDTH),
            "backward_cycles": Out(COUNTER_WIDTH),
            "ext": In(RegisterPortSignature(self._addr_width, banks)),
            "result": Out(ResultSnoopSignature(self._addr_width, banks)),
        })
        if self._banked:
            members.update({"bank": Out(range(banks)), "request_bank": Out(range(banks))})
        if self._inbox:
            members["inbox"] = Out(InboxSignature(self._addr_width, banks, self._message_words,
                                                  self._inbox_words))
        super().__init__(members)

    @staticmethod
    def _build_rom(program, inbox=(), banked=False, drains=SEGMENTS, interlock=0):
        """Return the schedule ROM (a list of slot dicts), each segment's start address, and
        the latches read on each operand side.

        The slots of the segments in ``drains`` are followed by NOPs up to the segment's
        ``.cycles``; a Dot's ``shift`` and ``wraps`` are given with its first and its last term
        (the MAC samples them there). Fields a slot does not use repeat the previous slot's
        value, which makes the ROM's logic smaller. ``first`` is not stored: a term is the first
        of its Dot unless the term issued before it is not the last of its Dot (a Dot's terms
        issue in order, stall bubbles aside). A term that reads an ``inbox`` word on side ``a``
        has its operands swapped (products and sums are symmetric), so that inbox words are
        always read on side ``b``. With ``interlock`` (the MAC latency), ``wait`` is, for a
        slot that reads a result of another segment, the cycles that must have passed since the
        last term of the previous request's last Dot issued (``interlock`` minus the slots
        between the result's own last term and that one, when the previous request is the
        producing segment; any other request in between only adds time), 0 if the slot can
        never issue that early.

        Raises
        ------
        ValueError
            If the schedule does not issue a Dot's terms on consecutive cycles, or a term reads
            two inbox words.
        """
        rmap = program.registers
        by_address = {reg.address: reg for reg in rmap if reg.address is not None}

        def is_inbox(address):
            reg = by_address.get(address)
            return reg is not None and reg.kind in inbox

        def is_banked(address):
            reg = by_address.get(address)
            return reg is not None and rmap.banked(reg.name)

        rows = []
        starts = {}
        latch_addresses = {rmap.operand_address(name): name for name in LATCHES}
        # Producer segment of every Dot result, and its "tail": slots from its last term to the
        # last term of the segment's last Dot.
        produced = {}
        for name in SEGMENTS:
            lasts = [index for index, slot in enumerate(program.segments[name].slots)
                     if slot.op == "term" and slot.last]
            for index in lasts:
                produced[program.segments[name].slots[index].dst] = (name, lasts[-1] - index)
        sides = {"a": set(), "b": set()}
        for name in SEGMENTS:
            segment = program.segments[name]
            starts[name] = len(rows)
            dot_shift = []  # per slot, the shift and wrap of the Dot it belongs to
            shift = wraps = None
            for slot in reversed(segment.slots):
                if slot.op == "term" and slot.last:
                    shift, wraps = program.shifts.index(slot.shift), int(slot.wraps)
                dot_shift.append((shift, wraps))
            dot_shift.reverse()
            open_dot = False
            for slot, (shift, wraps) in zip(segment.slots, dot_shift):
                is_term = slot.op == "term"
                if is_term and slot.first == open_dot:
                    raise ValueError(f"segment {name}: the terms of a Dot must issue on "
                                     f"consecutive cycles")
                open_dot = is_term and not slot.last
                row = {"op": SLOT_OPS.index(slot.op)}
                if slot.op in ("lookup", "atan"):
                    row["a"] = slot.a
                    if banked:
                        row["a_banked"] = int(is_banked(slot.a))
                elif slot.op == "term":
                    a, b = slot.a, slot.b
                    if is_inbox(a):
                        if is_inbox(b):
                            raise ValueError(f"segment {name}: a term reads two inbox words")
                        a, b = b, a
                    for side, address in (("a", a), ("b", b)):
                        if address in latch_addresses:
                            sides[side].add(latch_addresses[address])
                    row.update({
                        "a": a,
                        "b": b,
                        "add": int(slot.kind == "add"),
                        "negate": int(slot.negate),
                        "align": program.aligns.index(slot.align),
                        "last": int(slot.last),
                    })
                    if banked:
                        row.update({"a_banked": int(is_banked(a)), "b_banked": int(is_banked(b))})
                    if inbox:
                        row["b_inbox"] = int(is_inbox(b))
                        row["b_wait_on"] = 0
                        if is_inbox(b):
                            kind = by_address[b].kind
                            words = [reg.address for reg in rmap.of_kind(kind)]
                            offset = (0 if kind == "forward_in"
                                      else len(rmap.forward_message))
                            row.update({"b_word": words.index(b),
                                        "b_backward": int(kind == "backward_in"),
                                        "b_wait_on": 1 << (offset + words.index(b))})
                    if slot.last:
                        row["dst"] = slot.dst
                        if banked and not is_banked(slot.dst):
                            raise ValueError(f"segment {name}: result {slot.dst} is not banked")
                    if slot.first or slot.last:
                        row.update({"shift": shift, "wraps": wraps})
                if inbox and slot.op != "term":
                    row.update({"b_inbox": 0, "b_wait_on": 0})
                if interlock:
                    reads = []
                    if slot.op in ("lookup", "atan", "term"):
                        reads.append(row["a"])
                    if slot.op == "term" and not row.get("b_inbox"):
                        reads.append(row["b"])
                    wait = max((interlock - produced[address][1] for address in reads
                                if address in produced and produced[address][0] != name),
                               default=0)
                    # The slot at offset k issues at least k + 2 cycles after that last term.
                    row["wait"] = wait if wait > len(rows) - starts[name] + 2 else 0
                rows.append(row)
            if name in drains:
                nop = {"op": SLOT_OPS.index("nop")}
                if inbox:
                    nop.update({"b_inbox": 0, "b_wait_on": 0})
                if interlock:
                    nop["wait"] = 0
                rows += [nop] * (segment.cycles - len(segment.slots))
        starts["end"] = len(rows)
        rom = []
        previous = dict.fromkeys(("a", "b", "add", "negate", "align", "last", "dst", "shift",
                                  "wraps") + (("b_word", "b_backward") if inbox else ()), 0)
        for row in rows:
            previous = {**previous, **row}
            rom.append(previous)
        latch_sides = {side: tuple(name for name in LATCHES if name in used)
                       for side, used in sides.items()}
        return rom, starts, latch_sides

    def _check_atan_without_drains(self):
        """Check that, without drain cycles, the CORDIC result still comes before its read
        (requests in between can only add cycles)."""
        atan = self._program.registers.operand_address("atan")
        issued = read = None
        for address, row in enumerate(self._rom):
            if row["op"] == SLOT_OPS.index("atan") and issued is None:
                issued = address
            elif (issued is not None and row["op"] == SLOT_OPS.index("term")
                  and atan in (row["a"], row["b"])):
                read = address
                break
        if issued is not None and read - issued < self._program.timing.atan:
            raise ValueError(f"without drains the CORDIC result is read {read - issued} cycles "
                             f"after its start, before it is ready")

    @property
    def fmt(self):
        """QFormat: the node's word format."""
        return self._fmt

    @property
    def program(self):
        """Microprogram: the microprogram the node executes."""
        return self._program

    @property
    def requests(self):
        """dict of str to (str, str): the node's requests, ``name: (first, last segment)``."""
        return dict(self._requests)

    @property
    def inbox_kinds(self):
        """tuple of str: the register kinds read from the ``inbox`` port."""
        return self._inbox

    @property
    def banks(self):
        """int: register banks (1: none)."""
        return self._banks

    @property
    def interlock(self):
        """bool: no drains between segments, operand interlock instead."""
        return self._interlock

    @property
    def cordic_step_cycles(self):
        """int: cycles per CORDIC step (1 or 2)."""
        return self._cordic_step_cycles

    @property
    def addr_width(self):
        """int: register-file address width, bits."""
        return self._addr_width

    @property
    def rom(self):
        """list of dict: the schedule ROM contents, one slot per clock cycle."""
        return list(self._rom)

    @property
    def segment_start(self):
        """dict of str to int: ROM address of each segment's first slot (and ``"end"``)."""
        return dict(self._segment_start)

    def _segment_index(self, name):
        return SEGMENTS.index(name)

    def request_span(self, name):
        """Return the ROM addresses ``(first, last)`` of a request's run (no stalls)."""
        first, last = self._requests[name]
        following = SEGMENTS[SEGMENTS.index(last) + 1] if last != SEGMENTS[-1] else "end"
        return self._segment_start[first], self._segment_start[following] - 1

    def request_cycles(self, name):
        """Return the cycles of a request's run without stalls."""
        first, last = self.request_span(name)
        return last - first + 1

    @property
    def forward_request_cycles(self):
        """int: cycles of a forward request without stalls (default node: ``joint + forward +
        local`` ``.cycles``)."""
        return self.request_cycles("forward")

    @property
    def backward_request_cycles(self):
        """int: cycles of a backward request without stalls, ``distal.cycles``."""
        return self.request_cycles("backward")

    def elaborate(self, platform):
        m = Module()
        program = self._program
        m.submodules.mac = mac = MultiplyAccumulate(
            aligns=program.aligns, product_aligns=product_alignments(program),
            shifts=program.shifts, max_terms=program.max_terms,
            tag_width=self._addr_width + self._bank_bits)
        m.submodules.sincos = sincos = SineCosineLookup()
        m.submodules.cordic = cordic = CordicArctangent(step_cycles=self._cordic_step_cycles)
        (read_a, write_a), (read_b, write_b) = self._elaborate_register_file(m)
        # The schedule ROM, read one cycle ahead: its output register holds the slot of `pc`,
        # the slot that issues in this cycle (see _elaborate_sequencer for its address).
        m.submodules.schedule = rom_port = ScheduleRom(self._slot_layout, self._rom)
        sequencer = self._elaborate_sequencer(m, rom_port, mac)
        ext_address, word_a, word_b = self._elaborate_issue(m, sequencer, read_a, read_b)
        self._elaborate_stall(m, sequencer)
        fetched = self._elaborate_pipeline(m, sequencer)
        operand_a, operand_b = self._elaborate_operand_mux(m, sequencer.slot, word_a, word_b,
                                                           sincos, cordic)
        self._elaborate_execute(m, fetched, operand_a, operand_b, word_a, mac, sincos, cordic)
        self._elaborate_write_back(m, mac, write_a, write_b, ext_address)
        return m

    def _physical(self, address, is_banked, which_bank):
        """Return the block-RAM address of register ``address`` in bank ``which_bank`` (if
        ``is_banked``): the bank number above the unbanked map's address bits."""
        if not self._banked:
            return address
        return Cat(address, which_bank & is_banked.replicate(self._bank_bits))

    def _elaborate_register_file(self, m):
        """Add the register file: two block-RAM copies, one read port each, written together.

        Returns ``((read_a, write_a), (read_b, write_b))``.
        """
        depth = self._program.registers.banked_depth(self._banks)
        copies = []
        for name in ("registers_a", "registers_b"):
            memory = Memory(shape=signed(WORD_WIDTH), depth=depth, init=[])
            m.submodules[name] = memory
            copies.append((memory.read_port(), memory.write_port()))
        return copies

    def _elaborate_sequencer(self, m, rom_port, mac):
        """Add the sequencer: pending requests and their take, the program counter, the
        schedule ROM's address, the done pulses and cycle counters, ``segment``.

        The ROM is addressed with `pc + 1` while running (the first slot of the pending request
        a take would pick while idle) whatever happens, and a stall only disables its output
        register. The address itself is a register, computed a cycle earlier from the next
        `pc`, running flag and pending requests, so that no adder, stall or take decision comes
        before the ROM's logic.

        Returns
        -------
        _Sequencer
            The slot at issue and the sequencer state the later stages use.
        """
        starts = self._segment_start
        slot = rom_port.data
        pc = Signal(range(len(self._rom)))
        pc_next = Signal.like(pc)
        rom_addr = Signal(range(len(self._rom) + 1))
        running = Signal()
        running_next = Signal()
        kind = Signal(range(len(REQUESTS)))  # the running (last) request
        bank = Signal(range(self._banks))
        count = Signal(COUNTER_WIDTH)
        idle = ~running
        stall = Signal()
        names = list(self._requests)
        pending = {name: Signal(name=f"pending_{name}") for name in names}
        pending_bank = {name: Signal.like(bank, name=f"pending_{name}_bank") for name in names}
        take = {}
        blocked = self.hold | running
        for name in reversed(names):  # backward first
            take[name] = Signal(name=f"take_{name}")
            m.d.comb += take[name].eq(~blocked & pending[name])
            blocked = blocked | pending[name]
        take_any = Cat(*take.values()).any()
        update_start = "joint" if self._split_joint else "forward"
        m.d.comb += [
            self.busy.eq(running),
            self.stall.eq(stall),
            self.ready.eq(idle & ~Cat(*pending.values()).any()),
            rom_port.addr.eq(rom_addr),
            rom_port.en.eq(~stall),
            mac.clear_overflow.eq(take[update_start]),
            self.overflow.eq(mac.overflow),
            self.request_kind.eq(kind),
        ]
        for name in names:
            request = getattr(self, name)
            m.d.comb += request.ack.eq(take[name])
            m.d.sync += pending[name].eq((pending[name] | request.start) & ~take[name])
            if self._banked:
                with m.If(request.start):
                    m.d.sync += pending_bank[name].eq(request.bank)
        if self._banked:
            m.d.comb += [self.bank.eq(bank), self.request_bank.eq(bank)]
        m.d.sync += [
            self.forward_done.eq(0),
            self.backward_done.eq(0),
            self.request_done.eq(0),
            pc.eq(pc_next),
            running.eq(running_next),
        ]

        # While idle the ROM reads the first slot of the pending request of highest priority:
        # the one a take picks (`hold` and `running` only decide whether, not which), so the
        # ROM's address does not depend on the take decision. The address register takes, a
        # cycle ahead, the value `Mux(running, pc + 1, pending_start)` will have: while running
        # it is `pc + 1`, so a stall only holds it (a clock enable, not a term of its value):
        # after a take the taken request's second row, after an issue `pc + 2` or, if that
        # issue ends the request, the first row of the next pending request.
        pending_start_next = Signal.like(rom_addr)
        for name in names:  # the last (highest priority) pending one wins
            with m.If((pending[name] | getattr(self, name).start) & ~take[name]):
                m.d.comb += pending_start_next.eq(self.request_span(name)[0])
        at_end = Signal()  # the slot of `pc` is the last of the running request
        for name in names:
            with m.If((kind == REQUESTS.index(name)) & (pc == self.request_span(name)[1])):
                m.d.comb += at_end.eq(1)
        taken_second = Signal.like(rom_addr)
        for name in names:
            with m.If(take[name]):
                m.d.comb += taken_second.eq(self.request_span(name)[0] + 1)
        with m.If(~(running & stall)):
            with m.If(take_any):
                m.d.sync += rom_addr.eq(taken_second)
            with m.Elif(running & ~at_end):
                m.d.sync += rom_addr.eq(pc + 2)
            with m.Else():
                m.d.sync += rom_addr.eq(pending_start_next)

        m.d.comb += [pc_next.eq(pc), running_next.eq(running)]
        with m.If(take_any):
            for name in names:
                with m.If(take[name]):
                    m.d.comb += pc_next.eq(self.request_span(name)[0])
                    m.d.sync += [kind.eq(REQUESTS.index(name)), bank.eq(pending_bank[name])]
            m.d.comb += running_next.eq(1)
            m.d.sync += count.eq(0)
        with m.Elif(running):
            m.d.sync += count.eq(count + 1)
            with m.If(~stall):
                m.d.comb += pc_next.eq(pc + 1)
                forward_first, _ = self._requests["forward"]
                if SEGMENTS.index(forward_first) <= SEGMENTS.index("forward"):
                    with m.If((kind == REQUESTS.index("forward"))
                              & (pc == starts["local"] - 1)):
                        m.d.sync += self.forward_done.eq(1)
                with m.If(at_end):
                    m.d.comb += running_next.eq(0)
                    m.d.sync += self.request_done.eq(1)
                for name in ("forward", "backward"):
                    if name not in names:
                        continue
                    with m.If(at_end & (kind == REQUESTS.index(name))):
                        m.d.sync += getattr(self, f"{name}_cycles").eq(count + 1)
                        if name == "backward":
                            m.d.sync += self.backward_done.eq(1)

        for index, name in enumerate(SEGMENTS[1:], start=1):
            with m.If(pc >= starts[name]):
                m.d.comb += self.segment.eq(index)
        return _Sequencer(slot=slot, running=running, bank=bank, stall=stall, take_any=take_any)

    def _elaborate_issue(self, m, sequencer, read_a, read_b):
        """Add the issue stage: operand addresses to the block RAMs (the external port's
        address while idle), the words read registered behind them.

        Returns ``(ext_address, word_a, word_b)``: the external port's block-RAM address and
        the two words read.
        """
        rmap = self._program.registers
        slot, bank = sequencer.slot, sequencer.bank
        ext_banked = Signal()
        if self._banked:
            for start, stop in rmap.banked_ranges:
                with m.If((self.ext.addr >= start) & (self.ext.addr < stop)):
                    m.d.comb += ext_banked.eq(1)
        ext_address = self._physical(self.ext.addr, ext_banked,
                                     self.ext.bank if self._banked else 0)
        slot_a = self._physical(slot.a, slot.a_banked if self._banked else None, bank)
        slot_b = self._physical(slot.b, slot.b_banked if self._banked else None, bank)
        # The words read, registered behind the block RAMs (the read stage's second cycle).
        word_a = Signal(signed(WORD_WIDTH), name="word_a")
        word_b = Signal(signed(WORD_WIDTH), name="word_b")
        m.d.sync += [word_a.eq(read_a.data), word_b.eq(read_b.data)]
        m.d.comb += [
            read_a.addr.eq(Mux(sequencer.running, slot_a, ext_address)),
            read_b.addr.eq(slot_b),
            self.ext.read_data.eq(word_a),
        ]
        return ext_address, word_a, word_b

    def _elaborate_stall(self, m, sequencer):
        """Drive the sequencer's stall: an inbox word not present yet (``inbox``); an operand
        still in the MAC pipeline (``interlock``)."""
        slot, running, stall = sequencer.slot, sequencer.running, sequencer.stall
        is_term_slot = slot.op == SLOT_OPS.index("term")
        stall_terms = []
        if self._inbox:
            reads_inbox = is_term_slot & slot.b_inbox
            m.d.comb += [
                self.inbox.read.eq(running & reads_inbox),
                self.inbox.addr.eq(slot.b),
                self.inbox.word.eq(slot.b_word),
                self.inbox.backward.eq(slot.b_backward),
                self.inbox.bank.eq(sequencer.bank),
            ]
            stall_terms.append(reads_inbox & ~self.inbox.present)
            stall_terms.append(is_term_slot & (slot.b_wait_on & ~self.inbox.present_words).any())
        if self._interlock:
            # A request's first slots may read results of the request before it that are still
            # in the MAC pipeline (no drain cycles between requests): a slot stalls until
            # `slot.wait` cycles (static, from the schedule: see _build_rom) have passed since
            # the last term of the previous request's last Dot issued. Within a request the
            # schedule never reads a result early. `age`: cycles since the last term of a Dot
            # issued; `since`: the same, counted from the previous request's last one (both
            # saturate at `latency`). No address comparison: the stall is a small compare of
            # registers. The stall (a function of the ROM word and the mailbox's present bits)
            # ends at one flip-flop, `issued_last`: `age` is 1 in the cycle after such an issue,
            # else `counted`, and `age + 1` (saturated), the next `counted`, is what `since`
            # takes when a request is taken.
            latency = self._program.timing.latency
            issued_last = Signal()
            counted = Signal(range(latency + 1), init=latency)
            age_next = Signal.like(counted)
            since = Signal(range(latency + 1), init=latency)
            m.d.sync += issued_last.eq(running & ~stall & is_term_slot & slot.last)
            m.d.comb += age_next.eq(Mux(issued_last, 2,
                                        Mux(counted == latency, latency, counted + 1)))
            m.d.sync += counted.eq(age_next)
            with m.If(sequencer.take_any):
                m.d.sync += since.eq(age_next)
            with m.Elif(since != latency):
                m.d.sync += since.eq(since + 1)
            stall_terms.append(since < slot.wait)
        if stall_terms:
            m.d.comb += stall.eq(running & Cat(*stall_terms).any())

    def _elaborate_pipeline(self, m, sequencer):
        """Add the slot's pipeline registers: it follows its operands, `issued` while the block
        RAMs read, `fetched` when the words are in their registers and go to the MAC.

        Returns
        -------
        _Fetched
            The fetched slot and what is decoded from it.
        """
        term_op = SLOT_OPS.index("term")
        bank = sequencer.bank
        issued = Signal(self._slot_layout, name="issued")
        issued_valid = Signal()
        issued_bank = Signal.like(bank)
        fetched = Signal(self._slot_layout, name="fetched")
        fetched_valid = Signal()
        fetched_bank = Signal.like(bank)
        m.d.sync += [issued.eq(sequencer.slot),
                     issued_valid.eq(sequencer.running & ~sequencer.stall),
                     issued_bank.eq(bank),
                     fetched.eq(issued), fetched_valid.eq(issued_valid),
                     fetched_bank.eq(issued_bank)]
        is_term = fetched_valid & (fetched.op == term_op)
        # A term opens a Dot unless the term before it left one open (stall bubbles between the
        # terms of a Dot do not close it).
        dot_open = Signal()
        with m.If(is_term):
            m.d.sync += dot_open.eq(~fetched.last)
        is_lookup = fetched_valid & (fetched.op == SLOT_OPS.index("lookup"))
        is_atan = fetched_valid & (fetched.op == SLOT_OPS.index("atan"))
        return _Fetched(slot=fetched, bank=fetched_bank, is_term=is_term, dot_open=dot_open,
                        is_lookup=is_lookup, is_atan=is_atan)

    def _elaborate_operand_mux(self, m, slot, word_a, word_b, sincos, cordic):
        """Add the operand mux of the read stage: the block-RAM word, a latch at the top of the
        address space, or the inbox word, all from registers. The source a term reads is
        decoded from its slot at issue and registered as a small index (0: the block RAM), so
        the mux itself has few select inputs.

        Returns ``(operand_a, operand_b)``.
        """
        rmap = self._program.registers
        latch_values = {
            "sin_base": sincos.sin_base, "sin_delta": sincos.sin_delta,
            "sin_fraction": sincos.sin_fraction, "cos_base": sincos.cos_base,
            "cos_delta": sincos.cos_delta, "cos_fraction": sincos.cos_fraction,
            "atan": cordic.result,
        }
        inbox_word = Signal(signed(WORD_WIDTH), name="inbox_word")
        if self._inbox:
            m.d.sync += inbox_word.eq(self.inbox.data)
        operands = []
        for side, word in (("a", word_a), ("b", word_b)):
            # Only the latches the program reads on this side get a mux input.
            sources = list(self._latch_sides[side])
            values = [latch_values[name] for name in sources]
            inbox_index = None
            if side == "b" and self._inbox:
                values.append(inbox_word)
                inbox_index = len(values)
            select = Signal(range(len(values) + 1), name=f"select_{side}")
            select_issued = Signal.like(select, name=f"select_{side}_issued")
            select_fetched = Signal.like(select, name=f"select_{side}_fetched")
            with m.Switch(getattr(slot, side)):
                for index, name in enumerate(sources, start=1):
                    with m.Case(rmap.operand_address(name)):
                        m.d.comb += select.eq(index)
            if inbox_index is not None:
                with m.If(slot.b_inbox):
                    m.d.comb += select.eq(inbox_index)
            m.d.sync += [select_issued.eq(select), select_fetched.eq(select_issued)]
            operand = Signal(signed(WORD_WIDTH), name=f"operand_{side}")
            with m.Switch(select_fetched):
                for index, value in enumerate(values, start=1):
                    with m.Case(index):
                        m.d.comb += operand.eq(value)
                with m.Default():
                    m.d.comb += operand.eq(word)
            operands.append(operand)
        return tuple(operands)

    def _elaborate_execute(self, m, fetched, operand_a, operand_b, word_a, mac, sincos, cordic):
        """Feed the fetched slot to its unit: a term to the MAC, a Lookup to the sine table, an
        Atan to the CORDIC."""
        slot = fetched.slot
        term = mac.term.payload
        m.d.comb += [
            mac.term.valid.eq(fetched.is_term),
            term.a.eq(operand_a),
            term.b.eq(operand_b),
            term.add.eq(slot.add),
            term.negate.eq(slot.negate),
            term.align.eq(slot.align),
            term.first.eq(~fetched.dot_open),
            term.last.eq(slot.last),
            term.shift.eq(slot.shift),
            term.wraps.eq(slot.wraps),
            term.tag.eq(self._physical(slot.dst, Const(1, 1), fetched.bank)),
            # Lookup and Atan read a register (phase, k qd): the block RAM's word.
            sincos.start.eq(fetched.is_lookup),
            sincos.phase.eq(word_a),
            cordic.start.eq(fetched.is_atan),
            cordic.x.eq(word_a),
        ]

    def _elaborate_write_back(self, m, mac, write_a, write_b, ext_address):
        """Add the register-file writes: MAC results, or the external port (while ready;
        banked: in any cycle without a MAC result); and the result snoop port."""
        result = mac.result
        m.d.comb += self.ext.write_ready.eq(~result.valid if self._banked else self.ready)
        ext_write = self.ext.write_enable & self.ext.write_ready
        for port in (write_a, write_b):
            m.d.comb += [
                port.en.eq(result.valid | ext_write),
                port.addr.eq(Mux(result.valid, result.payload.tag, ext_address)),
                port.data.eq(Mux(result.valid, result.payload.data, self.ext.write_data)),
            ]
        m.d.comb += [
            self.result.valid.eq(result.valid),
            self.result.addr.eq(result.payload.tag[:self._addr_width]),
            self.result.data.eq(result.payload.data),
            self.result.overflow.eq(result.payload.overflow),
        ]
        if self._banked:
            m.d.comb += self.result.bank.eq(result.payload.tag[self._addr_width:])


@dataclass(frozen=True)
class _Sequencer:
    """The sequencer's signals the later stages of :meth:`LinkDynNode.elaborate` use."""

    slot: object       #: the slot at issue (the schedule ROM's output register)
    running: object    #: a request runs
    bank: object       #: the bank of the running request
    stall: object      #: the slot at issue waits (driven by _elaborate_stall)
    take_any: object   #: a pending request is taken in this cycle


@dataclass(frozen=True)
class _Fetched:
    """The slot whose operands go to its unit in this cycle, and what is decoded from it."""

    slot: object       #: the slot (schedule ROM layout)
    bank: object       #: its request's bank
    is_term: object    #: a term is valid
    dot_open: object   #: the term before it left its Dot open (this one is not the first)
    is_lookup: object  #: a Lookup is valid
    is_atan: object    #: an Atan is valid
