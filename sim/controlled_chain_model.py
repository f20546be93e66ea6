"""The chain with a joint controller beside every node, in Python behind the register bus:
:class:`ControlledChainModel`, the executable definition of a control step and of the
controller window (:mod:`linkdyn.model.protocol.controller_map`), the target of the
:class:`~linkdyn.model.protocol.ReferenceEngine` that predicts a board built with controllers.

A control step (CONTROL.control_step, the CONTROL command) is, for n joints::

    for every joint i:   q_model, qd_model, qdd_cmd = controller_i.feedback(sensor_i, reference_i)
                         node i's q, qd, qdd := q_model, qd_model, qdd_cmd
    one update of the chain (ChainModel: the golden microprogram, word for word)
    for every joint i:   controller_i sees the neighbour-message strobe (the update's messages)
                         controller_i.output(node i's tau)  -> tau_cmd, i_ref, enable, fault
                         record_i := tau_cmd, i_ref, fault word, the sensor sample

The reference strobe is the write of ``qdd_ref`` (the CONTROL command writes the three words);
controllers, references and records are 0 after reset (``mode`` 0: the drive is disabled).

The local loop (a spec with ``local_loop``; source paper Sect. 3.1, the third update policy):
LOCAL_MULTIPLE = m (reset 1) control steps per chain update. The step after a write of
LOCAL_MULTIPLE (or after reset) runs the chain update, the next m - 1 a *local update* each
instead (:meth:`linkdyn.sim.chain_model.ChainModel.local_update`: every node on its joint's
fresh ``q, qd, qdd`` from its controller, with the messages of the last chain update), and
their controllers see no neighbour-message strobe (no message arrived); then again::

    phase 0:         feedback, chain update, message strobe, output
    phase 1 .. m-1:  feedback, local update,                 output
    phase := phase + 1, 0 once it reaches m
"""

from __future__ import annotations

import numpy as np

from linkdyn.model import protocol as P
from linkdyn.model.controller import REGISTERS, SPECIAL_REGISTERS, JointControllerModel
from linkdyn.model.controller_compiled import FastJointController
from linkdyn.model.controller import WORD as CONTROLLER_WORD
from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.microprogram import rescale_word

from .chain_model import ChainModel

__all__ = ["ControlledChainModel", "CONTROL_TIMING_MARKS"]

_MASK = 0xFFFFFFFF
_PORT_NAMES = {reg.address: name for name, reg in (*REGISTERS.items(),
                                                    *SPECIAL_REGISTERS.items())}
_REFERENCE = [w.name for w in P.REFERENCE_WORDS]
_CONTROL = P.control_register("CONTROL").address
#: Words the model answers for the timing-dependent controller control words (the comparison
#: takes the board's words at these places).
CONTROL_TIMING_MARKS = {0x7EA7_001A: "CONTROL_LATENCY_CYCLES"}
_MARK_OF = {name: mark for mark, name in CONTROL_TIMING_MARKS.items()}


