"""The protocol engine: request frames in, reply frames out, register-bus transactions between.

Everything the engine knows about the protocol (frame layout, codes, payload layouts, the
control map, the node access rules, the build information) comes from
:mod:`linkdyn.model.protocol`; :class:`linkdyn.model.protocol.ReferenceEngine` is its executable
reference, and the tests hold the two equal byte for byte.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for

from ..model.protocol import (
    BLOCK_FIELDS, CONTROL_CLEAR, CONTROL_NODE, CONTROL_REGISTERS, CONTROL_START, CONTROL_STEP,
    CONTROLLER_BASE, CONTROLLER_WORDS, CRC16, LINK_WORDS_MAP, RECORD_WORDS, REFERENCE_WORDS,
    INFO_COUNT, INFO_FIRST, INTER_BYTE_TIMEOUT, PROTOCOL_VERSION, REPLY_HEADER, STEP_TIMEOUT,
    RESULT_FOLLOW, RESULT_SELECT,
    REPLY_SYNC, REQUEST_HEADER, REQUEST_HEADER_BYTES, REPLY_HEADER_BYTES, REQUEST_SYNC,
    STATE_CHANGING, STATUS_BUSY, STATUS_COUNT, STATUS_DONE, STATUS_FIRST, STEP_CONTROL_COUNT,
    STEP_CONTROL_FIRST, WORD_BYTES, Command, ErrorCode, ProtocolSpec, control_register,
)
from .bus import RegisterBusSignature
from .uart import UARTErrors

__all__ = ["ProtocolEngine", "EngineRegisters", "AccessCheck", "RequestHeader", "ReplyHeader",
           "BlockWord", "crc_parameters"]

#: Layout of a request header, first byte in the low bits (little-endian fields).
RequestHeader = data.StructLayout(dict(REQUEST_HEADER))
#: Layout of a reply header.
ReplyHeader = data.StructLayout(dict(REPLY_HEADER))
#: Layout of the block word of READ and WRITE.
BlockWord = data.StructLayout(dict(BLOCK_FIELDS))

_CONTROL_ADDR = control_register("CONTROL").address
_STATUS_ADDR = control_register("STATUS").address
_UPDATE_COUNT_ADDR = control_register("UPDATE_COUNT").address


def crc_parameters():
    """Return the :class:`amaranth.lib.crc.Parameters` of the frame CRC, bytewise."""
    return crc.Algorithm(crc_width=CRC16.crc_width, polynomial=CRC16.polynomial,
                         initial_crc=CRC16.initial_crc, reflect_input=CRC16.reflect_input,
                         reflect_output=CRC16.reflect_output, xor_output=CRC16.xor_output)(8)


def _check_cycles(name, value, minimum=1):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer number of cycles, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum} cycles, not {value!r}")


class AccessCheck(wiring.Component):
    """The host access rules of :meth:`ProtocolSpec.access`, combinationally.

    Parameters
    ----------
    spec : ProtocolSpec

    Members
    -------
    node : In(8)
        Node index or :data:`CONTROL_NODE`.
    addr : In(17)
        Word address (addresses from 256 up do not exist).
    exists : Out(1)
        The word exists (an invalid node has no words).
    writable : Out(1)
        The host may write it.
    local : Out(1)
        A control word answered by the engine itself (:class:`EngineRegisters`).
    """

    node: In(8)
    addr: In(17)
    exists: Out(1)
    writable: Out(1)
    local: Out(1)

    def __init__(self, spec):
        self.spec = spec
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        with m.If(self.addr[8:].any()):
            pass
        with m.Elif(self.node == CONTROL_NODE):
            with m.Switch(self.addr[:8]):
                for reg in spec.control_registers:
                    with m.Case(reg.address):
                        m.d.comb += [self.exists.eq(1), self.writable.eq(reg.writable),
                                     self.local.eq(reg.owner == "engine")]
        with m.Elif(self.node < spec.n_nodes):
            node_rule = [
                self.exists.eq(self.addr < spec.node_map_size),
                self.writable.eq(self.addr < Mux(self.node == 0, spec.writable_end_node0,
                                                 spec.writable_end)),
            ]
            if spec.distributed:
                # The link window (link_map): read-only words above the node's map.
                in_window = Cat(*(self.addr == word.address for word in LINK_WORDS_MAP)).any()
                node_rule[0] = self.exists.eq((self.addr < spec.node_map_size) | in_window)
            if spec.controllers:
                with m.If(self.addr >= CONTROLLER_BASE):
                    # The controller window (controller_map): its words, their own access.
                    with m.Switch(self.addr[:8]):
                        for word in CONTROLLER_WORDS:
                            with m.Case(word.address):
                                m.d.comb += [self.exists.eq(1),
                                             self.writable.eq(word.writable)]
                        if spec.distributed:
                            # Controllers on the boards: the link window stays readable.
                            for word in LINK_WORDS_MAP:
                                with m.Case(word.address):
                                    m.d.comb += self.exists.eq(1)
                with m.Else():
                    m.d.comb += node_rule
            else:
                m.d.comb += node_rule
        return m


class CommandDecoder(wiring.Component):
    """Decode a request's command byte and check its payload length (combinationally).

    Parameters
    ----------
    spec : ProtocolSpec

    Members
    -------
    command : In(8)
        The command byte.
    length : In(16)
        The payload length, bytes.
    block : In(BlockWord)
        Payload word 0 (READ / WRITE block word).
    known : Out(1)
        The command is defined.
    length_ok : Out(1)
        The length (and the block count of READ / WRITE) is valid for the command.
    state_changing : Out(1)
        The command needs the chain idle.
    """

    command: In(8)
    length: In(16)
    block: In(BlockWord)
    known: Out(1)
    length_ok: Out(1)
    state_changing: Out(1)

    def __init__(self, spec):
        self.spec = spec
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        length, block = self.length, self.block
        with m.Switch(self.command):
            for cmd in spec.commands:
                with m.Case(cmd.value):
                    m.d.comb += [self.known.eq(1),
                                 self.state_changing.eq(cmd in STATE_CHANGING)]
                    if cmd is Command.READ:
                        ok = ((length == WORD_BYTES) & (block.count != 0)
                              & (block.count <= spec.buffer_words))
                    elif cmd is Command.WRITE:
                        ok = ((length[:2] == 0) & (length >= 2 * WORD_BYTES)
                              & (block.count == (length >> 2) - 1))
                    elif cmd is Command.BATCH:
                        # Word 0 is the sample count K, 1 .. max_batch; the length is K
                        # samples' STEP payloads (with or without the wrench) after it.
                        samples = block.as_value()
                        ok = Cat(*[(samples == k) & Cat(*[length == value for value in
                                                          spec.batch_lengths(k)]).any()
                                   for k in range(1, spec.max_batch + 1)]).any()
                    else:
                        ok = Cat(*[length == value for value in spec.request_lengths(cmd)]).any()
                    m.d.comb += self.length_ok.eq(ok)
        return m


class EngineRegisters(wiring.Component):
    """The control words answered by the engine: frame and error counters, build information.

    The error and UART counters saturate at ``2**counter_width - 1``, FRAME_COUNT (32 bits)
    wraps. ``clear`` zeroes every counter but FRAME_COUNT. FRAME_COUNT counts in the cycle after
    its event; the saturating counters are words of a LUT RAM with one shared incrementer and
    count within 4 cycles of their event, provided ``count`` pulses come at least 3 cycles
    apart and so do the pulses of each UART error (the engine gives one ``count`` per reply,
    the UART at most one error of each kind per byte).

    Parameters
    ----------
    spec : ProtocolSpec
        Gives the build information words.
    counter_width : int
        Width of the saturating counters, bits.

    Members
    -------
    addr : In(8)
        Control-block address to read.
    rdata : Out(32)
        The word at ``addr`` (0 for an address the engine does not own).
    count : In(1)
        Count a reply with status ``status`` (OK counts in FRAME_COUNT).
    status : In(8)
        :class:`~linkdyn.model.protocol.ErrorCode` of the reply.
    uart_errors : In(UARTErrors)
        UART error pulses, counted in UART_FRAME_ERRORS and UART_OVERFLOWS.
    clear : In(1)
        Zero the error counters.
    """

    addr: In(8)
    rdata: Out(32)
    count: In(1)
    status: In(8)
    uart_errors: In(UARTErrors)
    clear: In(1)

    def __init__(self, spec, counter_width=16):
        self.spec = spec
        self.counter_width = counter_width
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        width = self.counter_width
        saturating = [reg for reg in CONTROL_REGISTERS if reg.owner == "engine"
                      and reg.address < INFO_FIRST and reg.name != "FRAME_COUNT"]
        frame_count = Signal(32)
        events = {reg.name: Signal(name=f"count_{reg.name.lower()}") for reg in saturating}
        frame_event = Signal()
        m.d.comb += [
            events["UART_FRAME_ERRORS"].eq(self.uart_errors.frame),
            events["UART_OVERFLOWS"].eq(self.uart_errors.overflow),
        ]
        with m.If(self.count):
            with m.Switch(self.status):
                for code in ErrorCode:
                    with m.Case(code.value):
                        if code is ErrorCode.OK:
                            m.d.comb += frame_event.eq(1)
                        else:
                            m.d.comb += events[f"ERRORS_{code.name}"].eq(1)
        with m.If(frame_event):
            m.d.sync += frame_count.eq(frame_count + 1)

        # The saturating counters live in LUT RAM, one word per control address (the RAM's
        # read ports are the read mux), with one incrementer: an event sets its counter's
        # pending bit; every cycle the first pending counter is taken (registered: its address
        # and whether it reads 0), and in the next cycle it is read, incremented (saturating)
        # and written back. Events come one per counter at most per reply or UART byte, so a
        # pending count is written within 4 cycles, long before the host can read it. A
        # counter's `zero` bit (set by reset and `clear`) makes it read 0 until its next count:
        # the clear of every counter in one cycle. An event in the cycle of a clear, or a count
        # taken but not yet written then, is not counted, as before the clear.
        depth = 1 << bits_for(max(reg.address for reg in saturating))
        m.submodules.counters = memory = Memory(shape=width, depth=depth, init=[])
        write = memory.write_port()
        service = memory.read_port(domain="comb")
        host = memory.read_port(domain="comb")
        pending = {reg.name: Signal(name=f"pending_{reg.name.lower()}") for reg in saturating}
        zero = {reg.name: Signal(init=1, name=f"zero_{reg.name.lower()}") for reg in saturating}
        grant = {}
        earlier = Const(0, 1)
        for reg in saturating:
            grant[reg.name] = Signal(name=f"grant_{reg.name.lower()}")
            m.d.comb += grant[reg.name].eq(pending[reg.name] & ~earlier)
            earlier = earlier | pending[reg.name]
        # The counter taken, registered (the priority choice and the RAM's read are a cycle
        # apart).
        taken = {reg.name: Signal(name=f"taken_{reg.name.lower()}") for reg in saturating}
        taken_any = Signal()
        taken_addr = Signal(range(depth))
        taken_zero = Signal()
        m.d.sync += [
            taken_any.eq(earlier & ~self.clear),
            taken_addr.eq(_or_values([Mux(grant[reg.name], reg.address, 0)
                                      for reg in saturating])),
            taken_zero.eq(Cat(*(grant[r.name] & zero[r.name] for r in saturating)).any()),
        ]
        m.d.sync += [taken[r.name].eq(grant[r.name] & ~self.clear) for r in saturating]
        m.d.comb += [service.addr.eq(taken_addr), write.addr.eq(taken_addr)]
        value = Mux(taken_zero, 0, service.data)
        full = value == (1 << width) - 1
        m.d.comb += [write.data.eq(value + 1), write.en.eq(taken_any & ~full & ~self.clear)]
        for reg in saturating:
            name = reg.name
            with m.If(self.clear):
                m.d.sync += [pending[name].eq(0), zero[name].eq(1)]
            with m.Else():
                m.d.sync += pending[name].eq((pending[name] & ~grant[name]) | events[name])
                with m.If(taken[name] & ~full):
                    m.d.sync += zero[name].eq(0)

        info = self.spec.engine_words()
        m.d.comb += host.addr.eq(self.addr)
        host_counter = Signal()         # `addr` is a saturating counter's
        host_zero = Signal()
        with m.Switch(self.addr):
            for reg in CONTROL_REGISTERS:
                if reg.owner != "engine":
                    continue
                with m.Case(reg.address):
                    if reg.name in zero:
                        m.d.comb += [host_counter.eq(1), host_zero.eq(zero[reg.name])]
                    elif reg.name == "FRAME_COUNT":
                        m.d.comb += self.rdata.eq(frame_count)
                    else:
                        m.d.comb += self.rdata.eq(info[reg.name])
        with m.If(host_counter & ~host_zero):
            m.d.comb += self.rdata.eq(host.data)
        return m


def _or_values(values):
    """Return the bitwise OR of a list of values."""
    result = values[0]
    for value in values[1:]:
        result = result | value
    return result


class ProtocolEngine(wiring.Component):
    """Protocol engine of the host link (see ``docs/protocol.md``).

    Received bytes come in on ``rx``; the engine hunts for the request sync byte, collects the
    header, stores the payload in a block-RAM frame buffer (one 32-bit word per row) while it
    updates the CRC, and after the CRC validates the whole frame: CRC, version, command,
    length, node, every address of a READ/WRITE block (one per cycle), write access, and, for
    state-changing commands, a STATUS read that the chain is idle. Only then does it execute the
    command as register-bus transactions toward the chain (``bus``); words read are stored in
    the same buffer, which then holds the reply payload. The reply (header, payload, CRC) leaves
    on ``tx``. An error reply carries an empty payload.

    While it executes or replies the engine takes no bytes (``rx.ready`` is low); put a FIFO
    in front of it when the source cannot wait (a UART; see
    :class:`linkdyn.gateware.hostlink.HostLink`). A gap of ``timeout_cycles`` without a byte
    inside a frame (counted only while the engine waits for that byte) ends it with a TRUNCATED
    reply. After any reply the engine hunts for the next sync byte.

    Registers of the control block owned by the engine (error counters, build information) are
    answered by the engine itself and never appear on the bus. A CONTROL write with the clear
    bit (CLEAR, or WRITE) clears the error counters when the chain accepts it.

    Parameters
    ----------
    n_nodes : int
        Number of nodes of the chain, ``1 .. 32``.
    fmt : QFormat
        Node word format (default Q15.16): register map and INFO.
    clock_hz : int
        Clock frequency, Hz (INFO; default timeouts).
    baudrate : int
        Line rate, baud (INFO only).
    board_id : int
        Board identifier (INFO only).
    banks : int
        Register banks of the chain behind the bus (INFO): 1, 2 or 4; with 2 or 4 (a
        pipelined chain) the engine implements BATCH of up to ``banks`` states.
    controllers : bool
        The chain has a joint controller beside every node
        (:class:`~linkdyn.gateware.controlled_chain.ControlledChain`): the controller window
        and control registers are accessible and the CONTROL command is implemented
        (``ProtocolSpec(controllers=True)``).
    boards : int, optional
        The chain is distributed over ``boards`` boards (``ProtocolSpec(boards=...)``): the
        engine answers BOARDS, and LINK_DOWN and the link window pass to the chain.
    local_loop : bool
        The chain is built with the local loop (``LinkDynChain(..., local_loop=True)``, with
        ``controllers`` ``ControlledChain(..., local_loop=True)``; ``ProtocolSpec(local_loop=
        True)``): with controllers, INFO's CONTROLLERS has bit 1 set and the control block's
        LOCAL_MULTIPLE passes to the chain. CONTROL.local passes to the chain as every CONTROL
        write does. Sequential chain on one FPGA only.
    timeout_cycles : int, optional
        Inter-byte timeout, cycles; default ``clock_hz * INTER_BYTE_TIMEOUT``.
    step_timeout_cycles : int, optional
        Longest wait for an update to finish after STEP's start, cycles; default
        ``clock_hz * STEP_TIMEOUT`` (``2**20`` without a clock).
    counter_width : int
        Width of the saturating error counters, bits (default 16).
    parents : sequence of int, optional
        The parent node of every node of the tree behind the bus (INFO only: PARENTS_k,
        ``ProtocolSpec(parents=...)``); default the chain.

    Members
    -------
    rx : In(stream.Signature(8))
        Received bytes.
    tx : Out(stream.Signature(8))
        Reply bytes.
    bus : Out(RegisterBusSignature())
        Register bus initiator toward the chain.
    uart_errors : In(UARTErrors)
        Error pulses of the UART receiver, counted in UART_FRAME_ERRORS / UART_OVERFLOWS.

    Attributes
    ----------
    spec : ProtocolSpec
        The protocol parameters of this engine.

    Raises
    ------
    TypeError, ValueError
        If a parameter has the wrong type or range, or no timeout is given without a clock.

    Notes
    -----
    States of the engine, in the order a frame passes them:

    ``HUNT``
        Drop bytes until the request sync byte.
    ``HEADER``, ``LENGTH``
        Collect version, seq, command, length; a length beyond the buffer is a BAD_LENGTH
        reply at once (the payload is not waited for).
    ``PAYLOAD``, ``CRC_LOW``, ``CRC_HIGH``
        Assemble little-endian words into the buffer (word 0 also into ``block``), update the
        CRC (bytes from ``version`` to the end of the payload), receive the CRC.
    ``CHECK``, ``VALIDATE``, ``VALIDATE_WORD``, ``BUSY_CHECK``
        CRC, version, command, length, node; every word of a READ/WRITE block exists (and is
        writable; two cycles a word: its check is registered, then decided on; a read-only
        word is remembered and reported after the last word, so that a word that does not
        exist anywhere in the block is BAD_ADDRESS, as the error table orders); a STATUS read
        for WRITE, LOAD_ROBOT, STEP and CLEAR. Nothing has been
        written before this point, so every error leaves the chain as it was.
    ``EXECUTE``, ``TRANSFER_*``, ``POLL``
        The command's phases (see ``_phases``), each a transfer of words
        between the buffer and a run of registers on a run of nodes, one bus transaction per
        word, or (STEP) STATUS polls until ``done``. STEP: write the inputs of every node,
        write CONTROL.start, poll, read ``tau`` of every node, read OVERFLOW .. UPDATE_COUNT.
        CONTROL (with ``controllers``): write the reference words of every node's controller
        window, write CONTROL.control_step, poll, read the record words of every node, read
        OVERFLOW .. UPDATE_COUNT. BATCH (with ``banks`` > 1; ``_batch_phases``): per state
        its inputs and CONTROL.start, without waiting for the state before; poll;
        ``BATCH_COUNT`` reads UPDATE_COUNT; per state RESULT_SELECT = its number, ``tau`` of
        every node, OVERFLOW, RESULT_SELECT read back; RESULT_SELECT = follow; OVERFLOW ..
        UPDATE_COUNT.
    ``REPLY``, ``SEND_*``
        Count the frame, send header, buffer words and CRC.

    :meth:`elaborate` builds one FSM from these groups of states, one method each:
    ``_receive`` (reception), ``_validate`` (the checks), ``_execute`` (the command's bus
    transfers), ``_transmit`` (the reply); ``_signals`` creates the state they share.

    Resources (Spartan-6, ``synth_xilinx -family xc6s``, 6 nodes, 100 MHz timeouts): about
    600 flip-flops, 1,050 LUTs and one RAMB8 (the frame buffer), before the indices were
    narrowed and the error counters moved into LUT RAM (docs/controller.md, "Where the
    one-node build's LUTs go", has the one-node figures).
    """

    rx: In(stream.Signature(8))
    tx: Out(stream.Signature(8))
    bus: Out(RegisterBusSignature())
    uart_errors: In(UARTErrors)

    def __init__(self, n_nodes, *, fmt=None, clock_hz=0, baudrate=0, board_id=0, banks=1,
                 controllers=False, timeout_cycles=None, step_timeout_cycles=None,
                 counter_width=16, parents=None, boards=None, local_loop=False):
        self.spec = ProtocolSpec(n_nodes, fmt, clock_hz=clock_hz, baudrate=baudrate,
                                 board_id=board_id, banks=banks, controllers=controllers,
                                 parents=parents, boards=boards, local_loop=local_loop)
        if timeout_cycles is None:
            if not clock_hz:
                raise ValueError("Without clock_hz, timeout_cycles must be given")
            timeout_cycles = max(1, round(clock_hz * INTER_BYTE_TIMEOUT))
        if step_timeout_cycles is None:
            step_timeout_cycles = round(clock_hz * STEP_TIMEOUT) if clock_hz else 1 << 20
        _check_cycles("Inter-byte timeout", timeout_cycles, 2)
        _check_cycles("Step timeout", step_timeout_cycles, 2)
        if not isinstance(counter_width, int) or not 1 <= counter_width <= 32:
            raise ValueError(f"Counter width must be 1 .. 32 bits, not {counter_width!r}")
        self.timeout_cycles = timeout_cycles
        self.step_timeout_cycles = step_timeout_cycles
        self.counter_width = counter_width
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        s = self._signals(m)
        with m.FSM() as fsm:
            self._receive(m, s)
            self._validate(m, s)
            self._execute(m, s)
            self._transmit(m, s)
        # The bus is locked from the STATUS check of a state-changing command to its reply, so
        # that no control step of the CONTROL_PERIOD timer starts between the check and the
        # command's writes (which the busy chain would refuse).
        locked = ["BUSY_CHECK", "EXECUTE", "TRANSFER_FETCH", "TRANSFER_ISSUE", "TRANSFER_WAIT",
                  "POLL", "POLL_GAP"] + (["BATCH_COUNT"] if self.spec.max_batch else [])
        m.d.comb += self.bus.lock.eq(Cat(fsm.ongoing(state) for state in locked).any())
        return m

    # -- the state shared by the groups of states ----------------------------------------------

    def _signals(self, m):
        """Create the frame buffer, the CRCs, the registers and the combinational helpers
        (access checks, command decoder, engine-owned words) that the groups of states share."""
        spec = self.spec
        n = spec.n_nodes
        depth = spec.buffer_words
        s = SimpleNamespace()

        m.submodules.buffer = buffer = Memory(shape=32, depth=depth, init=[])
        s.wr = buffer.write_port()
        s.rd = buffer.read_port()

        # One CRC for both directions: the engine takes no bytes while it replies (HUNT
        # starts it for a request, REPLY for the reply).
        m.submodules.crc = s.rx_crc = crc_parameters().create()
        s.tx_crc = s.rx_crc

        # Reception.
        s.header = Signal(RequestHeader)
        s.header_index = Signal(range(REQUEST_HEADER_BYTES))
        # Indices as wide as the frame buffer needs (LENGTH refuses a payload beyond it, and a
        # block's count is checked against the buffer before it is used): no 16-bit counters
        # and comparisons where 9 and 7 bits hold every value.
        s.byte_index = Signal(range(spec.max_payload_bytes))  # payload byte being received
        s.assembly = Signal(32)                        # payload word being assembled
        s.block = Signal(BlockWord)                    # payload word 0 (READ / WRITE)
        s.crc_received = Signal(16)
        # The cycles a timeout has waited: the inter-byte gap inside a frame (restarted by each
        # byte, timeout_cycles - 1 at most) and, in POLL, the step's wait (step_timeout_cycles
        # - 1 at most, `timer_step` set); one up-counter, never needed for both at once,
        # restarted by the flip-flops' synchronous reset (no load multiplexer). It counts to
        # its timeout's last value, where it stays: each timeout is an equality with a constant.
        s.timer = Signal(range(max(self.timeout_cycles, self.step_timeout_cycles)))
        s.timer_step = Signal()
        s.timed_out = Signal()
        m.d.comb += s.timed_out.eq(Mux(s.timer_step, s.timer == self.step_timeout_cycles - 1,
                                       s.timer == self.timeout_cycles - 1))
        s.status = Signal(8)

        # Validation and execution.
        s.phase = Signal(range(16))
        s.check_index = Signal(range(depth))           # VALIDATE: word of the block
        s.read_only = Signal()                         # VALIDATE: a read-only word seen
        s.x_node = Signal(8)
        s.x_node_last = Signal(8)
        s.x_addr_base = Signal(8)
        s.x_addr = Signal(8)
        s.x_count = Signal(range(depth + 1))
        s.x_index = Signal(range(depth))
        s.x_we = Signal()
        s.x_constant = Signal()
        s.x_constant_data = Signal(32)
        s.wdata = Signal(32)
        s.x_wdata = Mux(s.x_constant, s.x_constant_data, s.wdata)  # the word a transfer writes
        s.pointer = Signal(range(depth + 1))           # buffer word of transfer and reply
        # BATCH: the sample in hand, the buffer word its inputs start at (then: its reply
        # words start at), the update number it selects.
        s.sample = Signal(range(max(spec.max_batch, 1)))
        s.batch_base = Signal(range(depth + 1))
        s.number = Signal(31)

        # Transmission.
        s.reply_words = Signal(range(depth + 1))
        s.tx_index = Signal(range(REPLY_HEADER_BYTES))
        s.tx_byte = Signal(2)
        s.tx_word = Signal(32)                         # the reply word being sent
        s.reply_header = Signal(ReplyHeader)
        m.d.comb += [
            s.reply_header.sync.eq(REPLY_SYNC),
            s.reply_header.version.eq(PROTOCOL_VERSION),
            s.reply_header.seq.eq(s.header.seq),
            s.reply_header.command.eq(s.header.command),
            s.reply_header.status.eq(s.status),
            s.reply_header.length.eq(s.reply_words * WORD_BYTES),
        ]

        m.d.comb += s.rd.addr.eq(s.pointer)

        # -- the control words the engine answers, and the access rules ------------------------
        m.submodules.registers = s.registers = EngineRegisters(spec, self.counter_width)
        m.d.comb += s.registers.uart_errors.eq(self.uart_errors)
        m.submodules.check_access = check_access = AccessCheck(spec)
        m.submodules.transfer_access = transfer_access = AccessCheck(spec)

        # -- command decoding ------------------------------------------------------------------
        s.command = s.header.command
        s.length = s.header.length
        m.submodules.decoder = decoder = CommandDecoder(spec)
        # The decoder is read from CHECK on, when LENGTH has refused a length beyond the
        # buffer: its low bits are the length.
        m.d.comb += [decoder.command.eq(s.command),
                     decoder.length.eq(s.length[:bits_for(spec.max_payload_bytes)]),
                     decoder.block.eq(s.block)]
        s.known, s.length_ok = decoder.known, decoder.length_ok
        s.state_changing = decoder.state_changing
        s.is_block = (s.command == Command.READ) | (s.command == Command.WRITE)

        check_addr = Signal(9)                         # addresses from 256 up do not exist
        m.d.comb += [
            check_addr.eq(s.block.addr + s.check_index),
            check_access.node.eq(s.block.node),
            check_access.addr.eq(check_addr),
            transfer_access.node.eq(s.x_node),
            transfer_access.addr.eq(s.x_addr),
            s.registers.addr.eq(s.x_addr),
        ]
        # The access checks, registered: a state decides from flip-flops, not from the adders
        # and comparators of the checks. `block` is complete two bytes (CRC) before CHECK;
        # VALIDATE_WORD follows the VALIDATE cycle that registers the check of `check_index`;
        # TRANSFER_ISSUE follows the TRANSFER_FETCH cycle that registers the check of `x_addr`.
        s.block_node_ok = Signal()
        s.checked_exists = Signal()
        s.checked_writable = Signal()
        s.transfer_local = Signal()
        m.d.sync += [
            s.block_node_ok.eq((s.block.node == CONTROL_NODE) | (s.block.node < n)),
            s.checked_exists.eq(check_access.exists),
            s.checked_writable.eq(check_access.writable),
            s.transfer_local.eq(transfer_access.local),
        ]
        return s

    def _fail(self, m, s, code):
        """End the frame with the error reply ``code``."""
        m.d.sync += s.status.eq(code)
        m.next = "REPLY"

    # -- frame reception -------------------------------------------------------------------------

    def _wait_byte(self, m, s):
        """Accept a byte of a frame; count the gap; end the frame on the timeout."""
        m.d.comb += self.rx.ready.eq(1)
        with m.If(self.rx.valid):
            m.d.sync += [s.timer.eq(0), s.timer_step.eq(0)]
            m.d.comb += [s.rx_crc.data.eq(self.rx.payload)]
        with m.Elif(s.timed_out):
            self._fail(m, s, ErrorCode.TRUNCATED)
        with m.Else():
            m.d.sync += s.timer.eq(s.timer + 1)

    def _receive(self, m, s):
        """States ``HUNT`` .. ``CRC_HIGH``: hunt for the sync byte, collect the header, the
        payload (into the frame buffer) and the CRC."""
        spec = self.spec
        rx, wr, rx_crc = self.rx, s.wr, s.rx_crc
        with m.State("HUNT"):
            m.d.comb += rx.ready.eq(1)
            with m.If(rx.valid & (rx.payload == REQUEST_SYNC)):
                m.d.sync += [s.header.eq(REQUEST_SYNC), s.header_index.eq(1),
                             s.timer.eq(0), s.timer_step.eq(0),
                             s.block.eq(0), s.status.eq(ErrorCode.OK), s.phase.eq(0)]
                m.d.comb += rx_crc.start.eq(1)
                m.next = "HEADER"

        with m.State("HEADER"):
            self._wait_byte(m, s)
            with m.If(rx.valid):
                m.d.comb += rx_crc.valid.eq(1)
                m.d.sync += [s.header.as_value().word_select(s.header_index, 8)
                             .eq(rx.payload), s.header_index.eq(s.header_index + 1)]
                with m.If(s.header_index == REQUEST_HEADER_BYTES - 1):
                    m.next = "LENGTH"

        with m.State("LENGTH"):
            m.d.sync += s.byte_index.eq(0)
            with m.If(s.length > spec.max_payload_bytes):
                self._fail(m, s, ErrorCode.BAD_LENGTH)
            with m.Elif(s.length == 0):
                m.next = "CRC_LOW"
            with m.Else():
                m.next = "PAYLOAD"

        with m.State("PAYLOAD"):
            self._wait_byte(m, s)
            with m.If(rx.valid):
                word = Cat(s.assembly[8:], rx.payload)
                m.d.comb += rx_crc.valid.eq(1)
                m.d.sync += [s.assembly.eq(word), s.byte_index.eq(s.byte_index + 1)]
                with m.If(s.byte_index[:2] == WORD_BYTES - 1):
                    m.d.comb += [wr.addr.eq(s.byte_index >> 2), wr.data.eq(word), wr.en.eq(1)]
                    with m.If(s.byte_index < WORD_BYTES):
                        m.d.sync += s.block.eq(word)
                with m.If(s.byte_index == (s.length - 1)[:len(s.byte_index)]):
                    m.next = "CRC_LOW"

        with m.State("CRC_LOW"):
            self._wait_byte(m, s)
            with m.If(rx.valid):
                m.d.sync += s.crc_received[:8].eq(rx.payload)
                m.next = "CRC_HIGH"

        with m.State("CRC_HIGH"):
            self._wait_byte(m, s)
            with m.If(rx.valid):
                m.d.sync += s.crc_received[8:].eq(rx.payload)
                m.next = "CHECK"

    # -- frame validation ------------------------------------------------------------------------

    def _validate(self, m, s):
        """States ``CHECK`` .. ``BUSY_CHECK``: the checks of the error table, in its order;
        nothing has been written before them, so every error leaves the chain as it was."""
        with m.State("CHECK"):
            m.d.sync += [s.check_index.eq(0), s.read_only.eq(0)]
            with m.If(s.crc_received != s.rx_crc.crc):
                self._fail(m, s, ErrorCode.BAD_CRC)
            with m.Elif(s.header.version != PROTOCOL_VERSION):
                self._fail(m, s, ErrorCode.BAD_VERSION)
            with m.Elif(~s.known):
                self._fail(m, s, ErrorCode.UNKNOWN_COMMAND)
            with m.Elif(~s.length_ok):
                self._fail(m, s, ErrorCode.BAD_LENGTH)
            with m.Elif(s.is_block & ~s.block_node_ok):
                self._fail(m, s, ErrorCode.BAD_NODE)
            with m.Elif(s.is_block):
                m.next = "VALIDATE"
            with m.Elif(s.state_changing):
                m.next = "BUSY_CHECK"
            with m.Else():
                m.next = "EXECUTE"

        with m.State("VALIDATE"):
            # One word of the block per two cycles, in address order: its check is
            # registered in this one, decided on in VALIDATE_WORD.
            m.next = "VALIDATE_WORD"

        with m.State("VALIDATE_WORD"):
            # BAD_ADDRESS comes before READ_ONLY in the error table: a read-only word is
            # remembered and reported only once every word of the block is known to exist.
            read_only = s.read_only | ((s.command == Command.WRITE) & ~s.checked_writable)
            with m.If(~s.checked_exists):
                self._fail(m, s, ErrorCode.BAD_ADDRESS)
            with m.Elif(s.check_index != (s.block.count - 1)[:len(s.check_index)]):
                m.d.sync += [s.check_index.eq(s.check_index + 1), s.read_only.eq(read_only)]
                m.next = "VALIDATE"
            with m.Elif(read_only):
                self._fail(m, s, ErrorCode.READ_ONLY)
            with m.Elif(s.state_changing):
                m.next = "BUSY_CHECK"
            with m.Else():
                m.next = "EXECUTE"

        with m.State("BUSY_CHECK"):
            m.d.comb += [self.bus.valid.eq(1), self.bus.node.eq(CONTROL_NODE),
                         self.bus.addr.eq(_STATUS_ADDR)]
            with m.If(self.bus.ready):
                with m.If(self.bus.error):
                    self._fail(m, s, ErrorCode.BUS_ERROR)
                with m.Elif(self.bus.rdata & STATUS_BUSY):
                    self._fail(m, s, ErrorCode.BUSY)
                with m.Else():
                    m.next = "EXECUTE"

    # -- command execution -----------------------------------------------------------------------

    def _phases(self, m, s):
        """Return, per command, its phases: functions that start a bus transfer (or STEP's
        poll), in order."""
        spec = self.spec
        n = spec.n_nodes
        block = s.block
        step_count = Mux(s.length == WORD_BYTES * spec.step_words(True), spec.input_count, 3)

        def transfer(node, node_last, addr, count, we, constant=None, pointer_start=None):
            stmts = [s.x_node.eq(node), s.x_node_last.eq(node_last), s.x_addr_base.eq(addr),
                     s.x_addr.eq(addr), s.x_count.eq(count), s.x_index.eq(0), s.x_we.eq(we),
                     s.x_constant.eq(constant is not None),
                     s.x_constant_data.eq(0 if constant is None else constant)]
            if pointer_start is not None:
                stmts.append(s.pointer.eq(pointer_start))
            m.d.sync += stmts
            m.next = "TRANSFER_FETCH"

        def poll():
            m.d.sync += [s.timer.eq(0), s.timer_step.eq(1)]
            m.next = "POLL"

        control = CONTROL_NODE
        phases = {
            Command.INFO: [lambda: transfer(control, control, INFO_FIRST, INFO_COUNT, 0,
                                            pointer_start=0)],
            Command.STATUS: [lambda: transfer(control, control, STATUS_FIRST, STATUS_COUNT, 0,
                                              pointer_start=0)],
            Command.READ: [lambda: transfer(block.node, block.node, block.addr, block.count, 0,
                                            pointer_start=0)],
            Command.WRITE: [lambda: transfer(block.node, block.node, block.addr, block.count, 1,
                                             pointer_start=1)],
            Command.CLEAR: [lambda: transfer(control, control, _CONTROL_ADDR, 1, 1,
                                             constant=CONTROL_CLEAR)],
            Command.LOAD_ROBOT: [
                lambda: transfer(0, n - 1, 0, spec.constant_count, 1, pointer_start=0),
                lambda: transfer(0, 0, spec.base_motion_address, spec.base_motion_count, 1),
            ],
            Command.STEP: [
                lambda: transfer(0, n - 1, spec.input_address, step_count, 1, pointer_start=0),
                lambda: transfer(control, control, _CONTROL_ADDR, 1, 1, constant=CONTROL_START),
                poll,
                lambda: transfer(0, n - 1, spec.tau_address, 1, 0, pointer_start=0),
                lambda: transfer(control, control, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT, 0),
            ],
        }
        if spec.max_batch:
            phases[Command.BATCH] = self._batch_phases(m, s, transfer, poll)
        if spec.controllers:
            # CONTROL: the references into every node's controller window, one control step,
            # the records back, then OVERFLOW .. UPDATE_COUNT (as STEP).
            phases[Command.CONTROL] = [
                lambda: transfer(0, n - 1, REFERENCE_WORDS[0].address, len(REFERENCE_WORDS), 1,
                                 pointer_start=0),
                lambda: transfer(control, control, _CONTROL_ADDR, 1, 1, constant=CONTROL_STEP),
                poll,
                lambda: transfer(0, n - 1, RECORD_WORDS[0].address, len(RECORD_WORDS), 0,
                                 pointer_start=0),
                lambda: transfer(control, control, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT, 0),
            ]
        return phases

    def _batch_phases(self, m, s, transfer, poll):
        """Return BATCH's phases: per sample (K <= banks: each in a bank of its own, so that
        the chain takes sample j+1's inputs and start while sample j runs) its inputs and
        CONTROL.start; the poll until every update has finished; UPDATE_COUNT; per sample
        RESULT_SELECT = its number, every node's ``tau``, OVERFLOW, RESULT_SELECT read back;
        RESULT_SELECT = follow; OVERFLOW .. UPDATE_COUNT."""
        spec = self.spec
        n = spec.n_nodes
        control = CONTROL_NODE
        samples = s.block.as_value()[:bits_for(spec.max_batch)]
        wrench = Cat(*[(samples == k) & (s.length == spec.batch_lengths(k)[1])
                       for k in range(1, spec.max_batch + 1)]).any()
        inputs = Mux(wrench, spec.input_count, 3)
        last = s.sample == samples - 1

        def next_phase(phase):
            m.d.sync += s.phase.eq(phase)
            m.next = "EXECUTE"

        def begin():
            m.d.sync += [s.sample.eq(0), s.batch_base.eq(1)]
            next_phase(1)

        def next_sample():
            with m.If(last):
                m.d.sync += s.sample.eq(0)
                next_phase(4)
            with m.Else():
                m.d.sync += [s.sample.eq(s.sample + 1), s.batch_base.eq(s.batch_base + n * inputs)]
                next_phase(1)

        def update_count():
            m.next = "BATCH_COUNT"

        def next_result():
            with m.If(last):
                next_phase(11)
            with m.Else():
                m.d.sync += [s.sample.eq(s.sample + 1), s.number.eq(s.number + 1),
                             s.batch_base.eq(s.batch_base + n + 2)]
                next_phase(6)

        return [
            begin,                                                                  # 0
            lambda: transfer(0, n - 1, spec.input_address, inputs, 1,
                             pointer_start=s.batch_base),                           # 1
            lambda: transfer(control, control, _CONTROL_ADDR, 1, 1,
                             constant=CONTROL_START),                               # 2
            next_sample,                                                            # 3
            poll,                                                                   # 4
            update_count,                                                           # 5
            lambda: transfer(control, control, RESULT_SELECT, 1, 1, constant=s.number),  # 6
            lambda: transfer(0, n - 1, spec.tau_address, 1, 0,
                             pointer_start=s.batch_base),                           # 7
            lambda: transfer(control, control, STEP_CONTROL_FIRST, 1, 0),           # 8
            lambda: transfer(control, control, RESULT_SELECT, 1, 0),                # 9
            next_result,                                                            # 10
            lambda: transfer(control, control, RESULT_SELECT, 1, 1,
                             constant=RESULT_FOLLOW),                               # 11
            lambda: transfer(control, control, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT, 0,
                             pointer_start=s.batch_base + n + 2),                   # 12
        ]

    def _advance(self, m, s):
        """Step the transfer to the next word, node, or phase."""
        m.d.sync += s.pointer.eq(s.pointer + 1)
        with m.If(s.x_index == s.x_count - 1):
            m.d.sync += [s.x_index.eq(0), s.x_addr.eq(s.x_addr_base)]
            with m.If(s.x_node == s.x_node_last):
                m.d.sync += s.phase.eq(s.phase + 1)
                m.next = "EXECUTE"
            with m.Else():
                m.d.sync += s.x_node.eq(s.x_node + 1)
                m.next = "TRANSFER_FETCH"
        with m.Else():
            m.d.sync += [s.x_index.eq(s.x_index + 1), s.x_addr.eq(s.x_addr + 1)]
            m.next = "TRANSFER_FETCH"

    def _execute(self, m, s):
        """States ``EXECUTE``, ``TRANSFER_*``, ``POLL``, ``POLL_GAP``: the command's phases as
        register-bus transactions, words between the frame buffer and the chain."""
        bus, wr, rd, registers = self.bus, s.wr, s.rd, s.registers
        phases = self._phases(m, s)
        with m.State("EXECUTE"):
            with m.Switch(s.command):
                for cmd, steps in phases.items():
                    with m.Case(cmd.value):
                        with m.Switch(s.phase):
                            for index, step in enumerate(steps):
                                with m.Case(index):
                                    step()
                            with m.Default():
                                m.next = "REPLY"

        with m.State("TRANSFER_FETCH"):
            # The buffer word at `pointer` is read during this cycle.
            m.next = "TRANSFER_ISSUE"

        with m.State("TRANSFER_ISSUE"):
            # The buffer's block RAM straight into a register (its output is slow); a
            # constant word is selected after it, in TRANSFER_WAIT.
            m.d.sync += s.wdata.eq(rd.data)
            with m.If(s.transfer_local & ~s.x_we):
                # Engine-owned control word: answered here, never on the bus.
                m.d.comb += [wr.addr.eq(s.pointer), wr.data.eq(registers.rdata), wr.en.eq(1)]
                self._advance(m, s)
            with m.Else():
                m.next = "TRANSFER_WAIT"

        with m.State("TRANSFER_WAIT"):
            m.d.comb += [bus.valid.eq(1), bus.node.eq(s.x_node), bus.addr.eq(s.x_addr),
                         bus.we.eq(s.x_we), bus.wdata.eq(s.x_wdata)]
            with m.If(bus.ready):
                with m.If(bus.error):
                    self._fail(m, s, ErrorCode.BUS_ERROR)
                with m.Else():
                    with m.If(~s.x_we):
                        m.d.comb += [wr.addr.eq(s.pointer), wr.data.eq(bus.rdata), wr.en.eq(1)]
                    with m.If(s.x_we & (s.x_node == CONTROL_NODE) & (s.x_addr == _CONTROL_ADDR)
                              & (s.x_wdata & CONTROL_CLEAR).any()):
                        m.d.comb += registers.clear.eq(1)
                    self._advance(m, s)

        with m.State("POLL"):
            with m.If(~s.timed_out):
                m.d.sync += s.timer.eq(s.timer + 1)
            m.d.comb += [bus.valid.eq(1), bus.node.eq(CONTROL_NODE), bus.addr.eq(_STATUS_ADDR)]
            with m.If(bus.ready):
                with m.If(bus.error):
                    self._fail(m, s, ErrorCode.BUS_ERROR)
                with m.Elif((bus.rdata & STATUS_DONE).any() & ~(bus.rdata & STATUS_BUSY).any()):
                    m.d.sync += s.phase.eq(s.phase + 1)
                    m.next = "EXECUTE"
                with m.Else():
                    m.next = "POLL_GAP"

        if self.spec.max_batch:
            with m.State("BATCH_COUNT"):
                # BATCH: UPDATE_COUNT once every update has finished; the chain was idle when
                # the batch began, so its last K updates are the batch's samples.
                samples = s.block.as_value()[:bits_for(self.spec.max_batch)]
                m.d.comb += [bus.valid.eq(1), bus.node.eq(CONTROL_NODE),
                             bus.addr.eq(_UPDATE_COUNT_ADDR)]
                with m.If(bus.ready):
                    with m.If(bus.error):
                        self._fail(m, s, ErrorCode.BUS_ERROR)
                    with m.Else():
                        m.d.sync += [s.number.eq(bus.rdata - samples + 1), s.batch_base.eq(0),
                                     s.phase.eq(6)]
                        m.next = "EXECUTE"

        with m.State("POLL_GAP"):
            # One cycle without a transaction; the timeout never abandons one.
            with m.If(~s.timed_out):
                m.d.sync += s.timer.eq(s.timer + 1)
            with m.If(s.timed_out):
                self._fail(m, s, ErrorCode.TIMEOUT)
            with m.Else():
                m.next = "POLL"

    # -- reply transmission ----------------------------------------------------------------------

    def _transmit(self, m, s):
        """States ``REPLY``, ``SEND_*``: count the frame, send the reply header, the buffer
        words of the reply payload and the CRC."""
        spec = self.spec
        tx, rd, tx_crc, registers = self.tx, s.rd, s.tx_crc, s.registers
        reply_sizes = {
            Command.INFO: INFO_COUNT, Command.STATUS: STATUS_COUNT, Command.READ: s.block.count,
            Command.STEP: spec.step_reply_words,
        }
        if spec.max_batch:
            reply_sizes[Command.BATCH] = s.batch_base + spec.n_nodes + 2 + STEP_CONTROL_COUNT
        if spec.controllers:
            reply_sizes[Command.CONTROL] = spec.control_reply_words
        with m.State("REPLY"):
            # `status` is final: count the frame, size the reply, start its CRC.
            m.d.comb += [registers.count.eq(1), registers.status.eq(s.status)]
            m.d.sync += [s.reply_words.eq(0), s.tx_index.eq(0), s.tx_byte.eq(0),
                         s.pointer.eq(0)]
            with m.If(s.status == ErrorCode.OK):
                with m.Switch(s.command):
                    for cmd, size in reply_sizes.items():
                        with m.Case(cmd.value):
                            m.d.sync += s.reply_words.eq(size)
            m.d.comb += tx_crc.start.eq(1)
            m.next = "SEND_HEADER"

        with m.State("SEND_HEADER"):
            m.d.comb += [tx.valid.eq(1),
                         tx.payload.eq(s.reply_header.as_value().word_select(s.tx_index, 8))]
            with m.If(tx.ready):
                m.d.comb += [tx_crc.valid.eq(s.tx_index != 0), tx_crc.data.eq(tx.payload)]
                m.d.sync += s.tx_index.eq(s.tx_index + 1)
                with m.If(s.tx_index == REPLY_HEADER_BYTES - 1):
                    with m.If(s.reply_words == 0):
                        m.next = "SEND_CRC_LOW"
                    with m.Else():
                        m.next = "SEND_FETCH"

        with m.State("SEND_FETCH"):
            # The buffer word at `pointer` is read (during the header, or during the last
            # word, which addresses `pointer + 1`) and goes into a register: no logic
            # between the block RAM and the byte select and the CRC.
            m.d.sync += s.tx_word.eq(rd.data)
            m.next = "SEND_WORD"

        with m.State("SEND_WORD"):
            m.d.comb += [tx.valid.eq(1), rd.addr.eq(s.pointer + 1),
                         tx.payload.eq(s.tx_word.word_select(s.tx_byte, 8))]
            with m.If(tx.ready):
                m.d.comb += [tx_crc.valid.eq(1), tx_crc.data.eq(tx.payload)]
                m.d.sync += s.tx_byte.eq(s.tx_byte + 1)
                with m.If(s.tx_byte == WORD_BYTES - 1):
                    m.d.sync += s.pointer.eq(s.pointer + 1)
                    with m.If(s.pointer == s.reply_words - 1):
                        m.next = "SEND_CRC_LOW"
                    with m.Else():
                        m.next = "SEND_FETCH"

        with m.State("SEND_CRC_LOW"):
            m.d.comb += [tx.valid.eq(1), tx.payload.eq(tx_crc.crc[:8])]
            with m.If(tx.ready):
                m.next = "SEND_CRC_HIGH"

        with m.State("SEND_CRC_HIGH"):
            m.d.comb += [tx.valid.eq(1), tx.payload.eq(tx_crc.crc[8:])]
            with m.If(tx.ready):
                m.next = "HUNT"
