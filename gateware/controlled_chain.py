"""The chain with a joint controller beside every node (source paper Sect. 3.1, Fig. 7), behind
the host's register bus: :class:`ControlledChain`.

Structure::

    host --bus--> front end --+--> LinkDynChain (sequential policy, its own register bus)
                     |        |         ^
                     |        |         | bus (node q, qd, qdd writes, CONTROL.start, tau reads)
                     |        +-- step sequencer --+
                     |                   | start / model.valid / tau_valid / done / strobes
                     v                   v
           controller window --> JointController 0 .. n-1 <-- sensor[i] (q, qd)
           control registers              '--> actuator[i] (i_ref, enable)

The bus target is a drop-in for :class:`~linkdyn.gateware.chain.LinkDynChain`'s (the protocol
engine sees :class:`~linkdyn.model.protocol.ProtocolSpec` with ``controllers=True``): the
controller window of every node (node addresses 0x80 .. 0xCF,
:mod:`linkdyn.model.protocol.controller_map`) and the controller control registers
(CONTROL_PERIOD, CONTROL_STEPS, FAULTS, CONTROL_OVERRUNS, CONTROL_LATENCY_CYCLES) are answered
here, CONTROL's ``control_step`` / ``fault_clear`` bits are taken here, everything else goes to the
chain. :class:`linkdyn.sim.controlled_chain_model.ControlledChainModel` is the executable
definition of every word and of a control step; the tests hold this component equal to it word
for word.

A control step (CONTROL.control_step, the CONTROL command, or the CONTROL_PERIOD timer):

1. every controller's ``feedback`` at once (sensor and reference captured in one cycle; the
   sensor sample is the step's record);
2. the sequencer writes every node's ``q, qd, qdd`` with the controllers' ``model.q, qd, qdd``
   over the chain's bus, then CONTROL.start, and waits for the chain;
3. ``message_strobe`` of every controller (the update's messages arrived), then it reads every
   node's ``tau`` over the bus into its controller (``model.tau``, ``tau_valid``): the
   ``output`` segments run as the torques come;
4. when every ``output`` has finished: the records (``tau_cmd``, ``i_ref``, the fault word, the
   sensor sample), CONTROL_STEPS, CONTROL_LATENCY_CYCLES.

With the local loop (``local_loop=True``; LOCAL_MULTIPLE = m): the step after a write of
LOCAL_MULTIPLE (or reset) runs the chain update as above, the next m - 1 a local update each
(2. writes CONTROL.local instead of CONTROL.start, 3. gives no ``message_strobe``): every node
re-runs its segments on its controller's fresh ``q, qd, qdd`` with the last chain update's
messages, and the controllers' ``output`` segments run on those torques.

STATUS.busy is high for the whole step (``done`` low), and while it runs the host's accesses
that a busy chain would refuse are refused: node register writes, CONTROL.start /
control_step / fault_clear, and every write into a controller window. Reads of a
controller's register port, and the chain's words other than STATUS, wait for the step's end
(the bus answers within the step's bounded time); STATUS, the control registers above and the
window's reference, record and sensor words are answered at once. A step the timer asks for
while the host's command holds the bus's ``lock`` (from the protocol engine's STATUS check to
its reply) starts when the lock falls, so a command that found the chain idle is never refused
midway; the delay is at most one command's execution, and a period that passes meanwhile is
counted in CONTROL_OVERRUNS.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, ResetSignal, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from linkdyn.model.controller import SPECIAL_REGISTERS
from linkdyn.model.fixedpoint import WORD_WIDTH
from linkdyn.model.protocol import (
    CONTROL_CLEAR, CONTROL_FAULT_CLEAR, CONTROL_LOCAL, CONTROL_NODE, CONTROL_START, CONTROL_STEP,
    CONTROLLER_BASE, CONTROLLER_WORDS, MAX_NODES, RECORD_WORDS, REFERENCE_WORDS, STATUS_BUSY,
    STATUS_OVERFLOW, ProtocolSpec, control_register,
)

from .bus import RegisterBusSignature
from .chain import LinkDynChain
from .controller import ActuatorSignature, JointController, SensorSignature
from .cordic import CordicArctangent
from .joint_port import JointPortStatusSignature, status_word
from linkdyn.model.controller import WORD as CONTROLLER_WORD
from linkdyn.model.microprogram import node_formats

__all__ = ["ControlledChain", "rescale_expression", "WINDOW_KINDS"]

#: Kinds of the controller window's words, in encoding order: the controller's register port,
#: the reference words, fault_clear, the record words, the sensor words.
WINDOW_KINDS = ("port", "reference", "fault_clear", "record", "sensor")
_SENSOR_WORDS = ("sensor_q", "sensor_qd")
#: The window's words of the sensor kind: the sensor port now, then the joint port's status.
_SENSOR_KIND = _SENSOR_WORDS + ("joint_port",)
#: The controller control registers answered here (the rest of the control block: the chain).
_OWN_CONTROL = ("CONTROL_PERIOD", "CONTROL_STEPS", "FAULTS", "CONTROL_OVERRUNS",
                "CONTROL_LATENCY_CYCLES")
_CONTROL_ADDR = control_register("CONTROL").address
_STATUS_ADDR = control_register("STATUS").address
_FAULT_PORT = SPECIAL_REGISTERS["fault"].address
_W = WORD_WIDTH


def _or(values):
    """Return the bitwise OR of a list of values (a balanced tree)."""
    while len(values) > 1:
        values = [values[i] | values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _window_entry(word):
    """Return ``(kind, index)`` of a controller window word."""
    if word.port is not None:
        return "port", word.port
    names = {"reference": [w.name for w in REFERENCE_WORDS],
             "record": [w.name for w in RECORD_WORDS], "sensor": list(_SENSOR_KIND)}
    if word.name == "fault_clear":
        return "fault_clear", 0
    for kind, table in names.items():
        if word.name in table:
            return kind, table.index(word.name)
    raise AssertionError(f"controller word {word.name!r} has no kind")


def _decoded_layout(own):
    """The registered decoding of a request, with ``own`` control registers answered here."""
    return data.StructLayout({
        "window": 1, "exists": 1, "writable": 1,
        "own": 1, "own_index": range(len(own)), "own_writable": 1,
        "control": 1, "status": 1, "node": 1,
        # the word a read answers from the window word (_local_sources)
        "source": range(len(_local_sources(own))),
    })


def _local_sources(own):
    """The words a read answers from the registered window word, in code order: the window's
    reference, record and sensor words (``(kind, index)``), the ``own`` control registers
    (``("own", name)``), the controller's register port (``("port", 0)``); a fault_clear
    read answers ``("zero", 0)``."""
    return ([("reference", k) for k in range(len(REFERENCE_WORDS))]
            + [("record", k) for k in range(len(RECORD_WORDS))]
            + [("sensor", k) for k in range(len(_SENSOR_KIND))]
            + [("own", name) for name in own] + [("port", 0), ("zero", 0)])


class ControlledChain(wiring.Component):
    """A :class:`~linkdyn.gateware.chain.LinkDynChain` with a
    :class:`~linkdyn.gateware.controller.JointController` beside every node and the sequencer of
    the control step, behind the protocol's register bus (module docstring).

    Parameters
    ----------
    n : int
        Number of nodes (joints), ``1 .. MAX_NODES``.
    fmt : QFormat
        Word format of the nodes (default Q15.16; the controllers' words are Q15.16 and go to
        the nodes' ``q, qd, qdd`` as they are, as in the model).
    cordic_step_cycles : int
        Cycles per CORDIC step of the nodes (1 or 2, :class:`~linkdyn.gateware.chain.
        LinkDynChain`).
    pipelined : bool
        The controllers' timing (:class:`~linkdyn.gateware.controller.JointController`).
    local_loop : bool
        Build the local loop (module docstring; the chain's local update and LOCAL_MULTIPLE);
        default ``False``, which builds exactly the controlled chain without it.

    Members
    -------
    bus : In(RegisterBusSignature())
        The register bus, target side: the chain's words, the controller window of every node
        (node addresses 0x80 .. 0xCF) and the controller control registers.
    busy : Out(1)
        An update or a control step is running (STATUS.busy).
    overflow_sticky : Out(n)
        The chain's OVERFLOW_STICKY.
    faults : Out(n)
        Bit i: joint i has a latched fault (FAULTS).
    sensor : In(SensorSignature).array(n)
        Per joint: measured ``q`` (rad), ``qd`` (rad/s), Q15.16 (the node's sensor port).
    actuator : Out(ActuatorSignature).array(n)
        Per joint: current reference ``i_ref`` (A, Q15.16; 0 while off or faulted) and
        ``enable`` (the node's actuator port).
    joint_port : In(JointPortStatusSignature).array(n)
        Per joint: its joint port's status, read in the window word ``joint_port`` (0, "no
        port", where nothing drives it).

    Attributes
    ----------
    chain : LinkDynChain
        The chain (sequential policy).
    controllers : list of JointController
        The controllers, node order.
    spec : ProtocolSpec
        The protocol the bus implements (``controllers=True``).

    Raises
    ------
    TypeError
        If ``n`` is not an integer, ``fmt`` not a QFormat or ``pipelined`` or ``local_loop``
        not a bool.
    ValueError
        If ``n`` is out of range or ``cordic_step_cycles`` is not 1 or 2.
    """

    def __init__(self, n, fmt=None, *, cordic_step_cycles=2, pipelined=True,
                 local_loop=False):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"Node count must be an integer, not {n!r}")
        if not 1 <= n <= MAX_NODES:
            raise ValueError(f"Node count must be 1 .. {MAX_NODES}, not {n!r}")
        fmt = node_formats(fmt)
        if not isinstance(pipelined, bool):
            raise TypeError(f"pipelined must be a bool, not {pipelined!r}")
        if not isinstance(local_loop, bool):
            raise TypeError(f"local_loop must be a bool, not {local_loop!r}")
        CordicArctangent.check_step_cycles(cordic_step_cycles, name="cordic_step_cycles")
        self._n = n
        self._fmt = fmt
        self._local_loop = local_loop
        self._own = _OWN_CONTROL + (("LOCAL_MULTIPLE",) if local_loop else ())
        self.spec = ProtocolSpec(n, fmt, controllers=True, local_loop=local_loop)
        self.chain = LinkDynChain(n, fmt, policy="sequential",
                                  cordic_step_cycles=cordic_step_cycles, local_loop=local_loop)
        self.controllers = [JointController(pipelined=pipelined) for _ in range(n)]
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "busy": Out(1),
            "overflow_sticky": Out(n),
            "faults": Out(n),
            "sensor": In(SensorSignature).array(n),
            "actuator": Out(ActuatorSignature).array(n),
            "joint_port": In(JointPortStatusSignature).array(n),
        })

    @property
    def n(self):
        """int: number of nodes."""
        return self._n

    @property
    def fmt(self):
        """QFormat: the nodes' word format."""
        return self._fmt

    @property
    def banks(self):
        """int: register banks of the chain (1: the sequential policy)."""
        return 1

    @property
    def policy(self):
        """str: the chain's update policy."""
        return "sequential"

    @property
    def local_loop(self):
        """bool: the local loop is built (LOCAL_MULTIPLE)."""
        return self._local_loop

    def elaborate(self, platform):
        m = Module()
        n = self._n
        m.submodules.chain = chain = self.chain
        joints = self.controllers
        for i, joint in enumerate(joints):
            m.submodules[f"controller{i}"] = joint
            m.d.comb += [
                joint.sensor.q.eq(self.sensor[i].q),
                joint.sensor.qd.eq(self.sensor[i].qd),
                self.actuator[i].i_ref.eq(joint.actuator.i_ref),
                self.actuator[i].enable.eq(joint.actuator.enable),
                self.faults[i].eq(joint.fault),
            ]

        # -- the state of the window and of the control registers --
        reference = [[Signal(_W, name=f"ref{i}_{w.name}") for w in REFERENCE_WORDS]
                     for i in range(n)]
        record = [[Signal(_W, name=f"rec{i}_{w.name}") for w in RECORD_WORDS]
                  for i in range(n)]
        sample = [[Signal(_W, name=f"sample{i}_{k}") for k in _SENSOR_WORDS] for i in range(n)]
        for i, joint in enumerate(joints):
            m.d.comb += [joint.reference.q.eq(reference[i][0]),
                         joint.reference.qd.eq(reference[i][1]),
                         joint.reference.qdd.eq(reference[i][2])]
        control_period = Signal(_W)
        # The cycle of the period (counts up 1 .. p); set to 1 by the reset, the timer and a
        # CONTROL_PERIOD write (`period_restart`), in one condition: the flip-flops' own
        # synchronous set / reset (no reset of the domain beside it, no gate per bit).
        period_count = Signal(_W, init=1, reset_less=True)
        self._period_restart = Signal()
        control_steps = Signal(_W)
        overruns = Signal(_W)
        latency = Signal(_W)
        step_cycles = Signal(_W)
        stepping = Signal()          # a control step runs (set by the front end or the timer)
        step_due = Signal()          # the timer asked for a step that has not started yet
        own_words = {"CONTROL_PERIOD": control_period, "CONTROL_STEPS": control_steps,
                     "FAULTS": self.faults, "CONTROL_OVERRUNS": overruns,
                     "CONTROL_LATENCY_CYCLES": latency}
        # The local loop's schedule (LOCAL_MULTIPLE, the phase within it).
        local_multiple = local_phase = None
        if self._local_loop:
            local_multiple = Signal(_W, init=1)
            local_phase = Signal(_W)
            own_words["LOCAL_MULTIPLE"] = local_multiple
        m.d.comb += [self.busy.eq(chain.busy | stepping),
                     self.overflow_sticky.eq(chain.overflow_sticky)]

        # -- the chain's bus: the front end's pass-through, or the sequencer while stepping --
        fe = Signal(data.StructLayout({"valid": 1, "node": 8, "addr": 8, "we": 1, "wdata": 32}))
        sq = Signal.like(fe)
        with m.If(stepping):
            m.d.comb += [chain.bus.valid.eq(sq.valid), chain.bus.node.eq(sq.node),
                         chain.bus.addr.eq(sq.addr), chain.bus.we.eq(sq.we),
                         chain.bus.wdata.eq(sq.wdata)]
        with m.Else():
            m.d.comb += [chain.bus.valid.eq(fe.valid), chain.bus.node.eq(fe.node),
                         chain.bus.addr.eq(fe.addr), chain.bus.we.eq(fe.we),
                         chain.bus.wdata.eq(fe.wdata)]

        # -- controller register ports: the front end, or the sequencer's fault-word read --
        # Every signal into a controller comes from a register (for 100 MHz: the controllers
        # are spread over the chip): the register port's address, write data and write enable
        # (one per controller), the fault-word read, and the strobes below.
        req = Signal(data.StructLayout({"node": 8, "addr": 8, "we": 1, "wdata": 32}))
        port_addr = Signal(7)
        port_node = Signal(range(n))
        port_write = Signal(n)          # registered write enable, one per controller
        fault_read = Signal()           # registered: the sequencer reads the fault words
        for i, joint in enumerate(joints):
            m.d.comb += [
                joint.reg.addr.eq(Mux(fault_read, _FAULT_PORT, port_addr)),
                joint.reg.w_data.eq(req.wdata),
                joint.reg.w_en.eq(port_write[i] & ~fault_read),
            ]
        # A port read: each controller's r_data registered beside it, gated by a registered
        # one-hot select (set in DECODE), then the words ORed and registered again before the
        # answer (no node decoding fans out over a mux across the chip).
        port_select = Signal(n)
        # (No reset: loaded every cycle, their 0 the flip-flops' synchronous reset, not a
        # gate per bit beside the domain's reset; so is the window word's.)
        port_words = [Signal(_W, name=f"port_word{i}", reset_less=True) for i in range(n)]
        m.d.sync += [word.eq(Mux(port_select[i], joint.reg.r_data, 0))
                     for i, (word, joint) in enumerate(zip(port_words, joints))]
        # (their OR is registered in the window word: PORT_WORD -> PORT_ANSWER)
        port_rdata = _or(port_words)
        port_busy = Signal()
        port_ready = Signal()
        with m.Switch(port_node):
            for i, joint in enumerate(joints):
                with m.Case(i):
                    m.d.comb += [port_busy.eq(joint.busy), port_ready.eq(joint.reg.w_ready)]
        # The controllers' request strobes, registered (one cycle each).
        start = Signal()
        fault_clear = Signal(n)
        reference_strobe = Signal(n)
        message_strobe = Signal()
        m.d.sync += [start.eq(0), fault_clear.eq(0), reference_strobe.eq(0),
                     message_strobe.eq(0)]
        for i, joint in enumerate(joints):
            m.d.comb += [joint.start.eq(start), joint.fault_clear.eq(fault_clear[i]),
                         joint.reference.strobe.eq(reference_strobe[i]),
                         joint.message_strobe.eq(message_strobe)]

        # CONTROL_PERIOD == 0, set with the register.
        self._period_off = Signal(init=1)
        self._elaborate_timer(m, control_period, period_count, stepping, step_due, overruns)
        # The state the front end and the sequencer share.
        shared = SimpleNamespace(
            reference=reference, record=record, sample=sample, fe=fe, sq=sq, req=req,
            stepping=stepping, step_due=step_due, control_period=control_period,
            period_count=period_count, own_words=own_words, port_addr=port_addr,
            port_node=port_node, port_write=port_write, port_rdata=port_rdata,
            port_busy=port_busy, port_ready=port_ready, fault_read=fault_read,
            port_select=port_select,
            control_steps=control_steps, latency=latency, step_cycles=step_cycles,
            start=start, fault_clear=fault_clear, reference_strobe=reference_strobe,
            message_strobe=message_strobe, window_word=Signal(_W, name="window_word", reset_less=True),
            local_multiple=local_multiple, local_phase=local_phase)
        self._elaborate_front_end(m, shared)
        self._elaborate_sequencer(m, shared)
        return m

    # -- the CONTROL_PERIOD timer ------------------------------------------------------------------

    def _elaborate_timer(self, m, period, count, stepping, step_due, overruns):
        """Add the timer: with ``period`` p > 0, a step is due every p cycles; a step due while
        one runs or is still waiting to start is skipped and counted in ``overruns``."""
        # ``count`` is the cycle of the period, 1 .. p: set to 1 when CONTROL_PERIOD is written
        # (the front end), it counts up and the period ends where it equals p (p cycles after
        # the write, then every p), where it goes back to 1 (the flip-flops' synchronous reset
        # and set); p == 0 is registered with the register. An equality of two registers comes
        # before the decision (no load multiplexer, no comparator, no p - 1, no adder).
        period_off = self._period_off
        wrap = Signal()
        m.d.comb += wrap.eq(count == period)
        m.d.sync += count.eq(count + 1)
        with m.If(period_off | wrap | self._period_restart | ResetSignal()):
            m.d.sync += count.eq(1)
        # CONTROL_OVERRUNS saturates at 2**32 - 1: it counts while its incrementer's carry out
        # is 0 (the carry chain's end, no 32-bit comparison).
        overruns_next = Signal(_W + 1)
        m.d.comb += overruns_next.eq(overruns + 1)
        with m.If(~period_off & wrap):
            with m.If(stepping | step_due):
                with m.If(~overruns_next[_W]):
                    m.d.sync += overruns.eq(overruns_next[:_W])
            with m.Else():
                m.d.sync += step_due.eq(1)
        with m.If(period_off):
            m.d.sync += step_due.eq(0)

    # -- the host's bus --------------------------------------------------------------------------

    def _elaborate_front_end(self, m, s):
        n, bus, chain = self._n, self.bus, self.chain
        joints = self.controllers
        fe, stepping, step_due = s.fe, s.stepping, s.step_due
        control_period, period_count = s.control_period, s.period_count
        own_words = s.own_words
        port_addr, port_node, port_write = s.port_addr, s.port_node, s.port_write
        port_rdata, port_busy, port_ready = s.port_rdata, s.port_busy, s.port_ready

        req = s.req
        own = self._own
        decoded = Signal(_decoded_layout(own))
        sources = _local_sources(own)
        # A controller runs (outside a step: a fault clear), registered: a clear's busy is
        # seen from the third cycle after its request, before the next request's DISPATCH.
        clearing = Signal()
        m.d.sync += clearing.eq(Cat(*(joint.busy for joint in joints)).any())
        m.d.comb += [port_addr.eq(req.addr[:7]), port_node.eq(req.node)]
        self._window_word(m, s, req, decoded)

        # The decoding of the request, registered (DECODE -> DISPATCH).
        window = Signal(_decoded_layout(own))
        m.d.comb += [window.window.eq((req.node < n) & (req.addr >= CONTROLLER_BASE)),
                     window.node.eq(req.node < n),
                     window.control.eq((req.node == CONTROL_NODE) & (req.addr == _CONTROL_ADDR)),
                     window.status.eq((req.node == CONTROL_NODE) & (req.addr == _STATUS_ADDR))]
        with m.Switch(req.addr):
            for word in CONTROLLER_WORDS:
                kind, index = _window_entry(word)
                with m.Case(word.address):
                    m.d.comb += [window.exists.eq(1), window.writable.eq(word.writable),
                                 window.source.eq(sources.index(
                                     (kind, index) if kind in ("reference", "record", "sensor")
                                     else (kind, 0) if kind == "port" else ("zero", 0)))]
        with m.If(req.node == CONTROL_NODE):
            with m.Switch(req.addr):
                for k, name in enumerate(own):
                    reg = control_register(name)
                    with m.Case(reg.address):
                        m.d.comb += [window.own.eq(1), window.own_index.eq(k),
                                     window.own_writable.eq(reg.writable),
                                     window.source.eq(sources.index(("own", name)))]

        # Answers are registered onto the bus (ready one cycle, in ANSWER).
        m.d.sync += bus.ready.eq(0)

        def answer(rdata=0, error=0):
            m.d.sync += [bus.ready.eq(1), bus.rdata.eq(rdata), bus.error.eq(error)]
            m.next = "ANSWER"

        with m.FSM(name="front_end"):
            with m.State("IDLE"):
                # (not while the host's command holds the bus locked: its STATUS check found
                # the chain idle, and its writes must not meet a running step)
                with m.If(step_due & ~chain.busy & ~stepping & ~bus.lock):
                    m.d.sync += [stepping.eq(1), step_due.eq(0)]
                with m.Elif(bus.valid):
                    m.d.sync += [req.node.eq(bus.node), req.addr.eq(bus.addr),
                                 req.we.eq(bus.we), req.wdata.eq(bus.wdata)]
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.d.sync += [decoded.eq(window),
                             s.port_select.eq((Const(1, n) << req.node)[:n])]
                m.next = "DISPATCH"
            with m.State("DISPATCH"):
                step = (req.wdata & CONTROL_STEP).any()
                start = (req.wdata & CONTROL_START).any()
                clear = (req.wdata & CONTROL_CLEAR).any()
                fault_clear = (req.wdata & CONTROL_FAULT_CLEAR).any()
                with m.If(decoded.window):
                    self._window_access(m, s, req, decoded, answer)
                with m.Elif(decoded.own):
                    with m.If(req.we):
                        period_write = decoded.own_writable   # CONTROL_PERIOD ...
                        if self._local_loop:                  # ... or LOCAL_MULTIPLE
                            period_write = period_write & (
                                decoded.own_index == own.index("CONTROL_PERIOD"))
                        with m.If(period_write):
                            # CONTROL_PERIOD: the timer restarts.
                            m.d.comb += self._period_restart.eq(1)
                            m.d.sync += [control_period.eq(req.wdata),
                                         self._period_off.eq(req.wdata == 0),
                                         step_due.eq(0)]
                            answer(req.wdata)
                        if self._local_loop:
                            with m.Elif(decoded.own_writable):
                                self._local_multiple_write(m, s, req, answer)
                        with m.Else():
                            answer(error=1)
                    with m.Else():
                        # The word (of this cycle) is registered in the window word and
                        # answered from there (one source fewer on the bus's read data).
                        with m.If(decoded.own_index == own.index("FAULTS")):
                            # A fault clear still running (outside a step) ends first:
                            # FAULTS reads as the model's, cleared.
                            with m.If(stepping | ~clearing):
                                m.next = "WINDOW_READ"
                        with m.Else():
                            m.next = "WINDOW_READ"
                with m.Elif(decoded.control & req.we):
                    with m.If(stepping & (step | start | fault_clear)):
                        answer(error=1)
                    with m.Elif(stepping):
                        pass                          # clear only: waits for the step's end
                    with m.Elif(step & chain.busy):
                        answer(error=1)
                    with m.Elif(clear | (start & ~step)):
                        m.next = "CONTROL_CHAIN"
                    with m.Else():
                        m.next = "CONTROL_APPLY"
                with m.Elif(decoded.status & ~req.we & stepping):
                    # busy, not done (the chain's STATUS bits, the overflow bit as it has it)
                    answer(Mux(chain.overflow_sticky.any(), STATUS_BUSY | STATUS_OVERFLOW,
                               STATUS_BUSY))
                with m.Elif(stepping):
                    with m.If(req.we & decoded.node):
                        answer(error=1)               # node writes: refused while busy
                    # anything else waits for the step's end
                with m.Else():
                    m.next = "PASS"
            with m.State("PASS"):
                m.d.comb += [fe.valid.eq(1), fe.node.eq(req.node), fe.addr.eq(req.addr),
                             fe.we.eq(req.we), fe.wdata.eq(req.wdata)]
                with m.If(chain.bus.ready):
                    answer(chain.bus.rdata, chain.bus.error)
            with m.State("CONTROL_CHAIN"):
                # The chain's bits of a CONTROL write (clear; start unless control_step).
                step = (req.wdata & CONTROL_STEP).any()
                word = (req.wdata & CONTROL_CLEAR) | Mux(step, 0, req.wdata & CONTROL_START)
                m.d.comb += [fe.valid.eq(1), fe.node.eq(CONTROL_NODE), fe.addr.eq(_CONTROL_ADDR),
                             fe.we.eq(1), fe.wdata.eq(word)]
                with m.If(chain.bus.ready):
                    with m.If(chain.bus.error):
                        answer(error=1)
                    with m.Else():
                        m.next = "CONTROL_APPLY"
            with m.State("CONTROL_APPLY"):
                # fault_clear, then control_step (the step waits for the clears to end: the
                # registered clears reach the controllers in the cycle the sequencer sees
                # `stepping`, and it waits for them to be idle).
                with m.If((req.wdata & CONTROL_FAULT_CLEAR).any()):
                    m.d.sync += s.fault_clear.eq((1 << n) - 1)
                with m.If((req.wdata & CONTROL_STEP).any()):
                    m.d.sync += stepping.eq(1)
                answer(req.wdata)
            with m.State("PORT"):
                # The controller's register port, while the controller is idle (a write: its
                # registered enable, set on the way here, is taken in the first idle cycle).
                with m.If(req.we):
                    with m.If(port_ready):
                        m.d.sync += port_write.eq(0)
                        answer(req.wdata)
                with m.Elif(~port_busy):
                    m.next = "PORT_READ"
            with m.State("PORT_READ"):
                # The word of the address given in the previous (idle) cycle, registered beside
                # its controller, then ORed into a register (PORT_WORD), then answered.
                m.next = "PORT_WORD"
            with m.State("PORT_WORD"):
                m.next = "PORT_ANSWER"
            with m.State("PORT_ANSWER"):
                # (the ORed port words, registered in the window word in PORT_WORD)
                answer(s.window_word)
            with m.State("WINDOW_READ"):
                # A reference, record or sensor word or an own control register, registered
                # in DISPATCH.
                answer(s.window_word)
            with m.State("ANSWER"):
                m.next = "IDLE"

    def _window_access(self, m, s, req, decoded, answer):
        """DISPATCH of an access to node ``req.node``'s controller window."""
        n = self._n
        reference, record = s.reference, s.record
        stepping = s.stepping
        # The word's kind and index from its read source (_local_sources): the port's code,
        # the reference words' codes, fault_clear's ("zero", 0).
        sources = _local_sources(self._own)
        with m.If(~decoded.exists | (req.we & ~decoded.writable) | (req.we & stepping)):
            answer(error=1)
        with m.Elif(decoded.source == sources.index(("port", 0))):
            with m.If(~stepping):
                with m.If(req.we):
                    m.d.sync += s.port_write.eq((Const(1, n) << req.node)[:n])
                m.next = "PORT"
            # a read while a step runs waits for its end (the controller is busy)
        with m.Elif(~req.we):
            m.next = "WINDOW_READ"
        with m.Else():
            with m.Switch(req.node):
                for i in range(n):
                    with m.Case(i):
                        with m.Switch(decoded.source):
                            for k, word in enumerate(reference[i]):
                                with m.Case(sources.index(("reference", k))):
                                    m.d.sync += word.eq(req.wdata)
                                    if k == 2:   # qdd_ref: the reference strobe
                                        m.d.sync += s.reference_strobe[i].eq(1)
                            with m.Case(sources.index(("zero", 0))):    # fault_clear
                                m.d.sync += s.fault_clear[i].eq(1)
            answer(req.wdata)

    def _window_word(self, m, s, req, decoded):
        """Register the word a local read answers, every cycle, from the registered request
        and its decoding's ``source`` (:func:`_local_sources`): the window's reference,
        record and sensor words (the sensor port, the joint port's status; fault_clear: 0), the
        own control registers, the ORed register-port words (PORT_WORD -> PORT_ANSWER)."""
        n = self._n
        word = Signal(_W)
        tables = [{"reference": s.reference[i], "record": s.record[i],
                   "sensor": (self.sensor[i].q, self.sensor[i].qd,
                              status_word(self.joint_port[i]))} for i in range(n)]
        with m.Switch(decoded.source):
            for code, (kind, index) in enumerate(_local_sources(self._own)):
                if kind == "zero":
                    continue
                with m.Case(code):
                    if kind == "own":
                        m.d.comb += word.eq(s.own_words[index])
                    elif kind == "port":
                        m.d.comb += word.eq(s.port_rdata)
                    elif n == 1:
                        m.d.comb += word.eq(tables[0][kind][index])
                    else:
                        with m.Switch(req.node):
                            for i in range(n):
                                with m.Case(i):
                                    m.d.comb += word.eq(tables[i][kind][index])
        m.d.sync += s.window_word.eq(word)

    # -- the control step --------------------------------------------------------------------------

    def _elaborate_sequencer(self, m, s):
        n, spec, chain = self._n, self.spec, self.chain
        joints = self.controllers
        record, sample, sq = s.record, s.sample, s.sq
        stepping, fault_read = s.stepping, s.fault_read
        control_steps, latency, step_cycles = s.control_steps, s.latency, s.step_cycles

        node = Signal(range(n))
        k = Signal(2)
        seen = Signal(n)                # model.valid / done seen, per controller
        tau_word = Signal(_W)
        tau_valid = Signal(n)
        m.d.sync += tau_valid.eq(0)
        for i, joint in enumerate(joints):
            m.d.comb += [joint.model.tau.eq(tau_word), joint.model.tau_valid.eq(tau_valid[i])]
        m.d.sync += step_cycles.eq(step_cycles + 1)
        model_word = Signal(_W)
        word_out = Signal(_W)
        # The controllers' Q15.16 q, qd, qdd into the nodes' formats, the nodes' tau back
        # (linkdyn.model.microprogram.rescale_word, word for word as the model does).
        # The word (node, k) is chosen first and rescaled once, by the shift of its quantity k
        # (one rescaling per distinct format, not one per node and word).
        rmap = spec.registers
        controller_bits = CONTROLLER_WORD.fraction_bits
        raw_word = Signal(signed(_W))
        with m.Switch(node):
            for i, joint in enumerate(joints):
                with m.Case(i):
                    with m.Switch(k):
                        for index, value in enumerate(
                                (joint.model.q, joint.model.qd, joint.model.qdd)):
                            with m.Case(index):
                                m.d.comb += raw_word.eq(value)
        input_bits = [rmap[name].format.fraction_bits for name in ("q", "qd", "qdd")]
        rescaled = {bits: rescale_expression(raw_word, controller_bits, bits)
                    for bits in dict.fromkeys(input_bits)}
        with m.Switch(k):
            for index, bits in enumerate(input_bits):
                with m.Case(index):
                    m.d.comb += model_word.eq(rescaled[bits])

        def last_node():
            return node == n - 1

        # With the local loop: this step runs a local update (not the first of its period).
        local = None if s.local_phase is None else (s.local_phase != 0)

        with m.FSM(name="sequencer"):
            with m.State("IDLE"):
                m.d.sync += step_cycles.eq(1)
                with m.If(stepping):
                    m.next = "WAIT_IDLE"
            with m.State("WAIT_IDLE"):
                # A fault clear asked with the step runs first.
                with m.If(~Cat(*(joint.busy for joint in joints)).any()):
                    m.d.sync += [s.start.eq(1), seen.eq(0)]
                    m.next = "FEEDBACK"
            with m.State("FEEDBACK"):
                # The controllers capture the sensor in the cycle the registered start is
                # high, and so does the record's sample.
                with m.If(s.start):
                    for i in range(n):
                        m.d.sync += [sample[i][0].eq(self.sensor[i].q),
                                     sample[i][1].eq(self.sensor[i].qd)]
                m.d.sync += seen.eq(seen | Cat(*(joint.model.valid for joint in joints)))
                with m.If(seen.all()):
                    m.d.sync += [node.eq(0), k.eq(0)]
                    m.next = "WORD"
            with m.State("WORD"):
                # The controller's word (node, k) registered before it goes to the chain's bus.
                m.d.sync += word_out.eq(model_word)
                m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += [sq.valid.eq(1), sq.node.eq(node), sq.addr.eq(spec.input_address + k),
                             sq.we.eq(1), sq.wdata.eq(word_out)]
                with m.If(chain.bus.ready):
                    m.next = "WORD"
                    with m.If(k == 2):
                        m.d.sync += [k.eq(0), node.eq(node + 1)]
                        with m.If(last_node()):
                            m.next = "START"
                    with m.Else():
                        m.d.sync += k.eq(k + 1)
            with m.State("START"):
                m.d.comb += [sq.valid.eq(1), sq.node.eq(CONTROL_NODE), sq.addr.eq(_CONTROL_ADDR),
                             sq.we.eq(1), sq.wdata.eq(CONTROL_START)]
                if local is not None:
                    m.d.comb += sq.wdata.eq(Mux(local, CONTROL_LOCAL, CONTROL_START))
                with m.If(chain.bus.ready):
                    m.next = "UPDATE"
            with m.State("UPDATE"):
                # chain.busy is high from the cycle the start was answered.
                with m.If(~chain.busy):
                    m.d.sync += [s.message_strobe.eq(1 if local is None else ~local),
                                 node.eq(0), seen.eq(0)]
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += [sq.valid.eq(1), sq.node.eq(node), sq.addr.eq(spec.tau_address)]
                with m.If(chain.bus.ready):
                    m.d.sync += [tau_word.eq(rescale_expression(chain.bus.rdata,
                                                      rmap["tau"].format.fraction_bits,
                                                      controller_bits)),
                                 tau_valid.eq((Const(1, n) << node)[:n]), node.eq(node + 1)]
                    with m.If(last_node()):
                        m.next = "OUTPUT"
            with m.State("OUTPUT"):
                m.d.sync += seen.eq(seen | Cat(*(joint.done for joint in joints)))
                with m.If(seen.all()):
                    m.d.sync += fault_read.eq(1)          # high in FAULT_WORD and RECORD
                    m.next = "FAULT_WORD"
            with m.State("FAULT_WORD"):
                m.next = "RECORD"
            with m.State("RECORD"):
                m.d.sync += fault_read.eq(0)
                for i, joint in enumerate(joints):
                    values = (joint.tau_cmd, joint.actuator.i_ref, joint.reg.r_data,
                              sample[i][0], sample[i][1])
                    m.d.sync += [word.eq(value) for word, value in zip(record[i], values)]
                m.d.sync += [control_steps.eq(control_steps + 1), latency.eq(step_cycles),
                             stepping.eq(0)]
                if local is not None:
                    self._local_phase_advance(m, s)
                m.next = "IDLE"

    # -- the local loop's schedule (LOCAL_MULTIPLE) ----------------------------------------------

    def _local_multiple_write(self, m, s, req, answer):
        """DISPATCH of a LOCAL_MULTIPLE write: m >= 1 restarts the schedule at a chain update;
        0, or any write while a step runs, is refused."""
        with m.If((req.wdata == 0) | s.stepping):
            answer(error=1)
        with m.Else():
            m.d.sync += [s.local_multiple.eq(req.wdata), s.local_phase.eq(0)]
            answer(req.wdata)

    def _local_phase_advance(self, m, s):
        """At a step's end: the next step's phase, 0 (a chain update) after m - 1 local ones."""
        following = s.local_phase + 1
        m.d.sync += s.local_phase.eq(Mux(following >= s.local_multiple, 0, following))


def rescale_expression(value, from_bits, to_bits):
    """The expression of :func:`linkdyn.model.microprogram.rescale_word` on a 32-bit word:
    a saturating left shift, or a right shift rounding half up."""
    word = value.as_signed() if hasattr(value, "as_signed") else value
    if to_bits == from_bits:
        return word
    if to_bits > from_bits:
        shift = to_bits - from_bits
        top = word.as_unsigned()[_W - 1 - shift:]
        fits = (top == 0) | (top == (1 << (shift + 1)) - 1)
        return Mux(fits, (word << shift)[:_W].as_signed(),
                   Mux(word[_W - 1], Const(-(1 << (_W - 1)), signed(_W)),
                       Const((1 << (_W - 1)) - 1, signed(_W))))
    shift = from_bits - to_bits
    return ((word + (1 << (shift - 1))) >> shift)[:_W].as_signed()
