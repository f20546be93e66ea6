"""The joint controllers in the protocol: each node's controller window, the control block's
controller registers, and the CONTROL command's payloads.

A board built with joint controllers (:class:`~linkdyn.model.protocol.ProtocolSpec` with
``controllers=True``; INFO word CONTROLLERS = 1) puts one
:mod:`joint controller <linkdyn.model.controller>` (source paper Sect. 3.1, Fig. 7) beside every
node. Its words appear in the node's address space from :data:`CONTROLLER_BASE` (0x80), above the
node's own register map (:attr:`ProtocolSpec.node_map_size` words from 0):

``0x80 + a``
    the controller's register port (:data:`linkdyn.model.controller.REGISTERS`,
    :data:`~linkdyn.model.controller.SPECIAL_REGISTERS`): parameters and ``mode`` read/write,
    state, scratch, output words and ``fault`` read-only;
``0xC2 .. 0xC4`` (:data:`REFERENCE_WORDS`)
    the reference ``q_ref, qd_ref, qdd_ref`` the next control step takes (read/write); the
    write of ``qdd_ref`` is the reference strobe the reference watchdog counts;
``0xC5`` ``fault_clear``
    write-only: any word clears the joint's fault latch and shut-off counters (the controller's
    ``clear`` segment);
``0xC8 .. 0xCC`` (:data:`RECORD_WORDS`)
    the record of the last control step, read-only: ``tau_cmd`` (the commanded torque),
    ``i_ref`` (the current reference the actuator port drives: 0 while off or faulted),
    ``fault`` (the fault word), ``q``, ``qd`` (the sensor sample the step took);
``0xCD, 0xCE`` ``sensor_q``, ``sensor_qd``
    the sensor port now, read-only;
``0xCF`` ``joint_port``
    the joint port's status, read-only: its fault latch, ``valid``, ``present`` and its count of
    dropped frames (:mod:`~linkdyn.model.protocol.joint_port_map`; 0 on a build without a joint
    port).

A *control step* (CONTROL.control_step, the CONTROL command, or the CONTROL_PERIOD timer) runs,
on every joint at once, the controller's ``feedback`` segment on its sensor sample and
reference, then one update of the chain on the model inputs ``q_model, qd_model, qdd_cmd``
(written into every node's ``q, qd, qdd``), then the ``output`` segment on the node's ``tau``:
:class:`linkdyn.sim.controlled_chain_model.ControlledChainModel` is its executable definition.
The nodes' other inputs (the external wrench) keep what the host wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..controller import REGISTERS, SPECIAL_REGISTERS, WORD
from .joint_port_map import JOINT_PORT_ADDRESS

__all__ = [
    "CONTROLLER_BASE", "ControllerWord", "CONTROLLER_WORDS", "REFERENCE_WORDS", "RECORD_WORDS",
    "controller_word",
]

#: First node address of the controller window (the node's own map is below it).
CONTROLLER_BASE = 0x80


@dataclass(frozen=True)
class ControllerWord:
    """One word of a node's controller window.

    Attributes
    ----------
    name : str
        Word name (a controller register's name for the register-port words).
    address : int
        Node address (8 bits).
    access : str
        ``"rw"``, ``"r"`` or ``"w"`` (writable words read back what was accepted; ``"w"``
        reads 0).
    format : QFormat or None
        Number format; ``None`` for bit words.
    unit : str
        SI unit.
    doc : str
        Meaning.
    port : int or None
        Address on the controller's register port, for the register-port words.
    """

    name: str
    address: int
    access: str
    format: object
    unit: str
    doc: str
    port: int | None = None

    @property
    def writable(self):
        """bool: the host may write the word."""
        return "w" in self.access


def _words():
    words = []
    for reg in (*REGISTERS.values(), *SPECIAL_REGISTERS.values()):
        writable = reg.kind == "parameter" or reg.name == "mode"
        words.append(ControllerWord(reg.name, CONTROLLER_BASE + reg.address,
                                    "rw" if writable else "r", reg.format, reg.unit, reg.doc,
                                    reg.address))
    extra = (
        (0xC2, "q_ref", "rw", WORD, "rad", "reference position of the next control step"),
        (0xC3, "qd_ref", "rw", WORD, "rad/s", "reference velocity of the next control step"),
        (0xC4, "qdd_ref", "rw", WORD, "rad/s^2", "reference acceleration of the next control "
                                                   "step; its write is the reference strobe"),
        (0xC5, "fault_clear", "w", None, "", "any write clears the joint's fault latch and "
                                              "shut-off counters"),
        (0xC8, "record_tau_cmd", "r", WORD, "N m", "last control step: commanded torque"),
        (0xC9, "record_i_ref", "r", WORD, "A", "last control step: current reference driven "
                                                "(0 while off or faulted)"),
        (0xCA, "record_fault", "r", None, "", "last control step: the fault word"),
        (0xCB, "record_q", "r", WORD, "rad", "last control step: sensor position sample"),
        (0xCC, "record_qd", "r", WORD, "rad/s", "last control step: sensor velocity sample"),
        (0xCD, "sensor_q", "r", WORD, "rad", "sensor port position now"),
        (0xCE, "sensor_qd", "r", WORD, "rad/s", "sensor port velocity now"),
        (JOINT_PORT_ADDRESS, "joint_port", "r", None, "",
         "the joint port now: fault (bit 0), valid (bit 1), present (bit 2), dropped frames "
         "(bits 8 .. 15); 0 without a joint port"),
    )
    for address, name, access, fmt, unit, doc in extra:
        words.append(ControllerWord(name, address, access, fmt, unit, doc))
    words.sort(key=lambda w: w.address)
    addresses = [w.address for w in words]
    assert len(set(addresses)) == len(addresses) and max(addresses) < 0x100
    return tuple(words)


#: Every word of a node's controller window, in address order.
CONTROLLER_WORDS = _words()
_BY_NAME = {w.name: w for w in CONTROLLER_WORDS}
_BY_ADDRESS = {w.address: w for w in CONTROLLER_WORDS}


def controller_word(key):
    """Return the :class:`ControllerWord` called ``key`` (str) or at node address ``key`` (int).

    Raises
    ------
    KeyError
        If there is no such word.
    """
    table = _BY_ADDRESS if isinstance(key, int) else _BY_NAME
    try:
        return table[key]
    except KeyError:
        raise KeyError(f"no controller word {key!r}") from None


#: The reference words, in CONTROL request order.
REFERENCE_WORDS = tuple(_BY_NAME[name] for name in ("q_ref", "qd_ref", "qdd_ref"))
#: The record words, in CONTROL reply order.
RECORD_WORDS = tuple(_BY_NAME[name] for name in (
    "record_tau_cmd", "record_i_ref", "record_fault", "record_q", "record_qd"))
assert [w.address for w in REFERENCE_WORDS] == list(range(REFERENCE_WORDS[0].address,
                                                           REFERENCE_WORDS[0].address + 3))
assert [w.address for w in RECORD_WORDS] == list(range(RECORD_WORDS[0].address,
                                                        RECORD_WORDS[0].address + 5))