class ControlledChainModel(P.RegisterTarget):
    """A chain with joint controllers behind the register bus, in Python.

    Parameters
    ----------
    spec : ProtocolSpec
        With ``controllers=True``.
    fast : bool
        Run the controllers compiled (:class:`~linkdyn.model.controller_compiled.
        FastJointController`, equal word for word) instead of interpreted.

    Attributes
    ----------
    chain : ChainModel
        The chain (node registers, control words of the chain).
    joints : list of JointControllerModel
        The controllers, node order.
    sensor : numpy.ndarray, shape (n, 2), int64
        The sensor port words ``q, qd`` (Q15.16, rad and rad/s) of every joint: set them
        (:meth:`set_sensor`) as a plant or a board's encoder would drive the pins.
    reference : numpy.ndarray, shape (n, 3), int64
        The reference words ``q_ref, qd_ref, qdd_ref`` of every joint.
    record : numpy.ndarray, shape (n, 5), int64
        The record of the last control step (:data:`~linkdyn.model.protocol.RECORD_WORDS`).
    joint_ports : list of JointPortModel or None
        Every joint's joint port (:class:`~linkdyn.model.protocol.JointPortModel`), None for
        none (the reset state: the window's ``joint_port`` word reads 0);
        :meth:`attach_joint_port` adds one. The joint's fault clear clears its port's fault.
    control_steps : int
        Control steps run.
    local_multiple, local_phase : int
        With the local loop: LOCAL_MULTIPLE (control steps per chain update, reset 1) and the
        phase of the next step (0: a chain update; module docstring).

    Raises
    ------
    ValueError
        If the spec has no controllers.
    """

    def __init__(self, spec, *, fast=True):
        if not spec.controllers:
            raise ValueError("ControlledChainModel needs a ProtocolSpec with controllers=True")
        self.spec = spec
        n = spec.n_nodes
        self.chain = ChainModel(spec)
        joint = FastJointController if fast else JointControllerModel
        self.joints = [joint({}) for _ in range(n)]
        self.sensor = np.zeros((n, 2), dtype=np.int64)
        self.reference = np.zeros((n, 3), dtype=np.int64)
        self.record = np.zeros((n, len(P.RECORD_WORDS)), dtype=np.int64)
        self.joint_ports = [None] * n
        self.control_period = 0
        self.control_steps = 0
        self.local_multiple = 1
        self.local_phase = 0

    def set_sensor(self, node, q, qd):
        """Drive joint ``node``'s sensor port with the words ``q, qd`` (Q15.16)."""
        self.sensor[node] = (signed_word(int(q) & _MASK), signed_word(int(qd) & _MASK))

    def attach_joint_port(self, node, port=None):
        """Give joint ``node`` a joint port (``port``, default a new
        :class:`~linkdyn.model.protocol.JointPortModel`) and return it: feed it the frames
        (``port.frame(good)``) as the drive's link would."""
        self.joint_ports[node] = P.JointPortModel() if port is None else port
        return self.joint_ports[node]

    def _clear(self, node):
        """Joint ``node``'s fault clear: its controller's latch and its joint port's fault."""
        self.joints[node].clear()
        if self.joint_ports[node] is not None:
            self.joint_ports[node].clear()

    @property
    def faults(self):
        """int: the FAULTS word, bit i: joint i has a latched fault."""
        return sum(1 << i for i, joint in enumerate(self.joints) if joint.fault_code)

    # -- the register bus ----------------------------------------------------------------------

    def read(self, node, addr):
        access = self.spec.access(node, addr)
        if not access.exists or access.owner == "engine":
            return False, 0
        if node == P.CONTROL_NODE:
            name = next(reg.name for reg in self.spec.control_registers
                        if reg.address == addr)
            if name == "CONTROL_PERIOD":
                return True, self.control_period
            if name == "CONTROL_STEPS":
                return True, self.control_steps & _MASK
            if name == "FAULTS":
                return True, self.faults
            if name == "CONTROL_OVERRUNS":
                return True, 0
            if name == "LOCAL_MULTIPLE":
                return True, self.local_multiple
            if name in _MARK_OF:
                return True, _MARK_OF[name]
            return self.chain.read(node, addr)
        if access.owner != "controller":
            return self.chain.read(node, addr)
        word = P.controller_word(addr)
        i = node
        if word.port is not None:
            return True, self.joints[i].read(_PORT_NAMES[word.port])
        if word.name in _REFERENCE:
            return True, int(self.reference[i, _REFERENCE.index(word.name)]) & _MASK
        if word.name == "fault_clear":
            return True, 0
        if word.name.startswith("record_"):
            k = [w.name for w in P.RECORD_WORDS].index(word.name)
            return True, int(self.record[i, k]) & _MASK
        if word.name == "joint_port":
            port = self.joint_ports[i]
            return True, 0 if port is None else port.word
        k = ("sensor_q", "sensor_qd").index(word.name)
        return True, int(self.sensor[i, k]) & _MASK

    def write(self, node, addr, word):
        access = self.spec.access(node, addr)
        if not access.exists or not access.writable or access.owner == "engine":
            return False
        word &= _MASK
        if node == P.CONTROL_NODE:
            if addr == P.control_register("CONTROL_PERIOD").address:
                self.control_period = word
                return True
            if self.spec.local_loop and addr == P.control_register("LOCAL_MULTIPLE").address:
                if word == 0:
                    return False
                self.local_multiple, self.local_phase = word, 0
                return True
            if addr == _CONTROL:
                if word & P.CONTROL_CLEAR:
                    self.chain.write(node, addr, P.CONTROL_CLEAR)
                if word & P.CONTROL_FAULT_CLEAR:
                    for joint in range(len(self.joints)):
                        self._clear(joint)
                if word & P.CONTROL_STEP:
                    self.control_step()
                elif word & P.CONTROL_START:
                    self.chain.write(node, addr, P.CONTROL_START)
                return True
            return self.chain.write(node, addr, word)
        if access.owner != "controller":
            return self.chain.write(node, addr, word)
        target = P.controller_word(addr)
        i = node
        if target.port is not None:
            self.joints[i].write(_PORT_NAMES[target.port], word)
        elif target.name in _REFERENCE:
            self.reference[i, _REFERENCE.index(target.name)] = signed_word(word)
            if target.name == "qdd_ref":
                self.joints[i].strobe(reference=True)
        elif target.name == "fault_clear":
            self._clear(i)
        return True

    # -- the control step ----------------------------------------------------------------------

    def control_step(self):
        """Run one control step (module docstring): a chain update's, or with the local loop
        between chain updates a local update's."""
        spec = self.spec
        local = self.local_phase != 0
        memory = self.chain.memory
        base = spec.input_address
        for i, joint in enumerate(self.joints):
            q, qd = (int(v) for v in self.sensor[i])
            q_ref, qd_ref, qdd_ref = (int(v) for v in self.reference[i])
            model = joint.feedback(q, qd, q_ref, qd_ref, qdd_ref)
            # The controllers' Q15.16 words in the nodes' formats (and tau back, below).
            for k, (name, value) in enumerate(zip(("q", "qd", "qdd"), model)):
                memory[i][base + k] = rescale_word(
                    signed_word(int(value) & _MASK), CONTROLLER_WORD.fraction_bits,
                    spec.registers[name].format.fraction_bits) & _MASK
        if local:
            self.chain.local_update()
        else:
            self.chain.write(P.CONTROL_NODE, _CONTROL, P.CONTROL_START)
        for i, joint in enumerate(self.joints):
            if not local:
                joint.strobe(message=True)
            tau = rescale_word(signed_word(memory[i][spec.tau_address]),
                               spec.registers["tau"].format.fraction_bits,
                               CONTROLLER_WORD.fraction_bits)
            i_ref, _ = joint.output(tau)
            self.record[i] = (signed_word(joint.read("tau_cmd")), signed_word(i_ref & _MASK),
                              joint.read("fault"), *self.sensor[i])
        self.control_steps += 1
        if self.spec.local_loop:
            self.local_phase = (self.local_phase + 1) % self.local_multiple
