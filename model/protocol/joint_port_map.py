"""The joint port's status in the protocol: the ``joint_port`` word of each node's controller
window, its fields, how it decodes, and the reference behaviour of the port's fault latch and
error counter.

On a board with joint controllers every joint's controller reaches its drive through a joint
port (:class:`linkdyn.gateware.joint_port.JointPort`, docs/controller.md, "Joint port"): an SPI
link whose feedback frames carry a CRC-8. The port drops a frame whose CRC fails, counts it, and
latches a *port fault* after :data:`FAULT_ERRORS` bad frames in a row, which holds the drive
off. The word :data:`JOINT_PORT_ADDRESS` (``0xCF``, read-only) of node i's controller window
shows joint i's port (:data:`JOINT_PORT_FIELDS`, bit 0 first):

``fault`` (bit 0)
    the port's fault is latched: the drive's enable pin is low and the command frames say
    ``enable = 0``, ``i_ref = 0``;
``valid`` (bit 1)
    a good feedback frame has arrived since reset or the last clear, and the port has no fault:
    the sensor words are the drive's;
``present`` (bit 2)
    the joint has a joint port in this build. A build without one (a board without joint pins,
    a build without controllers' pins, a simulation that drives the sensor inputs itself) reads
    the whole word 0: ``present``, ``fault``, ``valid`` 0, ``errors`` 0;
``errors`` (bits 8 .. 15)
    feedback frames dropped for a CRC mismatch since the board's reset, saturating at 255 (the
    fault clear does not reset it: a host takes differences, as of the link window's counters).

The port's fault is *beside* the controller's fault word, not one of its codes
(:data:`linkdyn.model.controller.FAULTS` are the controller's own shut-off causes): it is the
link's latch, set by the frames, not by a control step. The same clear clears both: the joint's
``fault_clear`` word and CONTROL.fault_clear clear the port's fault, its run of bad frames and
``valid`` (the next good frame sets ``valid`` again and enables the drive). FAULTS (the control
block) stays the controllers' latches; the host API reports the port's fault with the
controller's (:mod:`linkdyn.host.board_controller`).

:class:`JointPortModel` is the executable definition of the word as the frames change it; the
gateware is tested equal to it (tests/gateware/test_joint_port_status.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import ControlField

__all__ = [
    "JOINT_PORT_ADDRESS", "JOINT_PORT_FIELDS", "ERROR_COUNTER_BITS",
    "ERROR_COUNTER_MAX", "FAULT_ERRORS", "JointPortStatus", "JointPortModel",
    "joint_port_field", "pack_joint_port_status",
]

#: Node address of the ``joint_port`` word in every node's controller window (after the
#: sensor words ``sensor_q``, ``sensor_qd`` at 0xCD, 0xCE).
JOINT_PORT_ADDRESS = 0xCF
#: Width of the port's saturating counter of dropped frames.
ERROR_COUNTER_BITS = 8
#: The largest count of dropped frames (the counter stays there).
ERROR_COUNTER_MAX = (1 << ERROR_COUNTER_BITS) - 1
#: Bad feedback frames in a row that latch the port's fault (the boards' ports).
FAULT_ERRORS = 3


#: The fields of the ``joint_port`` word, in bit order (module docstring).
JOINT_PORT_FIELDS = (
    ControlField("fault", 0, 1, f"the port's fault is latched ({FAULT_ERRORS} bad feedback "
                                  "frames in a row since the last clear): the drive is held "
                                  "off (enable pin low, command frames with enable = 0, "
                                  "i_ref = 0) until the joint's fault clear"),
    ControlField("valid", 1, 1, "a good feedback frame arrived since reset or the last "
                                  "clear and the port has no fault: the sensor words are the "
                                  "drive's"),
    ControlField("present", 2, 1, "the joint has a joint port in this build (0: none; the "
                                    "whole word then reads 0)"),
    ControlField("errors", 8, ERROR_COUNTER_BITS,
                   f"feedback frames dropped for a CRC mismatch since reset (saturating at "
                   f"{ERROR_COUNTER_MAX}; not cleared by the fault clear)"),
)
_FIELDS = {f.name: f for f in JOINT_PORT_FIELDS}
assert all(a.mask & b.mask == 0 for a in JOINT_PORT_FIELDS for b in JOINT_PORT_FIELDS
           if a is not b) and max(f.offset + f.width for f in JOINT_PORT_FIELDS) <= 32


def joint_port_field(name):
    """Return the :class:`~linkdyn.model.protocol.fields.ControlField` called ``name``.

    Raises
    ------
    KeyError
        If the word has no such field.
    """
    try:
        return _FIELDS[name]
    except KeyError:
        raise KeyError(f"the joint_port word has no field {name!r} (it has "
                       f"{', '.join(_FIELDS)})") from None


def pack_joint_port_status(*, fault, valid, present, errors):
    """Return the ``joint_port`` word of these field values.

    Raises
    ------
    ValueError
        If ``errors`` is not 0 .. :data:`ERROR_COUNTER_MAX`.
    """
    if isinstance(errors, bool) or not isinstance(errors, int) or \
            not 0 <= errors <= ERROR_COUNTER_MAX:
        raise ValueError(f"errors must be an integer 0 .. {ERROR_COUNTER_MAX}, not {errors!r}")
    values = {"fault": int(bool(fault)), "valid": int(bool(valid)),
              "present": int(bool(present)), "errors": errors}
    return sum(values[f.name] << f.offset for f in JOINT_PORT_FIELDS)


@dataclass(frozen=True)
class JointPortStatus:
    """One joint's port, decoded from its ``joint_port`` word.

    Attributes
    ----------
    present : bool
        The joint has a joint port in this build (False: none; the other fields are then
        False and 0).
    fault : bool
        The port's fault is latched: the drive is held off until the joint's fault clear.
    valid : bool
        A good feedback frame arrived since reset or the last clear (no fault).
    errors : int
        Feedback frames dropped for a CRC mismatch since the board's reset, 0 ..
        :data:`ERROR_COUNTER_MAX` (saturating).
    """

    present: bool
    fault: bool
    valid: bool
    errors: int

    @classmethod
    def from_word(cls, word):
        """Decode a ``joint_port`` word (bits outside the fields are ignored: they read 0)."""
        word = int(word)
        get = {f.name: (word & f.mask) >> f.offset for f in JOINT_PORT_FIELDS}
        return cls(bool(get["present"]), bool(get["fault"]), bool(get["valid"]),
                   int(get["errors"]))

    @property
    def word(self):
        """int: the ``joint_port`` word."""
        return pack_joint_port_status(fault=self.fault, valid=self.valid,
                                      present=self.present, errors=self.errors)

    @property
    def errors_saturated(self):
        """bool: the counter stopped at :data:`ERROR_COUNTER_MAX` (more frames may have been
        dropped)."""
        return self.errors == ERROR_COUNTER_MAX

    def __str__(self):
        if not self.present:
            return "none"
        state = "fault" if self.fault else ("ok" if self.valid else "no frame yet")
        more = "+" if self.errors_saturated else ""
        return f"{state}, {self.errors}{more} bad frames"


class JointPortModel:
    """The reference behaviour of a joint port's status (the gateware's
    :class:`~linkdyn.gateware.joint_port.JointPort`: ``fault``, ``valid``, ``errors``), frame by
    frame.

    Parameters
    ----------
    fault_errors : int
        Bad frames in a row that latch the fault (default :data:`FAULT_ERRORS`).

    Attributes
    ----------
    fault, valid : bool
    errors : int
        As :class:`JointPortStatus`.
    run : int
        Bad frames in a row since the last good frame or clear (stops at ``fault_errors - 1``
        once the fault latched, as the gateware's counter does).

    Raises
    ------
    TypeError, ValueError
        If ``fault_errors`` is not an integer >= 1.
    """

    def __init__(self, fault_errors=FAULT_ERRORS):
        if isinstance(fault_errors, bool) or not isinstance(fault_errors, int):
            raise TypeError(f"fault_errors must be an integer, not {fault_errors!r}")
        if fault_errors < 1:
            raise ValueError(f"fault_errors must be at least 1, not {fault_errors}")
        self.fault_errors = fault_errors
        self.fault = False
        self.valid = False
        self.errors = 0
        self.run = 0

    def frame(self, good):
        """Take one feedback frame: ``good`` its CRC matched."""
        if good:
            self.run = 0
            if not self.fault:
                self.valid = True
            return
        self.errors = min(self.errors + 1, ERROR_COUNTER_MAX)
        if self.run == self.fault_errors - 1:
            self.fault, self.valid = True, False
        else:
            self.run += 1

    def clear(self):
        """The joint's fault clear: the fault, ``valid`` and the run of bad frames (not
        ``errors``)."""
        self.fault, self.valid, self.run = False, False, 0

    @property
    def status(self):
        """JointPortStatus: the port now (``present``)."""
        return JointPortStatus(True, self.fault, self.valid, self.errors)

    @property
    def word(self):
        """int: the ``joint_port`` word now."""
        return self.status.word
