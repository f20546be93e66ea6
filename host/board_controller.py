"""Host API of the joint controllers (source paper Sect. 3.1, Fig. 7) on a board built with them.

A board with controllers (INFO word CONTROLLERS = 1) has one joint controller beside every
node, reached through the node's controller window
(:mod:`linkdyn.model.protocol.controller_map`). :class:`ControllerCommands` holds the methods
:class:`linkdyn.host.Board` offers for them::

    from linkdyn.host import Board
    from linkdyn.model import load_robot
    from linkdyn.model.controller import ControllerConfig

    robot = load_robot("ur5")
    with Board.open("/dev/ttyUSB0") as board:
        board.load_robot(robot)
        board.configure_controllers([ControllerConfig.for_joint(link.limits, kp=400, kd=40)
                                     for link in robot.links])
        result = board.control(q_ref, qd_ref, qdd_ref)   # (n,) one step, (K, n) a stream
        print(result.tau_cmd, result.fault_names())
        board.clear_faults()

Every value is in SI units: configurations through
:meth:`linkdyn.model.controller.ControllerConfig.encode` (a value that does not fit its
register's format raises before anything is sent), references encoded in the board's word format
like :meth:`Board.rnea`'s states, records decoded in the formats of the window's words
(:data:`~linkdyn.model.protocol.controller_map.CONTROLLER_WORDS`).

A fault is data: a control step whose joint shut off returns normally, with the joint's fault
code and cause mask in the result (:data:`linkdyn.model.controller.FAULTS` names them); only a
failure of the link or the protocol raises (the errors of :class:`linkdyn.host.Board`). A board
without controllers refuses every controller call with :class:`NoControllersError`.

Joint ports: on a board whose joints reach their drives through joint ports (docs/controller.md,
"Joint port"), each joint's port has a fault latch of its own (bad feedback frames in a row from
the drive), beside the controller's fault code
(:mod:`linkdyn.model.protocol.joint_port_map`). :meth:`ControllerCommands.read_controller_state`
reports it per joint (:attr:`JointControllerState.joint_port`, a
:class:`~linkdyn.model.protocol.JointPortStatus`) and counts a joint whose port faulted among
the faulted joints (its cause named ``"joint_port"``); :meth:`ControllerCommands.read_joint_ports`
reads the ports alone; :meth:`ControllerCommands.clear_faults` clears both latches. A joint
without a port reads ``present = False`` (and no fault).

Retries
-------
A CONTROL frame runs a control step, which changes the controllers' state (the guard's
integrator, the shut-off's counters, the watchdogs). A request the board reports damaged
(BAD_CRC, TRUNCATED, BAD_LENGTH) or BUSY did not run and is resent as any other. A request whose
*reply* was lost did run; resending it runs the step once more, with the same reference (as if
the reference had been held one period longer), and, when several frames are in flight, after
the steps sent behind it. The board's UPDATE_COUNT shows every step it ran:
:attr:`ControlResult.steps` reports them, and :attr:`ControlResult.retries` the frames resent.
Pass ``window=1`` to :meth:`ControllerCommands.control` to keep the steps in order under losses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.controller import (COUNT, FAULTS, MODE_BITS, REGISTERS, ControllerConfig,
                                FixedPointRangeError, decode_fault)
from ..model.fixedpoint import signed_word
from ..model.protocol import (
    CONTROL_FAULT_CLEAR, CONTROL_NODE, CRC_BYTES, RECORD_WORDS,
    REQUEST_HEADER_BYTES, Command, JointPortStatus, bytes_to_words,
    control_register, controller_word,
)

__all__ = ["ControllerCommands", "ControlResult", "ControllerState", "JointControllerState",
           "fault_names", "decode_fault", "PARAMETER_NAMES", "JOINT_PORT_FAULT", "NO_JOINT_PORT"]

#: The controller's parameter registers (ControllerConfig fields with a register), port order.
PARAMETER_NAMES = tuple(name for name, reg in REGISTERS.items() if reg.kind == "parameter")
_PORT_FIRST = controller_word(PARAMETER_NAMES[0]).address
assert [controller_word(name).address for name in PARAMETER_NAMES] == \
    list(range(_PORT_FIRST, _PORT_FIRST + len(PARAMETER_NAMES))), \
    "the parameter registers must be one block of the window"
_MODE = controller_word("mode").address
_FAULT = controller_word("fault").address
_FAULT_CLEAR = controller_word("fault_clear").address
_RECORD_FIRST = RECORD_WORDS[0].address
_SENSOR = (controller_word("sensor_q").address, controller_word("sensor_qd").address)
assert _SENSOR == (_RECORD_FIRST + len(RECORD_WORDS), _RECORD_FIRST + len(RECORD_WORDS) + 1)
_JOINT_PORT = controller_word("joint_port").address
assert _JOINT_PORT == _SENSOR[1] + 1, "the joint_port word must follow the sensor words"
#: The name of a joint port's fault among a joint's fault causes (after the controller's).
JOINT_PORT_FAULT = "joint_port"
#: The status a joint without a joint port reads (its ``joint_port`` word 0).
NO_JOINT_PORT = JointPortStatus.from_word(0)
_CONTROL_BLOCK = ("CONTROL_PERIOD", "CONTROL_STEPS", "FAULTS", "CONTROL_OVERRUNS",
                  "CONTROL_LATENCY_CYCLES")
_CONTROL_FIRST = control_register(_CONTROL_BLOCK[0]).address
assert [control_register(name).address for name in _CONTROL_BLOCK] == \
    list(range(_CONTROL_FIRST, _CONTROL_FIRST + len(_CONTROL_BLOCK)))
_RECORD_INDEX = {word.name: k for k, word in enumerate(RECORD_WORDS)}
def fault_names(cause):
    """Return the names of the causes in a cause mask, in priority order.

    Parameters
    ----------
    cause : int
        Cause mask (bit ``code - 1`` of :data:`linkdyn.model.controller.FAULTS`).

    Returns
    -------
    list of str
        E.g. ``["velocity"]``; empty for no fault.
    """
    return [FAULTS[code][0] for code in sorted(FAULTS) if int(cause) >> (code - 1) & 1]


@dataclass(frozen=True)
class ControlResult:
    """The records of control steps run by the board (CONTROL), decoded.

    Shapes: ``(n,)`` for one step, ``(K, n)`` for K steps; per step ``()`` / ``(K,)``.

    Attributes
    ----------
    tau_cmd : numpy.ndarray
        Commanded torque of each joint, N·m (the model's torque plus the guard's, within
        ``tau_max``; record word ``record_tau_cmd``).
    i_ref : numpy.ndarray
        Current reference driven to the motor's current controller, A (0 while the drive is off
        or the joint faulted; ``record_i_ref``).
    fault_code : numpy.ndarray of int64
        Latched fault code (0: none; :data:`linkdyn.model.controller.FAULTS`).
    fault_cause : numpy.ndarray of int64
        Mask of every latched cause (bit ``code - 1``).
    q, qd : numpy.ndarray
        The sensor sample the step took, rad and rad/s (``record_q``, ``record_qd``).
    words : numpy.ndarray of int64, shape (..., n, 5)
        The raw record words (:data:`~linkdyn.model.protocol.RECORD_WORDS` order), signed.
    overflow : numpy.ndarray of bool
        Node i saturated some result in the step's chain update (OVERFLOW).
    update_count, latency_cycles, interval_cycles : numpy.ndarray of int64
        The board's UPDATE_COUNT after the step, and the cycles of its chain update.
    steps : int
        Control steps the board ran for these references (more than K when a frame whose reply
        was lost was resent; module docstring).
    retries : int
        Frames resent.
    """

    tau_cmd: np.ndarray
    i_ref: np.ndarray
    fault_code: np.ndarray
    fault_cause: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    words: np.ndarray
    overflow: np.ndarray
    update_count: np.ndarray
    latency_cycles: np.ndarray
    interval_cycles: np.ndarray
    steps: int
    retries: int

    @property
    def faulted(self):
        """numpy.ndarray of bool: the joint has a latched fault (same shape as ``tau_cmd``)."""
        return self.fault_code != 0

    def fault_names(self, step=-1):
        """Return ``{joint index: [cause names]}`` of the faulted joints of one step.

        Parameters
        ----------
        step : int
            Index of the step in a stream (default the last); ignored for one step.
        """
        cause = self.fault_cause if self.fault_cause.ndim == 1 else self.fault_cause[step]
        return {j: fault_names(c) for j, c in enumerate(cause) if c}


@dataclass(frozen=True)
class JointControllerState:
    """The state of one joint controller, read from its window.

    Attributes
    ----------
    joint : int
        Joint index (0-based, node order).
    sensor_q, sensor_qd : float
        The sensor port now, rad and rad/s.
    q, qd : float
        The sensor sample of the last control step, rad and rad/s.
    tau_cmd : float
        Commanded torque of the last control step, N·m.
    i_ref : float
        Current reference of the last control step, A.
    fault_code : int
        The latched fault code now (0: none).
    fault_cause : int
        The latched cause mask now.
    mode : int
        The ``mode`` register (:data:`linkdyn.model.controller.MODE_BITS`).
    joint_port : JointPortStatus
        The joint port now (the window word ``joint_port``): ``present``, its ``fault`` latch,
        ``valid``, ``errors`` (bad feedback frames since the board's reset); ``present`` False
        (:data:`NO_JOINT_PORT`) on a board without one.
    """

    joint: int
    sensor_q: float
    sensor_qd: float
    q: float
    qd: float
    tau_cmd: float
    i_ref: float
    fault_code: int
    fault_cause: int
    mode: int
    joint_port: JointPortStatus = NO_JOINT_PORT

    @property
    def faults(self):
        """list of str: the names of the latched causes (:data:`linkdyn.model.controller.FAULTS`
        order), then :data:`JOINT_PORT_FAULT` if the joint port's fault is latched."""
        return fault_names(self.fault_cause) + ([JOINT_PORT_FAULT] if self.joint_port.fault
                                                else [])

    @property
    def fault(self):
        """str or None: the name of the latched fault code (the first cause), else
        :data:`JOINT_PORT_FAULT` if only the joint port's fault is latched, else None."""
        if self.fault_code in FAULTS:
            return FAULTS[self.fault_code][0]
        return JOINT_PORT_FAULT if self.joint_port.fault else None

    @property
    def faulted(self):
        """bool: a fault is latched, the controller's or the joint port's (the joint drives no
        current until :meth:`ControllerCommands.clear_faults`)."""
        return bool(self.fault_code) or self.joint_port.fault

    def mode_bits(self):
        """Return the set mode bits by name."""
        return [name for name, (bit, _) in MODE_BITS.items() if self.mode >> bit & 1]


@dataclass(frozen=True)
class ControllerState:
    """Every joint controller's state and the control block's controller registers.

    Attributes
    ----------
    joints : tuple of JointControllerState
        Node order.
    faults : int
        FAULTS: bit i, joint i's controller has a latched fault (the joint ports' faults are in
        :attr:`joint_ports`).
    control_period : int
        CONTROL_PERIOD, cycles (0: steps only on request).
    control_steps : int
        CONTROL_STEPS: control steps finished since reset.
    control_overruns : int
        CONTROL_OVERRUNS: periodic steps skipped because one was running.
    control_latency_cycles : int
        CONTROL_LATENCY_CYCLES: cycles of the last control step.
    local_multiple : int
        LOCAL_MULTIPLE: control steps per chain update (1 on a board without the local loop).
    """

    joints: tuple
    faults: int
    control_period: int
    control_steps: int
    control_overruns: int
    control_latency_cycles: int
    local_multiple: int = 1

    @property
    def tau_cmd(self):
        """numpy.ndarray, shape (n,): the last control step's commanded torques, N·m."""
        return np.array([j.tau_cmd for j in self.joints])

    @property
    def faulted(self):
        """list of int: indices of the joints with a latched fault, the controller's or the
        joint port's."""
        return [j.joint for j in self.joints if j.faulted]

    @property
    def joint_ports(self):
        """tuple of JointPortStatus: every joint's port, node order."""
        return tuple(j.joint_port for j in self.joints)


class ControllerCommands:
    """The joint-controller methods of :class:`linkdyn.host.Board` (a mixin; see the module
    docstring). Joints are numbered from 0 in node order, as the arrays are; messages count
    them from 1, as the tables do."""

    # -- capability ----------------------------------------------------------------------------

    @property
    def has_controllers(self):
        """bool: the board has joint controllers (INFO CONTROLLERS; asks INFO once)."""
        return self.info().controllers

    def require_controllers(self):
        """Return the board's build information; raise if the board has no controllers.

        Raises
        ------
        NoControllersError
            If the board was built without joint controllers (INFO CONTROLLERS = 0).
        """
        from .board import NoControllersError
        info = self.info()
        if not info.controllers:
            raise NoControllersError(
                f"the board on {self.name} has no joint controllers (INFO CONTROLLERS = 0): it "
                "is an inverse-dynamics coprocessor; build its bitstream with the controllers "
                "(BoardCore(controllers=True)) to control joints")
        return info

    def _joint(self, joint, n):
        if isinstance(joint, bool) or not isinstance(joint, (int, np.integer)):
            raise TypeError(f"joint must be an integer index 0 .. {n - 1}, not {joint!r}")
        if not 0 <= joint < n:
            raise ValueError(f"joint must be 0 .. {n - 1} on this {n}-joint board, not {joint!r}")
        return int(joint)

    # -- configuration -------------------------------------------------------------------------

    def configure_controllers(self, configs, *, verify=True):
        """Write every joint controller's configuration (parameters and mode) in SI units.

        Every joint's configuration is encoded first
        (:meth:`~linkdyn.model.controller.ControllerConfig.encode`); nothing is written if one
        value does not fit. Then each joint's parameter block and its ``mode`` are written
        (WRITE) and, with ``verify``, read back.

        Parameters
        ----------
        configs : ControllerConfig or sequence of ControllerConfig
            One configuration for every joint, or a sequence of n, in node order.
        verify : bool
            Read every written word back and compare (default).

        Raises
        ------
        NoControllersError
            If the board has no controllers.
        TypeError
            If a configuration is not a ControllerConfig, or a value not a number.
        ValueError
            If the sequence does not have one configuration per joint, or a limit or gain that
            must be non-negative is negative, or a count is not a non-negative integer (the
            message names joint and register).
        FixedPointRangeError
            If a value does not fit its register's format; the message names the joint, the
            register, the value and the range; ``.joint`` (0-based) and ``.register`` are set.
        BoardProtocolError
            If a word read back differs.
        BoardError
            If the link fails (words of earlier joints may then be written).
        """
        info = self.require_controllers()
        n = info.nodes
        if isinstance(configs, ControllerConfig):
            configs = [configs] * n
        try:
            configs = list(configs)
        except TypeError:
            raise TypeError(f"configs must be a ControllerConfig or a sequence of {n}, not "
                            f"{configs!r}") from None
        if len(configs) != n:
            raise ValueError(f"configs must have one ControllerConfig per joint: the board has "
                             f"{n} joints, {len(configs)} configurations came")
        encoded = [_encode_config(config, j) for j, config in enumerate(configs)]
        for j, words in enumerate(encoded):
            self._write_config(j, words)
        if verify:
            for j, words in enumerate(encoded):
                self._verify_config(j, words)
        self.controller_configs = tuple(configs)

    def _write_config(self, joint, words):
        self.write(joint, _PORT_FIRST, [words[name] for name in PARAMETER_NAMES])
        self.write(joint, _MODE, [words["mode"]])

    def _verify_config(self, joint, words):
        from .board import BoardProtocolError
        back = self.read(joint, _PORT_FIRST, len(PARAMETER_NAMES))
        (mode,) = self.read(joint, _MODE)
        for name, got in zip(PARAMETER_NAMES + ("mode",), back + [mode]):
            if got != words[name] & 0xFFFFFFFF:
                raise BoardProtocolError(
                    f"joint {joint + 1} controller {name}: wrote "
                    f"{words[name] & 0xFFFFFFFF:#010x}, read back {got:#010x}")

    def configure_controller(self, joint, config, *, verify=True):
        """Write one joint controller's configuration; see :meth:`configure_controllers`.

        Parameters
        ----------
        joint : int
            Joint index, 0-based.
        config : ControllerConfig
        verify : bool
        """
        info = self.require_controllers()
        joint = self._joint(joint, info.nodes)
        words = _encode_config(config, joint)
        self._write_config(joint, words)
        if verify:
            self._verify_config(joint, words)
        configs = list(getattr(self, "controller_configs", None) or [None] * info.nodes)
        configs[joint] = config
        self.controller_configs = tuple(configs)

    def read_controller_config(self, joint):
        """Read one joint controller's parameters and mode back as a configuration.

        Parameters
        ----------
        joint : int
            Joint index, 0-based.

        Returns
        -------
        ControllerConfig
            The values the registers hold (decoded from their formats: SI units).
        """
        info = self.require_controllers()
        joint = self._joint(joint, info.nodes)
        words = self.read(joint, _PORT_FIRST, len(PARAMETER_NAMES))
        (mode,) = self.read(joint, _MODE)
        values = {}
        for name, word in zip(PARAMETER_NAMES, words):
            reg = REGISTERS[name]
            value = signed_word(word)
            values[name] = int(value) if reg.format is COUNT else float(
                reg.format.decode(value))
        for name, (bit, _) in MODE_BITS.items():
            values[name] = bool(mode >> bit & 1)
        return ControllerConfig(**values)

    def set_control_period(self, cycles=None, *, seconds=None):
        """Set the period of the board's own control steps (CONTROL_PERIOD).

        Parameters
        ----------
        cycles : int, optional
            Period in clock cycles; 0: control steps only on request (CONTROL).
        seconds : float, optional
            Period in seconds instead (rounded to whole cycles of the board's clock).

        Returns
        -------
        int
            The period written, cycles (read back).

        Raises
        ------
        TypeError, ValueError
            If neither or both are given, or the value is negative, too long for 32 bits, or
            shorter than one cycle; or the board reports no clock frequency (with ``seconds``).
        NoControllersError
            If the board has no controllers.
        """
        info = self.require_controllers()
        if (cycles is None) == (seconds is None):
            raise TypeError("set_control_period takes cycles or seconds (one of them), not "
                            f"cycles={cycles!r}, seconds={seconds!r}")
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
                    not np.isfinite(seconds) or seconds < 0:
                raise ValueError(f"the control period must be a non-negative number of "
                                 f"seconds, not {seconds!r}")
            if not info.clock_hz:
                raise ValueError("the board reports no clock frequency (CLOCK_HZ = 0): give "
                                 "the period in cycles")
            cycles = round(seconds * info.clock_hz)
            if seconds > 0 and cycles == 0:
                raise ValueError(f"a control period of {seconds!r} s is shorter than one "
                                 f"cycle of the board's {info.clock_hz:,} Hz clock")
        if isinstance(cycles, bool) or not isinstance(cycles, (int, np.integer)):
            raise TypeError(f"the control period must be an integer number of cycles, not "
                            f"{cycles!r}")
        if not 0 <= cycles < (1 << 32):
            raise ValueError(f"the control period must be 0 .. 2**32-1 cycles, not {cycles!r}")
        address = control_register("CONTROL_PERIOD").address
        self.write(CONTROL_NODE, address, [int(cycles)])
        (back,) = self.read(CONTROL_NODE, address)
        if back != cycles:
            from .board import BoardProtocolError
            raise BoardProtocolError(f"CONTROL_PERIOD: wrote {cycles}, read back {back}")
        return back

    def set_local_multiple(self, multiple):
        """Set the local loop's multiple: control steps per chain update (LOCAL_MULTIPLE).

        The control step after the write runs a chain update, the next ``multiple - 1`` a
        local update each (source paper Sect. 3.1, the third update policy; docs/controller.md,
        *Local loop*). 1: every step runs a chain update (the reset value).

        Returns
        -------
        int
            The multiple written (read back).

        Raises
        ------
        TypeError, ValueError
            If ``multiple`` is not an integer 1 .. 2**32-1.
        NoControllersError
            If the board has no controllers.
        IncompatibleBoardError
            If the board was built without the local loop (INFO CONTROLLERS bit 1).
        """
        info = self.require_controllers()
        if isinstance(multiple, bool) or not isinstance(multiple, (int, np.integer)):
            raise TypeError(f"the local multiple must be an integer, not {multiple!r}")
        if not 1 <= multiple < (1 << 32):
            raise ValueError(f"the local multiple must be 1 .. 2**32-1 control steps per chain "
                             f"update, not {multiple!r}")
        if not info.spec.local_loop:
            from .board import IncompatibleBoardError
            raise IncompatibleBoardError(
                f"the board on {self.name} was built without the local loop (INFO CONTROLLERS "
                "bit 1 = 0): build it with --controllers --local-loop (BoardCore(..., "
                "controllers=True, local_loop=True))")
        address = control_register("LOCAL_MULTIPLE").address
        self.write(CONTROL_NODE, address, [int(multiple)])
        (back,) = self.read(CONTROL_NODE, address)
        if back != multiple:
            from .board import BoardProtocolError
            raise BoardProtocolError(f"LOCAL_MULTIPLE: wrote {multiple}, read back {back}")
        return back

    def set_control_rates(self, chain_hz, local_hz=None):
        """Run the board's own control steps at ``local_hz``, a chain update every
        ``local_hz / chain_hz`` of them and local updates between (CONTROL_PERIOD,
        LOCAL_MULTIPLE).

        Parameters
        ----------
        chain_hz : float
            Rate of the chain updates, Hz.
        local_hz : float, optional
            Rate of the control steps (local and chain updates together), Hz: an integer
            multiple of ``chain_hz``. Default ``chain_hz`` (no local updates).

        Returns
        -------
        (int, int)
            CONTROL_PERIOD (cycles) and LOCAL_MULTIPLE, as read back.

        Raises
        ------
        ValueError
            If a rate is not positive and finite, ``local_hz`` is not an integer multiple of
            ``chain_hz`` (within one part in 10**6), or the period is shorter than a cycle.
        NoControllersError, IncompatibleBoardError
            As :meth:`set_control_period`, :meth:`set_local_multiple` (the latter only for a
            multiple above 1).
        """
        local_hz = chain_hz if local_hz is None else local_hz
        for name, value in (("chain rate", chain_hz), ("local rate", local_hz)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not np.isfinite(value) or value <= 0:
                raise ValueError(f"the {name} must be a positive number of Hz, not {value!r}")
        ratio = local_hz / chain_hz
        multiple = round(ratio)
        if multiple < 1 or abs(ratio - multiple) > 1e-6 * ratio:
            raise ValueError(f"the local rate ({local_hz:g} Hz) must be an integer multiple (1, "
                             f"2, ...) of the chain rate ({chain_hz:g} Hz), not {ratio:.6g} "
                             f"times it")
        if multiple > 1 or self.info().spec.local_loop:
            multiple = self.set_local_multiple(multiple)
        period = self.set_control_period(seconds=1.0 / local_hz)
        return period, multiple

    # -- control steps ---------------------------------------------------------------------------

    def control_window(self):
        """Return how many CONTROL frames are kept in flight when streaming (as
        :meth:`Board.window` for STEP frames)."""
        spec = self.spec
        longest = REQUEST_HEADER_BYTES + spec.max_payload_bytes + CRC_BYTES
        frame = REQUEST_HEADER_BYTES + 4 * spec.control_words + CRC_BYTES
        return max(1, min(64, (2 * longest) // frame))

    def control(self, q_ref, qd_ref, qdd_ref, *, window=None, progress=None):
        """Run control steps on the board with these references (CONTROL), one per reference.

        Each CONTROL frame writes every joint's reference, runs one control step (every
        joint's feedback, one update of the chain, every joint's output) and returns the
        step's records. For K references the frames are streamed, up to ``window`` in flight.

        Parameters
        ----------
        q_ref, qd_ref, qdd_ref : array_like, shape (n,) or (K, n)
            Reference positions (rad), velocities (rad/s), accelerations (rad/s^2), broadcast
            against each other; encoded in the board's word format (the message of a value
            that does not fit names step, joint and quantity; nothing is sent then).
        window : int, optional
            Frames in flight (default :meth:`control_window`; 1 keeps the steps in order even
            when replies are lost, module docstring).
        progress : bool, optional
            Show a progress bar (default: for long streams, on a terminal).

        Returns
        -------
        ControlResult
            The records, with the joints' faults as data.

        Raises
        ------
        NoControllersError
            If the board has no controllers.
        ValueError, FixedPointRangeError
            If an array has the wrong shape or a value does not fit.
        BoardError
            If the link fails (as :meth:`Board.rnea`).
        """
        from .board import PROGRESS_THRESHOLD, _Request
        info = self.require_controllers()
        spec = info.spec
        n = info.nodes
        if window is None:
            window = self.control_window()
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive integer, not {window!r}")
        single, frames = self._step_frames(q_ref, qd_ref, qdd_ref, None, info,
                                           names=("q_ref", "qd_ref", "qdd_ref"))
        count = len(frames)
        retries_before = self.statistics.retries
        if self._last_update is None:
            self._last_update = self._update_count()
        baseline = self._last_update
        requests = [_Request(Command.CONTROL, frame, spec.control_reply_words)
                    for frame in frames]
        bar = None
        show = (count >= PROGRESS_THRESHOLD) if progress is None else bool(progress)
        if show:
            from .progress import progress_bar
            bar = progress_bar(count, desc="board", unit="step", terminal_only=progress is None)
        try:
            replies = self._exchange(requests, window=window, progress=bar,
                                     check=self._check_control)
        finally:
            if bar is not None:
                bar.close()
        record = len(RECORD_WORDS)
        words = np.array([bytes_to_words(reply, signed=True) for reply in replies],
                         dtype=np.int64)
        records = words[:, :n * record].reshape(count, n, record)
        tail = words[:, n * record:] & 0xFFFFFFFF
        flags = tail[:, 0:1]
        overflow = ((flags >> np.arange(n)) & 1).astype(bool)
        latency, interval, update = tail[:, 2], tail[:, 3], tail[:, 4]
        steps = int((self._last_update - baseline) % (1 << 32))
        code, cause = decode_fault(records[:, :, _RECORD_INDEX["record_fault"]])
        decoded = {}
        for word in RECORD_WORDS:
            if word.format is not None:
                decoded[word.name] = word.format.decode(records[:, :, _RECORD_INDEX[word.name]])
        values = [decoded["record_tau_cmd"], decoded["record_i_ref"], code, cause,
                  decoded["record_q"], decoded["record_qd"], records, overflow, update,
                  latency, interval]
        if single:
            values = [v[0] for v in values]
        return ControlResult(*values, steps, self.statistics.retries - retries_before)

    def _check_control(self, payload):
        # The words after the records are STEP's control words (OVERFLOW .. UPDATE_COUNT).
        n = self.nodes
        tail = payload[4 * n * len(RECORD_WORDS):]
        self._check_step(bytes(4 * n) + tail)

    def hold(self, steps=1, *, q=None, window=None):
        """Hold the joints at a position with zero velocity and acceleration references.

        Parameters
        ----------
        steps : int
            Control steps to run.
        q : array_like, shape (n,), optional
            Position reference, rad (default: the joints' sensor positions now).
        window : int, optional
            As :meth:`control`.

        Returns
        -------
        ControlResult
            Shapes ``(steps, n)``.
        """
        info = self.require_controllers()
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive integer, not {steps!r}")
        if q is None:
            q = np.array([j.sensor_q for j in self.read_controller_state().joints])
        q = np.broadcast_to(np.asarray(q, dtype=float), (steps, info.nodes))
        zero = np.zeros_like(q)
        return self.control(q, zero, zero, window=window)

    # -- state and faults ----------------------------------------------------------------------

    def read_controller_state(self):
        """Read every joint controller's state and the control block's controller registers.

        Returns
        -------
        ControllerState
            Measured state (the sensor port now and the last step's sample), commanded torque
            and current of the last step, the latched faults with their causes, the mode, the
            joint port's status; the period, step, fault and overrun counters.

        Raises
        ------
        NoControllersError
            If the board has no controllers.
        BoardError
            If the link fails.
        """
        info = self.require_controllers()
        joints = []
        for j in range(info.nodes):
            mode, fault = self.read(j, _MODE, 2)
            # The record words, the sensor words and joint_port: one burst.
            *record, port = self.read(j, _RECORD_FIRST, _JOINT_PORT - _RECORD_FIRST + 1)
            record = [signed_word(w) for w in record]
            sensor_q, sensor_qd = (controller_word(a).format.decode(record[k])
                                   for k, a in zip((5, 6), _SENSOR))
            values = {word.name: (word.format.decode(record[k]) if word.format is not None
                                  else record[k]) for k, word in enumerate(RECORD_WORDS)}
            code, cause = decode_fault(fault)
            joints.append(JointControllerState(
                j, float(sensor_q), float(sensor_qd), float(values["record_q"]),
                float(values["record_qd"]), float(values["record_tau_cmd"]),
                float(values["record_i_ref"]), code, cause, mode,
                JointPortStatus.from_word(port)))
        block = dict(zip(_CONTROL_BLOCK, self.read(CONTROL_NODE, _CONTROL_FIRST,
                                                   len(_CONTROL_BLOCK))))
        multiple = 1
        if info.spec.local_loop:
            (multiple,) = self.read(CONTROL_NODE, control_register("LOCAL_MULTIPLE").address)
        return ControllerState(tuple(joints), block["FAULTS"], block["CONTROL_PERIOD"],
                               block["CONTROL_STEPS"], block["CONTROL_OVERRUNS"],
                               block["CONTROL_LATENCY_CYCLES"], multiple)

    def read_joint_ports(self):
        """Read every joint's joint-port status (the window words ``joint_port``).

        Returns
        -------
        tuple of JointPortStatus
            Node order: ``present`` (False on a board without joint ports: then no fault),
            the port's ``fault`` latch (the drive is held off), ``valid`` (a good frame since
            reset or the last clear), ``errors`` (bad feedback frames since the board's reset,
            saturating at 255).

        Raises
        ------
        NoControllersError
            If the board has no controllers.
        BoardError
            If the link fails.
        """
        info = self.require_controllers()
        return tuple(JointPortStatus.from_word(self.read(j, _JOINT_PORT)[0])
                     for j in range(info.nodes))

    def clear_faults(self, joint=None):
        """Clear the fault latch and shut-off counters of one joint or of every joint, and the
        joint port's fault (the port enables the drive again after its next good frame).

        A cause that persists latches again at the next control step (a joint port's: after
        three more bad frames).

        Parameters
        ----------
        joint : int, optional
            Joint index, 0-based (its window's ``fault_clear``); default every joint
            (CONTROL.fault_clear).

        Returns
        -------
        int
            FAULTS after the clear (bit i: joint i's controller still has a latched fault;
            :meth:`read_joint_ports` shows the ports).
        """
        info = self.require_controllers()
        if joint is None:
            self.write(CONTROL_NODE, control_register("CONTROL").address, [CONTROL_FAULT_CLEAR])
        else:
            self.write(self._joint(joint, info.nodes), _FAULT_CLEAR, [1])
        (faults,) = self.read(CONTROL_NODE, control_register("FAULTS").address)
        return faults


def _encode_config(config, joint):
    """Encode a joint's configuration; name the joint (1-based) and register in errors."""
    if not isinstance(config, ControllerConfig):
        raise TypeError(f"joint {joint + 1}: the configuration must be a ControllerConfig, not "
                        f"{type(config).__name__}")
    try:
        return config.encode()
    except (FixedPointRangeError, ValueError, TypeError) as error:
        register = next((name for name in PARAMETER_NAMES
                         if f"controller {name} (" in str(error)), None)
        new = type(error)(f"joint {joint + 1}: {error}")
        new.joint, new.register = joint, register
        raise new from None
