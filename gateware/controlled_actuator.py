"""Joint controllers on the distributed boards (source paper Sect. 3.1, Fig. 7: every actuator's
FPGA controls its joint): :class:`BoardController`, the bus target of one board with its
:class:`~linkdyn.gateware.controller.JointController` beside the node, and
:class:`ControlledDistributedChain`, the distributed chain with one on every board behind the
register bus of :class:`~linkdyn.gateware.controlled_chain.ControlledChain`
(``docs/distributed.md``, *Joint controllers on the boards*). The base board's front end and
step sequencer are also a component of their own, :class:`ControlledFrontEnd` (board 0's top
with its controller, ``linkdyn.boards.actuator_board``), with the same body.

Structure::

    host --bus--> front end + step sequencer (base board)
                     |  the chain's words, the controller window of node k, and the commands
                     v  FEEDBACK / OUTPUT / HOLD of a control step, over the links
                  DistributedChain --links--> board k: ActuatorCore
                                                 node target = BoardController
                                                    node k (q, qd, qdd written here, tau read)
                                                    JointController k <-- sensor k (q, qd)
                                                                      --> actuator k (i_ref,
                                                                          enable)

A control step (CONTROL.control_step, the CONTROL command, or the CONTROL_PERIOD timer):

1. FEEDBACK to every board in turn (a bus write to its private command word): the board runs
   its controller's ``feedback`` on its own sensor and references and writes the model's
   ``q, qd, qdd`` into its node locally;
2. CONTROL.start: one update of the chain over the links;
3. OUTPUT to every board: the board strobes its message watchdog (the update's messages came),
   reads its node's ``tau`` locally and runs ``output`` on it (its own ``tau``, its own
   current reference), keeps the step's record (``tau_cmd``, ``i_ref``, fault word, sensor
   sample) in its window and answers with its fault bit (FAULTS);
4. CONTROL_STEPS and CONTROL_LATENCY_CYCLES.

Every word is that of :class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel` (the
tests hold the two equal word for word).

**The safe state behind a cut.** A board counts the cycles since the last FEEDBACK or HOLD
command reached it. FEEDBACK carries the board's watchdog time: ``CONTROL_PERIOD +
CONTROL_PERIOD // 2`` cycles with the timer on, 0 (no timer) with host-driven steps. When the
time passes without a command (the board is cut off from the base) the board runs a *missed
step*: its controller's ``output`` on the last ``tau`` without a message strobe, so the
shut-off's message watchdog counts (``msg_age``) and, past ``watchdog_cycles``, latches the
``message_watchdog`` fault: zero current, enable low, until the host clears it. With
``watchdog_cycles = 0`` and ``watchdog_message`` on, a board behind a cut is off within 1.5
periods (plus the ``output`` segment, 182 cycles) of the last command it received. A step that
finds the chain still busy (an update stuck behind a cut) or a board unreachable sends HOLD to
every board it reaches instead, so the boards before the cut keep their watchdogs fed, and a
step whose update has not finished when the next period is due is abandoned (the update goes on
when the link comes back; CONTROL_OVERRUNS counts the skipped periods).
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from linkdyn.model.controller import SPECIAL_REGISTERS
from linkdyn.model.fixedpoint import WORD_WIDTH
from linkdyn.model.protocol import (
    CONTROL_CLEAR, CONTROL_FAULT_CLEAR, CONTROL_NODE, CONTROL_START, CONTROL_STEP,
    CONTROLLER_BASE, CONTROLLER_WORDS, MAX_NODES, RECORD_WORDS, REFERENCE_WORDS, STATUS_BUSY,
    STATUS_OVERFLOW, ProtocolSpec, control_register,
)

from linkdyn.model.controller import WORD as CONTROLLER_WORD
from linkdyn.model.microprogram import node_formats

from .actuator import NodeTarget
from .bus import RegisterBusSignature
from .controlled_chain import rescale_expression
from .controller import ActuatorSignature, JointController, SensorSignature
from .distributed import DistributedChain
from .joint_port import JointPortStatusSignature, status_word

__all__ = ["BoardController", "ControlledDistributedChain", "ControlledFrontEnd", "COMMAND_WORDS",
           "WATCHDOG_SLACK"]

#: Private words of a board's controller window: the control step's commands from the base
#: (never the host's: the front end refuses them), above the window's host words.
COMMAND_WORDS = {"FEEDBACK": 0xD0, "OUTPUT": 0xD1, "HOLD": 0xD2}
#: The board's watchdog time is the period plus this fraction of it (command jitter: the
#: hops, retransmissions).
WATCHDOG_SLACK = 0.5

_W = WORD_WIDTH
_MASK = (1 << _W) - 1
_FAULT_PORT = SPECIAL_REGISTERS["fault"].address
_CONTROL_ADDR = control_register("CONTROL").address
_STATUS_ADDR = control_register("STATUS").address
_OWN_CONTROL = ("CONTROL_PERIOD", "CONTROL_STEPS", "FAULTS", "CONTROL_OVERRUNS",
                "CONTROL_LATENCY_CYCLES")
_REFERENCE = {w.address: k for k, w in enumerate(REFERENCE_WORDS)}
_RECORD = {w.address: k for k, w in enumerate(RECORD_WORDS)}
_SENSOR = {w.address: k for k, w in enumerate(w for w in CONTROLLER_WORDS
                                              if w.name in ("sensor_q", "sensor_qd"))}
_PORTS = {w.address: w.port for w in CONTROLLER_WORDS if w.port is not None}
_FAULT_CLEAR = next(w.address for w in CONTROLLER_WORDS if w.name == "fault_clear")
_JOINT_PORT = next(w.address for w in CONTROLLER_WORDS if w.name == "joint_port")


class BoardController(wiring.Component):
    """One board's bus target: the node's (a :class:`~linkdyn.gateware.actuator.NodeTarget`,
    addresses below ``CONTROLLER_BASE``) and the joint controller beside it (its window from
    ``CONTROLLER_BASE``, as on the single-FPGA chain, and the commands
    :data:`COMMAND_WORDS` of a control step; module docstring).

    Parameters
    ----------
    node : LinkDynNode
        The board's node (``ActuatorCore(node_target=lambda node: BoardController(node))``).
    pipelined : bool
        The controller's timing (:class:`~linkdyn.gateware.controller.JointController`).

    Members
    -------
    bus, ext_addr, ext_write_data, ext_write_enable, ext_write_ready, ext_read_data,
    node_busy, hold
        As :class:`~linkdyn.gateware.actuator.NodeTarget`'s (``bus.error`` never set: the
        base decides the access rules).
    sensor : In(SensorSignature)
        The joint's sensor: ``q`` (rad), ``qd`` (rad/s), Q15.16.
    actuator : Out(ActuatorSignature)
        ``i_ref`` (A, Q15.16; 0 while off or faulted), ``enable``.
    joint_port : In(JointPortStatusSignature)
        The joint port's status, read in the window word ``joint_port`` (0, "no port", where
        nothing drives it).
    fault : Out(1)
        The controller's fault latch.
    missed : Out(1)
        One cycle when the watchdog time passed without a command (a missed step runs).

    Attributes
    ----------
    controller : JointController
    target : NodeTarget
    """

    def __init__(self, node, *, fmt=None, pipelined=True):
        if not isinstance(pipelined, bool):
            raise TypeError(f"pipelined must be a bool, not {pipelined!r}")
        self.target = NodeTarget(node)
        self.controller = JointController(pipelined=pipelined)
        spec = ProtocolSpec(1, node_formats(fmt))
        self._input_address = spec.input_address
        self._tau_address = spec.tau_address
        # The controller's words are Q15.16; the node's q, qd, qdd and tau have their own
        # formats (linkdyn.model.microprogram.rescale_word, as ControlledChainModel does).
        controller_bits = CONTROLLER_WORD.fraction_bits
        self._model_bits = [(controller_bits, spec.registers[name].format.fraction_bits)
                            for name in ("q", "qd", "qdd")]
        self._tau_bits = (spec.registers["tau"].format.fraction_bits, controller_bits)
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "ext_addr": Out(node.addr_width),
            "ext_write_data": Out(_W),
            "ext_write_enable": Out(1),
            "ext_write_ready": In(1),
            "ext_read_data": In(_W),
            "node_busy": In(1),
            "hold": Out(1),
            "sensor": In(SensorSignature),
            "actuator": Out(ActuatorSignature),
            "joint_port": In(JointPortStatusSignature),
            "fault": Out(1),
            "missed": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.target = target = self.target
        m.submodules.controller = joint = self.controller
        bus = self.bus
        m.d.comb += [
            self.ext_addr.eq(target.ext_addr), self.ext_write_data.eq(target.ext_write_data),
            self.ext_write_enable.eq(target.ext_write_enable),
            target.ext_write_ready.eq(self.ext_write_ready),
            target.ext_read_data.eq(self.ext_read_data), target.node_busy.eq(self.node_busy),
            self.hold.eq(target.hold),
            joint.sensor.q.eq(self.sensor.q), joint.sensor.qd.eq(self.sensor.qd),
            self.actuator.i_ref.eq(joint.actuator.i_ref),
            self.actuator.enable.eq(joint.actuator.enable),
            self.fault.eq(joint.fault),
        ]
        reference = [Signal(_W, name=f"ref_{w.name}") for w in REFERENCE_WORDS]
        record = [Signal(_W, name=f"rec_{w.name}") for w in RECORD_WORDS]
        sample = [Signal(_W, name=f"sample_{k}") for k in ("q", "qd")]
        m.d.comb += [joint.reference.q.eq(reference[0]), joint.reference.qd.eq(reference[1]),
                     joint.reference.qdd.eq(reference[2])]
        tau = Signal(_W)
        m.d.comb += joint.model.tau.eq(tau)
        # Registered strobes into the controller.
        start, tau_valid, message, clear, ref_strobe = (Signal(name=name) for name in (
            "start", "tau_valid", "message", "clear", "ref_strobe"))
        m.d.sync += [start.eq(0), tau_valid.eq(0), message.eq(0), clear.eq(0),
                     ref_strobe.eq(0)]
        m.d.comb += [joint.start.eq(start), joint.model.tau_valid.eq(tau_valid),
                     joint.message_strobe.eq(message), joint.fault_clear.eq(clear),
                     joint.reference.strobe.eq(ref_strobe)]

        # -- the watchdog time --
        limit = Signal(_W)
        count = Signal(_W)
        fed = Signal()
        expired = Signal()
        m.d.comb += expired.eq((limit != 0) & (count >= limit))
        with m.If(fed):
            m.d.sync += count.eq(0)
        with m.Elif(~expired):
            m.d.sync += count.eq(count + 1)

        # -- the node's target: the host's access, or this board's step --
        own = Signal(data.StructLayout({"valid": 1, "addr": 8, "we": 1, "wdata": 32}))
        passing = Signal()
        with m.If(passing):
            m.d.comb += [target.bus.valid.eq(bus.valid), target.bus.addr.eq(bus.addr),
                         target.bus.we.eq(bus.we), target.bus.wdata.eq(bus.wdata)]
        with m.Else():
            m.d.comb += [target.bus.valid.eq(own.valid), target.bus.addr.eq(own.addr),
                         target.bus.we.eq(own.we), target.bus.wdata.eq(own.wdata)]

        port_addr = Signal(7)
        port_write = Signal()
        m.d.comb += [joint.reg.addr.eq(port_addr), joint.reg.w_data.eq(bus.wdata),
                     joint.reg.w_en.eq(port_write)]
        word = Signal(_W)                 # a window word to answer
        k = Signal(2)
        model = [joint.model.q, joint.model.qd, joint.model.qdd]
        model_words = [Signal(_W, name=f"model_{name}") for name in ("q", "qd", "qdd")]
        with m.If(joint.model.valid):
            m.d.sync += [w.eq(rescale_expression(v, *bits))
                         for w, v, bits in zip(model_words, model, self._model_bits)]
        model_word = Signal(_W)
        with m.Switch(k):
            for index, value in enumerate(model_words):
                with m.Case(index):
                    m.d.comb += model_word.eq(value)

        # A fault clear is seen as the controller's busy from its third cycle: no access
        # starts before (a port read then reads the cleared word, as the model's).
        settle = Signal(2)
        with m.If(clear):
            m.d.sync += settle.eq(3)
        with m.Elif(settle != 0):
            m.d.sync += settle.eq(settle - 1)

        def answer(rdata):
            m.d.comb += [bus.ready.eq(1), bus.rdata.eq(rdata)]
            m.next = "GAP"

        with m.FSM(name="board_controller"):
            with m.State("IDLE"):
                with m.If(settle != 0):
                    pass
                with m.Elif(expired & ~joint.busy):
                    m.d.comb += [self.missed.eq(1), fed.eq(1)]
                    m.d.sync += tau_valid.eq(1)
                    m.next = "MISSED"
                with m.Elif(bus.valid):
                    m.next = "DECODE"
                    with m.If(bus.addr < CONTROLLER_BASE):
                        m.next = "NODE"
            with m.State("NODE"):
                m.d.comb += passing.eq(1)
                with m.If(~bus.valid):
                    # Given up by the board (a read behind a cut): the target goes idle too.
                    m.next = "IDLE"
                with m.Elif(target.bus.ready):
                    answer(target.bus.rdata)
            with m.State("DECODE"):
                m.d.sync += port_addr.eq(bus.addr - CONTROLLER_BASE)
                with m.Switch(bus.addr):
                    for address in _PORTS:
                        with m.Case(address):
                            m.d.sync += port_write.eq(bus.we)
                            m.next = "PORT"
                    for address, index in _REFERENCE.items():
                        with m.Case(address):
                            with m.If(bus.we):
                                m.d.sync += reference[index].eq(bus.wdata)
                                if index == 2:        # qdd_ref: the reference strobe
                                    m.d.sync += ref_strobe.eq(1)
                                answer(bus.wdata)
                            with m.Else():
                                answer(reference[index])
                    with m.Case(_FAULT_CLEAR):
                        with m.If(bus.we):
                            m.d.sync += clear.eq(1)
                            answer(bus.wdata)
                        with m.Else():
                            answer(0)
                    for address, index in _RECORD.items():
                        with m.Case(address):
                            answer(record[index])
                    for address, index in _SENSOR.items():
                        with m.Case(address):
                            answer((self.sensor.q, self.sensor.qd)[index])
                    with m.Case(_JOINT_PORT):
                        answer(status_word(self.joint_port))
                    with m.Case(COMMAND_WORDS["FEEDBACK"]):
                        m.d.comb += fed.eq(1)
                        m.d.sync += limit.eq(bus.wdata)
                        m.next = "FEEDBACK"
                    with m.Case(COMMAND_WORDS["OUTPUT"]):
                        m.d.comb += fed.eq(1)
                        m.d.sync += [message.eq(1), own.addr.eq(self._tau_address),
                                     own.we.eq(0)]
                        m.next = "READ_TAU"
                    with m.Case(COMMAND_WORDS["HOLD"]):
                        m.d.comb += fed.eq(1)
                        m.d.sync += limit.eq(bus.wdata)
                        answer(bus.wdata)
                    with m.Default():
                        answer(0)
            # -- the controller's register port (as ControlledChain's) --
            with m.State("PORT"):
                with m.If(port_write):
                    with m.If(joint.reg.w_ready):
                        m.d.sync += port_write.eq(0)
                        answer(bus.wdata)
                with m.Elif(~joint.busy):
                    m.next = "PORT_READ"
            with m.State("PORT_READ"):
                m.d.sync += word.eq(joint.reg.r_data)
                m.next = "PORT_ANSWER"
            with m.State("PORT_ANSWER"):
                answer(word)
            # -- FEEDBACK: the controller's feedback, the node's q, qd, qdd written here --
            with m.State("FEEDBACK"):
                with m.If(~joint.busy & ~clear):
                    m.d.sync += [start.eq(1), k.eq(0)]
                    m.next = "FEEDBACK_RUN"
            with m.State("FEEDBACK_RUN"):
                with m.If(start):
                    # The controller captures the sensor in this cycle; so does the record.
                    m.d.sync += [sample[0].eq(self.sensor.q), sample[1].eq(self.sensor.qd)]
                with m.If(joint.model.valid):
                    m.next = "WORD"
            with m.State("WORD"):
                m.d.sync += [own.addr.eq(self._input_address + k), own.we.eq(1),
                             own.wdata.eq(model_word)]
                m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += own.valid.eq(1)
                with m.If(target.bus.ready):
                    m.d.sync += k.eq(k + 1)
                    m.next = "WRITE_GAP"
            with m.State("WRITE_GAP"):
                with m.If(k == 3):
                    answer(bus.wdata)
                with m.Else():
                    m.next = "WORD"
            # -- OUTPUT: the node's tau read here, the controller's output on it --
            with m.State("READ_TAU"):
                m.d.comb += own.valid.eq(1)
                with m.If(target.bus.ready):
                    m.d.sync += tau.eq(rescale_expression(target.bus.rdata, *self._tau_bits))
                    m.next = "OUTPUT"
            with m.State("OUTPUT"):
                with m.If(~joint.busy):
                    m.d.sync += tau_valid.eq(1)
                    m.next = "OUTPUT_RUN"
            with m.State("OUTPUT_RUN"):
                with m.If(joint.done):
                    m.d.sync += port_addr.eq(_FAULT_PORT)
                    m.next = "FAULT_WORD"
            with m.State("FAULT_WORD"):
                m.next = "RECORD"
            with m.State("RECORD"):
                values = (joint.tau_cmd, joint.actuator.i_ref, joint.reg.r_data, sample[0],
                          sample[1])
                m.d.sync += [w.eq(v) for w, v in zip(record, values)]
                answer(joint.fault)
            # -- a missed step: output on the last tau, no message strobe --
            with m.State("MISSED"):
                with m.If(joint.done):
                    m.next = "IDLE"
            with m.State("GAP"):
                # One cycle for the initiator to drop valid.
                m.next = "IDLE"
        return m


class ControlledDistributedChain(wiring.Component):
    """The distributed chain with a :class:`BoardController` on every board, and the control
    step's front end and sequencer on the base, behind the register bus of
    :class:`~linkdyn.gateware.controlled_chain.ControlledChain` (module docstring).

    Parameters
    ----------
    n : int
        Number of boards (one node and one joint each), ``1 .. MAX_NODES``.
    fmt : QFormat
        Word format of the nodes (Q15.16).
    policy : str
        ``"sequential"`` only: the controllers' step runs one update at a time (the
        pipelined policy is refused).
    pipelined : bool
        The controllers' timing.
    **chain_parameters
        ``bits``, ``delay``, ``ber``, ``seed``, ``timeout``, ``link_parameters``,
        ``cordic_step_cycles`` of :class:`~linkdyn.gateware.distributed.DistributedChain`.

    Members
    -------
    bus : In(RegisterBusSignature())
        As :class:`~linkdyn.gateware.controlled_chain.ControlledChain`'s.
    busy : Out(1)
        An update or a control step runs.
    overflow_sticky : Out(n)
    faults : Out(n)
        FAULTS as the base knows it (updated by every step's OUTPUT answers and the clears).
    sensor : In(SensorSignature).array(n)
        Per board: the joint's sensor port.
    actuator : Out(ActuatorSignature).array(n)
        Per board: the current reference and enable.
    joint_port : In(JointPortStatusSignature).array(n)
        Per board: its joint port's status (the window word ``joint_port``; 0 undriven).
    board_fault : Out(n)
        Per board: its controller's fault latch (a board's own output, as its pins).
    cut, noise : In(n - 1)
        Of the lines (:class:`~linkdyn.gateware.distributed.DistributedChain`).
    link_down : Out(n - 1)

    Attributes
    ----------
    chain : DistributedChain
    boards : list of BoardController
        Every board's target, base first.
    spec : ProtocolSpec
        ``controllers=True, boards=n``.

    Raises
    ------
    TypeError, ValueError
        For a bad parameter; ValueError for a policy other than ``"sequential"``.
    """

    def __init__(self, n, fmt=None, *, policy="sequential", pipelined=True,
                 **chain_parameters):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"Board count must be an integer, not {n!r}")
        if not 1 <= n <= MAX_NODES:
            raise ValueError(f"Board count must be 1 .. {MAX_NODES}, not {n!r}")
        if policy != "sequential":
            raise ValueError(f"Joint controllers on the boards run with the sequential policy "
                             f"only (one update per control step), not policy={policy!r}")
        if not isinstance(pipelined, bool):
            raise TypeError(f"pipelined must be a bool, not {pipelined!r}")
        self._n = n
        fmt = node_formats(fmt)
        self.spec = ProtocolSpec(n, fmt, controllers=True, boards=n)
        self.boards = []

        def board(node):
            controller = BoardController(node, fmt=fmt, pipelined=pipelined)
            self.boards.append(controller)
            return controller

        self.chain = DistributedChain(n, fmt, node_target=board, **chain_parameters)
        self.banks = 1
        self.policy = "sequential"
        hops = max(n - 1, 1)
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "busy": Out(1),
            "overflow_sticky": Out(n),
            "faults": Out(n),
            "sensor": In(SensorSignature).array(n),
            "actuator": Out(ActuatorSignature).array(n),
            "joint_port": In(JointPortStatusSignature).array(n),
            "board_fault": Out(n),
            "cut": In(hops),
            "noise": In(hops),
            "link_down": Out(hops),
        })

    @property
    def n(self):
        """int: number of boards."""
        return self._n

    def elaborate(self, platform):
        m = Module()
        n = self._n
        m.submodules.chain = chain = self.chain
        m.d.comb += [chain.cut.eq(self.cut), chain.noise.eq(self.noise),
                     self.link_down.eq(chain.link_down),
                     self.overflow_sticky.eq(chain.overflow_sticky)]
        for i, board in enumerate(self.boards):
            m.d.comb += [board.sensor.q.eq(self.sensor[i].q),
                         board.sensor.qd.eq(self.sensor[i].qd),
                         self.actuator[i].i_ref.eq(board.actuator.i_ref),
                         self.actuator[i].enable.eq(board.actuator.enable),
                         self.board_fault[i].eq(board.fault)]
            wiring.connect(m, wiring.flipped(self.joint_port[i]), board.joint_port)
        self._elaborate_base(m)
        return m

    def _elaborate_base(self, m):
        n, bus, chain = self._n, self.bus, self.chain
        control_period = Signal(_W)
        period_count = Signal(_W)
        control_steps = Signal(_W)
        overruns = Signal(_W)
        latency = Signal(_W)
        step_cycles = Signal(_W)
        faults = Signal(n)
        stepping = Signal()
        step_due = Signal()
        m.d.comb += [self.busy.eq(chain.busy | stepping), self.faults.eq(faults)]
        own_words = {"CONTROL_PERIOD": control_period, "CONTROL_STEPS": control_steps,
                     "FAULTS": faults, "CONTROL_OVERRUNS": overruns,
                     "CONTROL_LATENCY_CYCLES": latency}
        watchdog = Signal(_W)             # the boards' watchdog time, sent with FEEDBACK

        # -- the timer (as ControlledChain's) --
        wrap = Signal()
        m.d.comb += wrap.eq((control_period != 0) & (period_count >= control_period - 1))
        m.d.sync += period_count.eq(period_count + 1)
        with m.If((control_period == 0) | wrap):
            m.d.sync += period_count.eq(0)
        with m.If(wrap):
            with m.If(stepping | step_due):
                with m.If(overruns != _MASK):
                    m.d.sync += overruns.eq(overruns + 1)
            with m.Else():
                m.d.sync += step_due.eq(1)
        with m.If(control_period == 0):
            m.d.sync += step_due.eq(0)

        # -- the chain's bus: the front end's or the sequencer's --
        layout = data.StructLayout({"valid": 1, "node": 8, "addr": 8, "we": 1, "wdata": 32})
        fe = Signal(layout)
        sq = Signal(layout)
        with m.If(stepping):
            m.d.comb += [chain.bus.valid.eq(sq.valid), chain.bus.node.eq(sq.node),
                         chain.bus.addr.eq(sq.addr), chain.bus.we.eq(sq.we),
                         chain.bus.wdata.eq(sq.wdata)]
        with m.Else():
            m.d.comb += [chain.bus.valid.eq(fe.valid), chain.bus.node.eq(fe.node),
                         chain.bus.addr.eq(fe.addr), chain.bus.we.eq(fe.we),
                         chain.bus.wdata.eq(fe.wdata)]

        # -- the front end --
        req = Signal(data.StructLayout({"node": 8, "addr": 8, "we": 1, "wdata": 32}))
        window = Signal(data.StructLayout({"window": 1, "exists": 1, "writable": 1,
                                           "fault_clear": 1, "own": 1, "own_writable": 1,
                                           "own_index": range(len(_OWN_CONTROL)),
                                           "control": 1, "status": 1, "node": 1}))
        m.d.comb += [window.window.eq((req.node < n) & (req.addr >= CONTROLLER_BASE)
                                      & (req.addr < 0xE0)),
                     window.node.eq(req.node < n),
                     window.control.eq((req.node == CONTROL_NODE)
                                       & (req.addr == _CONTROL_ADDR)),
                     window.status.eq((req.node == CONTROL_NODE) & (req.addr == _STATUS_ADDR)),
                     window.fault_clear.eq(req.addr == _FAULT_CLEAR)]
        with m.Switch(req.addr):
            for word in CONTROLLER_WORDS:
                with m.Case(word.address):
                    m.d.comb += [window.exists.eq(1), window.writable.eq(word.writable)]
        with m.If(req.node == CONTROL_NODE):
            with m.Switch(req.addr):
                for index, name in enumerate(_OWN_CONTROL):
                    reg = control_register(name)
                    with m.Case(reg.address):
                        m.d.comb += [window.own.eq(1), window.own_index.eq(index),
                                     window.own_writable.eq(reg.writable)]
        decoded = Signal.like(window)
        round_node = Signal(range(n + 1))
        round_addr = Signal(8)
        round_data = Signal(_W)
        clear_step = Signal()             # the CONTROL write also asks for a step

        m.d.sync += bus.ready.eq(0)

        def answer(rdata=0, error=0):
            m.d.sync += [bus.ready.eq(1), bus.rdata.eq(rdata), bus.error.eq(error)]
            m.next = "ANSWER"

        with m.FSM(name="front_end"):
            with m.State("IDLE"):
                with m.If(step_due & ~stepping):
                    m.d.sync += [stepping.eq(1), step_due.eq(0)]
                with m.Elif(bus.valid & ~stepping):
                    m.d.sync += [req.node.eq(bus.node), req.addr.eq(bus.addr),
                                 req.we.eq(bus.we), req.wdata.eq(bus.wdata)]
                    m.next = "DECODE"
                with m.Elif(bus.valid & stepping & ~bus.we & (bus.node == CONTROL_NODE)
                            & (bus.addr == _STATUS_ADDR)):
                    # STATUS while a step runs: busy, not done.
                    m.d.sync += [req.node.eq(bus.node), req.addr.eq(bus.addr),
                                 req.we.eq(0)]
                    m.next = "STATUS_BUSY"
                with m.Elif(bus.valid & stepping & bus.we):
                    m.next = "REFUSE"
            with m.State("STATUS_BUSY"):
                answer(Mux(chain.overflow_sticky.any(), STATUS_BUSY | STATUS_OVERFLOW,
                           STATUS_BUSY))
            with m.State("REFUSE"):
                # Every write while a step runs is refused (nothing changes); reads wait.
                answer(error=1)
            with m.State("DECODE"):
                m.d.sync += decoded.eq(window)
                m.next = "DISPATCH"
            with m.State("DISPATCH"):
                with m.If(decoded.window):
                    with m.If(~decoded.exists | (req.we & ~decoded.writable)):
                        answer(error=1)
                    with m.Else():
                        m.next = "PASS"
                        with m.If(req.we & decoded.fault_clear):
                            m.d.sync += faults.eq(faults & ~(Const(1, n) << req.node)[:n])
                with m.Elif(decoded.own):
                    with m.If(req.we):
                        with m.If(decoded.own_writable):
                            period = req.wdata
                            m.d.sync += [control_period.eq(period), period_count.eq(0),
                                         step_due.eq(0),
                                         watchdog.eq(period + (period >> 1)),
                                         round_node.eq(0), round_addr.eq(COMMAND_WORDS["HOLD"]),
                                         round_data.eq(period + (period >> 1)),
                                         clear_step.eq(0)]
                            m.next = "ROUND"   # every board learns its watchdog time
                        with m.Else():
                            answer(error=1)
                    with m.Else():
                        with m.Switch(decoded.own_index):
                            for index, name in enumerate(_OWN_CONTROL):
                                with m.Case(index):
                                    answer(own_words[name])
                with m.Elif(decoded.control & req.we):
                    step = (req.wdata & CONTROL_STEP).any()
                    with m.If(step & chain.busy):
                        answer(error=1)
                    with m.Elif((req.wdata & CONTROL_CLEAR).any()
                                | ((req.wdata & CONTROL_START).any() & ~step)):
                        m.next = "CONTROL_CHAIN"
                    with m.Else():
                        m.next = "CONTROL_APPLY"
                with m.Else():
                    m.next = "PASS"
            with m.State("PASS"):
                m.d.comb += [fe.valid.eq(1), fe.node.eq(req.node), fe.addr.eq(req.addr),
                             fe.we.eq(req.we), fe.wdata.eq(req.wdata)]
                with m.If(chain.bus.ready):
                    answer(chain.bus.rdata, chain.bus.error)
            with m.State("CONTROL_CHAIN"):
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
                m.d.sync += [round_node.eq(0), round_addr.eq(_FAULT_CLEAR), round_data.eq(1),
                             clear_step.eq((req.wdata & CONTROL_STEP).any())]
                with m.If((req.wdata & CONTROL_FAULT_CLEAR).any()):
                    m.d.sync += faults.eq(0)
                    m.next = "ROUND"
                with m.Elif((req.wdata & CONTROL_STEP).any()):
                    m.d.sync += stepping.eq(1)
                    answer(req.wdata)
                with m.Else():
                    answer(req.wdata)
            with m.State("ROUND"):
                # One write to every board it reaches (errors: a board behind a cut): the
                # fault_clear word (CONTROL.fault_clear), HOLD (a new CONTROL_PERIOD).
                m.d.comb += [fe.valid.eq(1), fe.node.eq(round_node), fe.addr.eq(round_addr),
                             fe.we.eq(1), fe.wdata.eq(round_data)]
                with m.If(chain.bus.ready):
                    m.d.sync += round_node.eq(round_node + 1)
                    m.next = "ROUND_GAP"
            with m.State("ROUND_GAP"):
                with m.If(round_node == n):
                    with m.If(clear_step):
                        m.d.sync += stepping.eq(1)
                    answer(req.wdata)
                with m.Else():
                    m.next = "ROUND"
            with m.State("ANSWER"):
                m.next = "IDLE"

        # -- the sequencer --
        node = Signal(range(n + 1))
        failed = Signal()
        m.d.sync += step_cycles.eq(step_cycles + 1)

        def command(name, wdata, then, on_error=None):
            m.d.comb += [sq.valid.eq(1), sq.node.eq(node), sq.addr.eq(COMMAND_WORDS[name]),
                         sq.we.eq(1), sq.wdata.eq(wdata)]
            with m.If(chain.bus.ready):
                m.d.sync += node.eq(node + 1)
                if on_error is not None:
                    on_error(chain.bus.error, chain.bus.rdata)
                m.next = then

        with m.FSM(name="sequencer"):
            with m.State("IDLE"):
                m.d.sync += [step_cycles.eq(1), node.eq(0), failed.eq(0)]
                with m.If(stepping):
                    with m.If(chain.busy):
                        m.next = "HOLD"           # an update still waits behind a cut
                    with m.Else():
                        m.next = "FEEDBACK"
            with m.State("FEEDBACK"):
                def note(error, rdata):
                    with m.If(error):
                        m.d.sync += failed.eq(1)
                command("FEEDBACK", watchdog, "FEEDBACK_GAP", note)
            with m.State("FEEDBACK_GAP"):
                with m.If(node == n):
                    with m.If(failed):
                        m.d.sync += node.eq(0)
                        m.next = "HOLD"
                    with m.Else():
                        m.next = "START"
                with m.Else():
                    m.next = "FEEDBACK"
            with m.State("START"):
                m.d.comb += [sq.valid.eq(1), sq.node.eq(CONTROL_NODE), sq.addr.eq(_CONTROL_ADDR),
                             sq.we.eq(1), sq.wdata.eq(CONTROL_START)]
                with m.If(chain.bus.ready):
                    m.d.sync += node.eq(0)
                    with m.If(chain.bus.error):
                        m.next = "HOLD"
                    with m.Else():
                        m.next = "UPDATE"
            with m.State("UPDATE"):
                with m.If(~chain.busy):
                    m.next = "OUTPUT"
                with m.Elif(wrap | chain.link_down.any()):
                    # Abandoned (the next period has come, or a link is down): the boards it
                    # reaches are held; the update goes on when the link is back.
                    m.next = "HOLD"
            with m.State("OUTPUT"):
                def fault(error, rdata):
                    with m.If(~error):
                        with m.Switch(node):
                            for i in range(n):
                                with m.Case(i):
                                    m.d.sync += faults[i].eq(rdata[0])
                command("OUTPUT", 0, "OUTPUT_GAP", fault)
            with m.State("OUTPUT_GAP"):
                with m.If(node == n):
                    m.d.sync += [control_steps.eq(control_steps + 1), latency.eq(step_cycles),
                                 stepping.eq(0)]
                    m.next = "IDLE"
                with m.Else():
                    m.next = "OUTPUT"
            with m.State("HOLD"):
                command("HOLD", watchdog, "HOLD_GAP")
            with m.State("HOLD_GAP"):
                with m.If(node == n):
                    m.d.sync += stepping.eq(0)
                    m.next = "IDLE"
                with m.Else():
                    m.next = "HOLD"


class ControlledFrontEnd(wiring.Component):
    """The base board's controlled front end and step sequencer, between the host's register
    bus and the chain's (board 0's :class:`~linkdyn.gateware.actuator.ActuatorCore`, or a whole
    :class:`~linkdyn.gateware.distributed.DistributedChain`): the access rules of the
    controller window, the controller control registers (CONTROL_PERIOD, CONTROL_STEPS,
    FAULTS, CONTROL_OVERRUNS, CONTROL_LATENCY_CYCLES), the CONTROL_PERIOD timer and the control
    step's commands FEEDBACK / OUTPUT / HOLD to every board (module docstring).
    :class:`ControlledDistributedChain` is this in front of the chain in one design; board 0's
    top (``linkdyn.boards.actuator_board``, ``controllers=True``) puts it between its host link
    and its ActuatorCore.

    Parameters
    ----------
    n : int
        Number of boards, 1 .. ``MAX_NODES``.

    Members
    -------
    bus : In(RegisterBusSignature())
        The host's side (the protocol engine's bus), as
        :class:`~linkdyn.gateware.controlled_chain.ControlledChain`'s.
    chain_bus : Out(RegisterBusSignature())
        The chain's register bus (this front end is its initiator).
    chain_busy : In(1)
        The chain's ``busy`` (an update runs).
    chain_overflow : In(n)
        The chain's ``overflow_sticky`` (STATUS.overflow while a step runs).
    chain_link_down : In(max(n - 1, 1))
        The chain's ``link_down`` (a step's update is abandoned while a link is down).
    busy : Out(1)
        An update or a control step runs.
    faults : Out(n)
        FAULTS as the base knows it.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not an integer in 1 .. ``MAX_NODES``.
    """

    def __init__(self, n):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"Board count must be an integer, not {n!r}")
        if not 1 <= n <= MAX_NODES:
            raise ValueError(f"Board count must be 1 .. {MAX_NODES}, not {n!r}")
        self._n = n
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "chain_bus": Out(RegisterBusSignature()),
            "chain_busy": In(1),
            "chain_overflow": In(n),
            "chain_link_down": In(max(n - 1, 1)),
            "busy": Out(1),
            "faults": Out(n),
        })
        #: The chain's side as ControlledDistributedChain's front end sees its chain.
        self.chain = SimpleNamespace(bus=self.chain_bus, busy=self.chain_busy,
                                     overflow_sticky=self.chain_overflow,
                                     link_down=self.chain_link_down)

    @property
    def n(self):
        """int: number of boards."""
        return self._n

    def elaborate(self, platform):
        m = Module()
        # The body of ControlledDistributedChain's front end (one body: that chain's netlist
        # is the same with or without this component), the ports standing for its chain's.
        ControlledDistributedChain._elaborate_base(self, m)
        return m
