"""The closed control loop in gateware mode: the controller and chain gateware in Verilator.

:class:`GatewareController` has the interface of
:class:`~linkdyn.host.experiments.loop.GoldenController` (``step``, ``fault_codes``,
``robot``, ``configs``), backed by the board core built with joint controllers
(:class:`linkdyn.sim.SimulatedBoard` with ``controllers=True``, Verilator through cocotb behind
a pseudo-terminal) and the host API (:class:`linkdyn.host.Board`,
:mod:`linkdyn.host.board_controller`). One control cycle:

1. the measured ``q, qd`` encoded as Q15.16 words (as the golden controller encodes them) and
   driven on every joint's sensor port (:meth:`~linkdyn.sim.SimulatedBoard.set_sensor`);
2. when the experiment tells the model an external wrench, the last node's (every node's that
   changed) wrench input registers ``f_ext_x .. mu_ext_z`` written (WRITE), encoded as
   :meth:`linkdyn.model.golden.GoldenChain.step` encodes them; the CONTROL command's chain
   update keeps what the host wrote there (docs/controller.md, "Integration (as built)");
3. one CONTROL with the reference (:meth:`~linkdyn.host.Board.control`): every joint's
   ``feedback``, one chain update, every joint's ``output``; the record's ``tau_cmd`` (0 where
   the drive is off, ``i_ref`` = 0 with a fault, as the golden controller does) is the torque
   held on the plant.

The board is started once per :class:`GatewareSession` and reused: every new controller loads
its model (LOAD_ROBOT, read back), writes its configurations and brings the controllers' state
to that of fresh ones (:meth:`GatewareSession.reset_controllers`), so that a run on a reused
board gives the same words as a fresh golden controller.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from linkdyn.model.controller import decode_fault
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.microprogram import microprogram
from linkdyn.model.protocol import RECORD_WORDS, controller_word

from .loop import GainSet, controller_configs

__all__ = ["GatewareSession", "GatewareController", "GatewareStateError"]

_TAU_CMD = [word.name for word in RECORD_WORDS].index("record_tau_cmd")
_FAULT = [word.name for word in RECORD_WORDS].index("record_fault")
_STATE = [controller_word(name).address for name in ("integrator", "sat_count", "ref_age",
                                                     "msg_age")]
assert _STATE == list(range(_STATE[0], _STATE[0] + 4)), "the state registers must be one block"


class GatewareStateError(RuntimeError):
    """The joint controllers on the simulated board could not be brought to a fresh state."""


class GatewareSession:
    """A simulated board with joint controllers and a host :class:`~linkdyn.host.Board` on it.

    A context manager; :meth:`controller` returns a :class:`GatewareController` on the board,
    as many as wanted, one after the other (each takes the board over from the last).

    Parameters
    ----------
    nodes : int
        Node count of the board (the robot's joints), 1 .. 32.
    **simulated
        Further arguments of :class:`linkdyn.sim.SimulatedBoard` (``simulator``,
        ``build_root``, ...); ``controllers=True`` always.

    Attributes
    ----------
    sim : linkdyn.sim.SimulatedBoard
    board : linkdyn.host.Board
        Once started.

    Raises
    ------
    SimulatedBoardError, SimulatorMissing
        If the board cannot be built or started (on :meth:`start`).
    """

    def __init__(self, nodes, **simulated):
        from linkdyn.sim import SimulatedBoard
        if "controllers" in simulated:
            raise TypeError("GatewareSession always builds the board with controllers; do not "
                            "pass controllers")
        self.sim = SimulatedBoard(nodes, controllers=True, **simulated)
        self.nodes = nodes
        self.board = None
        self._robot = None
        self._wrench = None
        self._sensor = [(0, 0)] * nodes           # the board starts with 0 on every port

    def start(self):
        """Build (or reuse the cached build), start the board and open it; return ``self``."""
        from linkdyn.host.simulated import open_simulated
        if self.board is None:
            self.sim.start()
            try:
                self.board = open_simulated(self.sim)
                self.board.require_controllers()
            except BaseException:
                self.sim.stop()
                raise
        return self

    def stop(self):
        """Close the host's port and stop the simulated board (safe to call twice)."""
        if self.board is not None:
            self.board.close()
            self.board = None
        self.sim.stop()
        self._robot = self._wrench = None      # the sensor words hold over a restart

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def controller(self, robot, gains, *, guard=False, model=None, **overrides):
        """Return a :class:`GatewareController` on this board (see there)."""
        return GatewareController(robot, gains, session=self, guard=guard, model=model,
                                  **overrides)

    __call__ = controller

    # -- used by GatewareController -------------------------------------------------------------

    def load(self, model):
        """Load ``model`` into the nodes unless it is the one loaded (LOAD_ROBOT, read back)."""
        self.start()
        if self._robot is not model:
            self.board.load_robot(model)
            self._robot = model

    def reset_controllers(self, configs):
        """Configure the controllers and bring their state to that of fresh controllers.

        A fresh controller (the golden controller of a new run) holds zero in its state
        registers (``integrator``, ``sat_count``, ``ref_age``, ``msg_age``) and no fault.
        The state registers are read-only on the bus, so: one control step with the drive off
        (which holds the integrator at zero), a fault clear (the counters and the latch), then
        the run's configuration and the external wrench registers zeroed; the state is read
        back.

        Raises
        ------
        GatewareStateError
            If a state word or the fault word is not zero afterwards.
        """
        board = self.board
        n = self.nodes
        off = [dataclasses.replace(config, drive_enable=False) for config in configs]
        board.configure_controllers(off, verify=False)
        board.hold(1, q=np.zeros(n), window=1)
        board.clear_faults()
        board.configure_controllers(configs)
        self.write_wrench(np.zeros((n, 6), dtype=np.int64), force=True)
        for joint in range(n):
            state = board.read(joint, _STATE[0], len(_STATE))
            (fault,) = board.read(joint, controller_word("fault").address)
            if any(state) or fault:
                raise GatewareStateError(
                    f"joint {joint + 1}: the controller's state is not fresh after the reset "
                    f"(integrator, sat_count, ref_age, msg_age = {state}, fault {fault:#x})")

    def write_wrench(self, words, *, force=False):
        """Write the nodes' external wrench words (shape (n, 6)) that differ from the board's."""
        from linkdyn.model.protocol import ProtocolSpec
        address = ProtocolSpec(self.nodes).input_address + 3
        for i in range(self.nodes):
            row = [int(w) for w in words[i]]
            if force or self._wrench is None or row != self._wrench[i]:
                self.board.write(i, address, row)
        self._wrench = [[int(w) for w in row] for row in words]

    def set_sensors(self, q_words, qd_words):
        """Drive every joint's sensor port with these words (Q15.16)."""
        for i in range(self.nodes):
            words = (int(q_words[i]), int(qd_words[i]))
            if words != self._sensor[i]:         # each set writes the bridge's sensor file
                self.sim.set_sensor(i, *words)
                self._sensor[i] = words


class GatewareController:
    """The joint controllers and node chain in the gateware, stepped per control cycle.

    The same interface and configuration as
    :class:`~linkdyn.host.experiments.loop.GoldenController`: one
    :class:`~linkdyn.model.controller.ControllerConfig` per joint from the robot's limits and
    the gains, ``guard`` as there.

    Parameters
    ----------
    robot : linkdyn.model.Robot
        The controller's model (use the plant's own ``plant.robot``), loaded into the nodes.
    gains : GainSet
        Feedback gains of every joint.
    session : GatewareSession, optional
        The board to run on (started if needed); default a new one of ``robot.n`` nodes, which
        :meth:`close` stops.
    guard : bool
        As for the golden controller.
    model : linkdyn.model.Robot, optional
        The model in the nodes instead of ``robot`` (the identified model of the ``identify``
        experiment); the controllers' limits come from ``robot``.
    **overrides
        Further ControllerConfig fields for every joint.

    Attributes
    ----------
    last : linkdyn.host.board_controller.ControlResult or None
        The record of the last step.
    tau_cmd_words : numpy.ndarray of int64, shape (n,)
        The last step's ``tau_cmd`` words.
    seconds_per_step : float
        Mean wall-clock time of :meth:`step` so far, s.

    Raises
    ------
    ValueError
        If the session's board has another node count than the robot has joints, or a joint
        lacks a limit.
    FixedPointRangeError
        If a gain, limit or robot constant does not fit its register.
    """

    def __init__(self, robot, gains, *, session=None, guard=False, model=None, **overrides):
        if not isinstance(gains, GainSet):
            raise TypeError(f"gains must be a GainSet, not {type(gains).__name__}")
        self.robot = robot
        self.gains = gains
        self.configs = controller_configs(robot, gains, guard=guard, **overrides)
        self._own = session is None
        if session is None:
            session = GatewareSession(robot.n)
        elif not isinstance(session, GatewareSession):
            raise TypeError(f"session must be a GatewareSession, not {type(session).__name__}")
        if session.nodes != robot.n:
            raise ValueError(f"the session's board has {session.nodes} nodes, the robot "
                             f"{robot.n} joints")
        self.session = session
        session.load(robot if model is None else model)
        session.reset_controllers(self.configs)
        self.last = None
        self.tau_cmd_words = np.zeros(robot.n, dtype=np.int64)
        self._steps = 0
        self._seconds = 0.0

    def step(self, q, qd, q_ref, qd_ref, qdd_ref, f_ext=None):
        """Run one control cycle on the board; return the commanded torques, N·m, shape (n,).

        Parameters and errors as :meth:`GoldenController.step
        <linkdyn.host.experiments.loop.GoldenController.step>`.

        Returns
        -------
        numpy.ndarray, shape (n,)
            The record's ``tau_cmd`` of every joint, decoded; 0 where the drive is off
            (``i_ref`` = 0: fault or disabled).
        """
        start = time.perf_counter()
        session = self.session
        q_words = Q15_16.encode(np.asarray(q, dtype=float), "q")
        qd_words = Q15_16.encode(np.asarray(qd, dtype=float), "qd")
        n = self.robot.n
        # The wrench goes to the nodes' registers: in its own format (the sensors are the
        # controllers' Q15.16 words).
        wrench = np.zeros((n, 6), dtype=np.int64) if f_ext is None else \
            microprogram().registers.encode("f_ext_x",
                                            np.asarray(f_ext, dtype=float).reshape(n, 6),
                                            "f_ext")
        session.write_wrench(wrench)
        session.set_sensors(q_words, qd_words)
        result = session.board.control(q_ref, qd_ref, qdd_ref, window=1, progress=False)
        self.last = result
        words = result.words
        self.tau_cmd_words = words[:, _TAU_CMD].copy()
        # The drive is on where no fault is latched and the configuration enables it (the
        # golden controller's ``enable``; i_ref alone cannot tell, it is 0 for tau_cmd = 0).
        on = (result.fault_code == 0) & self._drive_enabled
        tau = np.where(on, Q15_16.decode(self.tau_cmd_words), 0.0)
        self._steps += 1
        self._seconds += time.perf_counter() - start
        return tau

    @property
    def _drive_enabled(self):
        return np.array([config.drive_enable for config in self.configs])

    @property
    def fault_codes(self):
        """list of int: every joint's latched fault code after the last step (0: none)."""
        if self.last is None:
            return [0] * self.robot.n
        return [int(code) for code in decode_fault(
            self.last.words[:, _FAULT])[0]]

    @property
    def seconds_per_step(self):
        """float: mean wall-clock time of a :meth:`step`, s (nan before the first)."""
        return self._seconds / self._steps if self._steps else float("nan")

    def close(self):
        """Stop the board if this controller started it."""
        if self._own:
            self.session.stop()
