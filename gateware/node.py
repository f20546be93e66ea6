"""The LinkDyn node: one link's inverse dynamics, sequenced from the microprogram's schedule.

Structure (source paper Fig. 5-6; DESIGN.md Sect. 5)::

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

* ``start_forward`` runs ``joint``, ``forward`` and ``local`` back to back;
  ``forward_done`` pulses when the forward outputs are in the register file (the local segment
  goes on); the overflow flag is cleared when the request is taken.
* ``start_backward`` runs ``distal``; ``backward_done`` pulses when it has finished.

Pipeline of one term issued in cycle ``t`` (its slot is the schedule ROM's output register):
operand addresses to the block RAMs (``t``), operands out of the RAMs or latches, into the MAC's
operand registers (``t + 1``), product (``t + 2``), accumulator (``t + 3``), round/saturate
(``t + 4``), register-file write (``t + 5``); a term issued in ``t + 6`` reads the result: the
microprogram's :class:`~linkdyn.model.microprogram.MacTiming` (latency 6). A Lookup or Atan
starts its unit in ``t + 1`` with the word read from the register file.
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import Q15_16, QFormat, WORD_WIDTH, ceil_log2
from linkdyn.model.golden import microprogram
from linkdyn.model.microprogram import LATCHES, SEGMENTS
from linkdyn.model.tables import CORDIC

from .cordic import CordicArctangent
from .mac import MultiplyAccumulate
from .sincos import SineCosineLookup

__all__ = ["LinkDynNode", "ScheduleRom", "SLOT_OPS", "COUNTER_WIDTH"]

#: Slot operations, encoded as their index in the schedule ROM.
SLOT_OPS = ("nop", "term", "lookup", "atan")

#: Width of the cycle counters, bits.
COUNTER_WIDTH = 16

#: The pipeline the gateware implements, as :class:`~linkdyn.model.microprogram.MacTiming`
#: fields; the microprogram must be scheduled for it.
_PIPELINE = {"read": 1, "multiply": 2, "accumulate": 1, "round": 1, "write": 1}


class ScheduleRom(wiring.Component):
    """The node's schedule ROM: one slot per row, synchronous read, in logic (not block RAM).

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
    data : Out(layout)
        The row addressed in the previous cycle.
    """

    def __init__(self, layout, rows):
        self._layout = layout
        self._rows = list(rows)
        super().__init__({
            "addr": In(range(len(self._rows))),
            "data": Out(layout),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory = memory = Memory(
            shape=self._layout, depth=len(self._rows), init=self._rows,
            attrs={"rom_style": "logic"})
        port = memory.read_port()
        m.d.comb += [port.addr.eq(self.addr), self.data.eq(port.data)]
        return m


class LinkDynNode(wiring.Component):
    """One LinkDyn node: register file, schedule ROM, sequencer, shared MAC, sine table, CORDIC.

    Requests: a cycle with ``start_forward`` (``start_backward``) high makes the request pending
    (sticky). While the node is idle, a pending request is taken (the backward one first if both
    are): ``forward_ack`` (``backward_ack``) pulses for that cycle, and the run starts in the
    next. A request input high in the cycle its request is taken belongs to that request (a
    trigger held until its acknowledge starts one run). A running computation is never
    interrupted; requests arriving meanwhile wait.

    External port: ``ext_addr`` selects a register-file word. A write (``ext_write_enable``) is
    accepted only while ``ready``, else ignored. ``ext_read_data`` is the word at the
    ``ext_addr`` of the previous cycle if the node was not ``busy`` in that cycle (while busy it
    shows the sequencer's operands). ``result_*`` show every register-file write of the MAC as
    it happens, e.g. for a mailbox that forwards the outputs while the node runs on.

    Parameters
    ----------
    fmt : QFormat
        Word format of the node (default Q15.16); its width must be 32 bits.

    Members
    -------
    start_forward : In(1)
        Request ``joint``, ``forward``, ``local``.
    start_backward : In(1)
        Request ``distal``.
    forward_ack, backward_ack : Out(1)
        Pulse in the cycle the request is taken.
    forward_done : Out(1)
        Pulses in the first cycle the forward outputs (``omega``, ``omega_dot``, ``p_ddot``)
        are in the register file.
    backward_done : Out(1)
        Pulses in the first cycle after the distal segment (``tau``, ``f_out``, ``mu_out``
        written); the node is idle again.
    busy : Out(1)
        A request runs.
    segment : Out(range(4))
        While ``busy``: index in :data:`~linkdyn.model.microprogram.SEGMENTS` of the segment
        that runs (its slots and its drain cycles).
    ready : Out(1)
        Idle with no request pending: external writes are accepted.
    overflow : Out(1)
        Sticky: some result saturated since the last forward request was taken.
    forward_cycles, backward_cycles : Out(16)
        Duration of the last forward (backward) run, clock cycles from its first issue to its
        last write.
    ext_addr : In(addr_width)
        Register-file address of the external port.
    ext_write_data : In(signed(32))
        Word to write.
    ext_write_enable : In(1)
        Write ``ext_write_data`` to ``ext_addr`` (only while ``ready``).
    ext_read_data : Out(signed(32))
        The word at the previous cycle's ``ext_addr``.
    result_valid, result_addr, result_data : Out(1), Out(addr_width), Out(signed(32))
        The MAC's register-file writes as they happen (for mailboxes that snoop the outputs).

    Raises
    ------
    TypeError
        If ``fmt`` is not a :class:`~linkdyn.model.fixedpoint.QFormat`.
    ValueError
        If ``fmt`` is not 32 bits wide, or the microprogram was scheduled for another pipeline
        than this gateware's (``MacTiming``), or the table/CORDIC latency does not fit it.
    """

    def __init__(self, fmt=Q15_16):
        if not isinstance(fmt, QFormat):
            raise TypeError(f"fmt must be a QFormat, not {fmt!r}")
        if fmt.width != WORD_WIDTH:
            raise ValueError(f"fmt must be {WORD_WIDTH} bits wide, not {fmt.width} ({fmt.name})")
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
        if CordicArctangent.latency_of(CORDIC) > timing.atan:
            raise ValueError(f"the CORDIC needs {CordicArctangent.latency_of(CORDIC)} cycles, "
                             f"the schedule allows {timing.atan}")
        self._fmt = fmt
        self._program = program
        rmap = program.registers
        self._addr_width = ceil_log2(rmap.depth)
        self._slot_layout = data.StructLayout({
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
        })
        self._rom, self._segment_start = self._build_rom(program)
        super().__init__({
            "start_forward": In(1),
            "start_backward": In(1),
            "forward_ack": Out(1),
            "backward_ack": Out(1),
            "forward_done": Out(1),
            "backward_done": Out(1),
            "busy": Out(1),
            "segment": Out(range(len(SEGMENTS))),
            "ready": Out(1),
            "overflow": Out(1),
            "forward_cycles": Out(COUNTER_WIDTH),
            "backward_cycles": Out(COUNTER_WIDTH),
            "ext_addr": In(self._addr_width),
            "ext_write_data": In(signed(WORD_WIDTH)),
            "ext_write_enable": In(1),
            "ext_read_data": Out(signed(WORD_WIDTH)),
            "result_valid": Out(1),
            "result_addr": Out(self._addr_width),
            "result_data": Out(signed(WORD_WIDTH)),
        })

    @staticmethod
    def _build_rom(program):
        """Return the schedule ROM (a list of slot dicts) and each segment's start address.

        Each segment's slots are followed by NOPs up to its ``.cycles``; a Dot's ``shift`` and
        ``wraps`` are given with its first and its last term (the MAC samples them there).
        Fields a slot does not use repeat the previous slot's value, which makes the ROM's
        logic smaller. ``first`` is not stored: a term is the first of its Dot unless the slot
        before it is a term that is not the last of its Dot (a Dot's terms issue back to back).

        Raises
        ------
        ValueError
            If the schedule does not issue a Dot's terms on consecutive cycles.
        """
        rows = []
        starts = {}
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
                elif slot.op == "term":
                    row.update({
                        "a": slot.a,
                        "b": slot.b,
                        "add": int(slot.kind == "add"),
                        "negate": int(slot.negate),
                        "align": program.aligns.index(slot.align),
                        "last": int(slot.last),
                    })
                    if slot.last:
                        row["dst"] = slot.dst
                    if slot.first or slot.last:
                        row.update({"shift": shift, "wraps": wraps})
                rows.append(row)
            rows += [{"op": SLOT_OPS.index("nop")}] * (segment.cycles - len(segment.slots))
        starts["end"] = len(rows)
        rom = []
        previous = dict.fromkeys(("a", "b", "add", "negate", "align", "last", "dst", "shift",
                                  "wraps"), 0)
        for row in rows:
            previous = {**previous, **row}
            rom.append(previous)
        return rom, starts

    @property
    def fmt(self):
        """QFormat: the node's word format."""
        return self._fmt

    @property
    def program(self):
        """Microprogram: the microprogram the node executes."""
        return self._program

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

    @property
    def forward_request_cycles(self):
        """int: cycles of a forward request, ``joint + forward + local`` ``.cycles``."""
        return self._segment_start["distal"]

    @property
    def backward_request_cycles(self):
        """int: cycles of a backward request, ``distal.cycles``."""
        return self._segment_start["end"] - self._segment_start["distal"]

    def elaborate(self, platform):
        m = Module()
        program = self._program
        rmap = program.registers
        starts = self._segment_start

        m.submodules.mac = mac = MultiplyAccumulate(
            aligns=program.aligns, shifts=program.shifts, max_terms=program.max_terms,
            tag_width=self._addr_width)
        m.submodules.sincos = sincos = SineCosineLookup()
        m.submodules.cordic = cordic = CordicArctangent()

        # -- register file: two copies, one read port each, written together --
        copies = []
        for name in ("registers_a", "registers_b"):
            memory = Memory(shape=signed(WORD_WIDTH), depth=rmap.depth, init=[])
            m.submodules[name] = memory
            copies.append((memory.read_port(), memory.write_port()))
        (read_a, write_a), (read_b, write_b) = copies

        # -- schedule ROM, read one cycle ahead: its output register holds the slot of `pc`,
        #    the slot that issues in this cycle. --
        m.submodules.schedule = rom_port = ScheduleRom(self._slot_layout, self._rom)
        slot = rom_port.data

        # -- sequencer --
        pc = Signal(range(len(self._rom)))
        pc_next = Signal.like(pc)
        running = Signal()
        backward = Signal()  # the running request is the backward one
        pending_forward = Signal()
        pending_backward = Signal()
        count = Signal(range(len(self._rom) + 1))
        idle = ~running
        take_backward = idle & pending_backward
        take_forward = idle & pending_forward & ~pending_backward
        m.d.comb += [
            self.forward_ack.eq(take_forward),
            self.backward_ack.eq(take_backward),
            self.busy.eq(running),
            self.ready.eq(idle & ~pending_forward & ~pending_backward),
            rom_port.addr.eq(pc_next),
            mac.clear_overflow.eq(take_forward),
            self.overflow.eq(mac.overflow),
        ]
        m.d.sync += [
            pending_forward.eq((pending_forward | self.start_forward) & ~take_forward),
            pending_backward.eq((pending_backward | self.start_backward) & ~take_backward),
            self.forward_done.eq(0),
            self.backward_done.eq(0),
            pc.eq(pc_next),
        ]
        m.d.comb += pc_next.eq(pc)
        with m.If(take_forward | take_backward):
            m.d.comb += pc_next.eq(Mux(take_backward, starts["distal"], starts["joint"]))
            m.d.sync += [
                running.eq(1),
                backward.eq(take_backward),
                count.eq(0),
            ]
        with m.Elif(running):
            m.d.comb += pc_next.eq(pc + 1)
            m.d.sync += count.eq(count + 1)
            with m.If(~backward & (pc == starts["local"] - 1)):
                m.d.sync += self.forward_done.eq(1)
            with m.If(~backward & (pc == starts["distal"] - 1)):
                m.d.sync += [running.eq(0), self.forward_cycles.eq(count + 1)]
            with m.If(backward & (pc == starts["end"] - 1)):
                m.d.sync += [running.eq(0), self.backward_cycles.eq(count + 1),
                             self.backward_done.eq(1)]

        for index, name in enumerate(SEGMENTS[1:], start=1):
            with m.If(pc >= starts[name]):
                m.d.comb += self.segment.eq(index)

        # -- issue: operand addresses to the block RAMs; the slot moves to the read stage --
        m.d.comb += [
            read_a.addr.eq(Mux(running, slot.a, self.ext_addr)),
            read_b.addr.eq(slot.b),
            self.ext_read_data.eq(read_a.data),
        ]
        issued = Signal(self._slot_layout, name="issued")
        issued_valid = Signal()
        m.d.sync += [issued.eq(slot), issued_valid.eq(running)]
        is_term = issued_valid & (issued.op == SLOT_OPS.index("term"))
        # A term opens a Dot unless the term before it left one open.
        dot_open = Signal()
        m.d.sync += dot_open.eq(is_term & ~issued.last)
        is_lookup = issued_valid & (issued.op == SLOT_OPS.index("lookup"))
        is_atan = issued_valid & (issued.op == SLOT_OPS.index("atan"))

        # -- read stage: operand mux (block RAM or a latch at the top of the address space).
        #    The latch a term reads is decoded from its operand address at issue and registered
        #    as a small index (0: the block RAM), so the mux itself has few select inputs.
        latch_values = {
            "sin_base": sincos.sin_base, "sin_delta": sincos.sin_delta,
            "sin_fraction": sincos.sin_fraction, "cos_base": sincos.cos_base,
            "cos_delta": sincos.cos_delta, "cos_fraction": sincos.cos_fraction,
            "atan": cordic.result,
        }
        operands = []
        for side, port in (("a", read_a), ("b", read_b)):
            # Only the latches the program reads on this side get a mux input.
            used = {getattr(s, side) for seg in program.segments.values() for s in seg.slots
                    if s.op == "term"}
            sources = [name for name in LATCHES if rmap.operand_address(name) in used]
            select = Signal(range(len(sources) + 1), name=f"select_{side}")
            select_issued = Signal.like(select, name=f"select_{side}_issued")
            with m.Switch(getattr(slot, side)):
                for index, name in enumerate(sources, start=1):
                    with m.Case(rmap.operand_address(name)):
                        m.d.comb += select.eq(index)
            m.d.sync += select_issued.eq(select)
            operand = Signal(signed(WORD_WIDTH), name=f"operand_{side}")
            with m.Switch(select_issued):
                for index, name in enumerate(sources, start=1):
                    with m.Case(index):
                        m.d.comb += operand.eq(latch_values[name])
                with m.Default():
                    m.d.comb += operand.eq(port.data)
            operands.append(operand)
        operand_a, operand_b = operands

        m.d.comb += [
            mac.valid.eq(is_term),
            mac.a.eq(operand_a),
            mac.b.eq(operand_b),
            mac.add.eq(issued.add),
            mac.negate.eq(issued.negate),
            mac.align.eq(issued.align),
            mac.first.eq(~dot_open),
            mac.last.eq(issued.last),
            mac.shift.eq(issued.shift),
            mac.wraps.eq(issued.wraps),
            mac.tag.eq(issued.dst),
            # Lookup and Atan read a register (phase, k qd): the block RAM directly.
            sincos.start.eq(is_lookup),
            sincos.phase.eq(read_a.data),
            cordic.start.eq(is_atan),
            cordic.x.eq(read_a.data),
        ]

        # -- write: MAC results (while running) or the external port (while ready) --
        ext_write = self.ext_write_enable & self.ready
        for port in (write_a, write_b):
            m.d.comb += [
                port.en.eq(mac.result_valid | ext_write),
                port.addr.eq(Mux(mac.result_valid, mac.result_tag, self.ext_addr)),
                port.data.eq(Mux(mac.result_valid, mac.result, self.ext_write_data)),
            ]
        m.d.comb += [
            self.result_valid.eq(mac.result_valid),
            self.result_addr.eq(mac.result_tag),
            self.result_data.eq(mac.result),
        ]
        return m
