"""Helpers of the joint-controller host tests: a software board with controllers (the protocol's
ReferenceEngine on ControlledChainModel) behind a fake serial port or a pseudo-terminal, with a
sensor model per control step so that the measured state means something.

The software board is the executable definition of a board built with controllers
(:mod:`linkdyn.sim.controlled_chain_model`); a gateware board must answer the same words.
"""

from __future__ import annotations

import os
import select
import threading
import time
import tty

import numpy as np

from linkdyn.model import protocol as P
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from .host import ReferenceSerial

__all__ = ["SensedChainModel", "ControlledReferenceSerial", "ReferencePty", "sensor_at_reference",
           "FirstOrderJoints"]


class SensedChainModel(ControlledChainModel):
    """:class:`ControlledChainModel` whose sensor ports are driven by ``sensor(model)`` at the
    start of every control step (after the step's references were written), as a plant would
    drive the pins."""

    def __init__(self, spec, sensor=None):
        super().__init__(spec)
        self.sensor_model = sensor

    def control_step(self):
        if self.sensor_model is not None:
            self.sensor_model(self)
        super().control_step()


def sensor_at_reference(model):
    """Sensor = reference: every joint measures its reference position and velocity."""
    for i in range(model.spec.n_nodes):
        model.set_sensor(i, model.reference[i, 0], model.reference[i, 1])


class FirstOrderJoints:
    """Joints that follow their position reference with a first-order lag.

    Per control step of ``dt`` seconds: ``q += dt / time_constant * (q_ref - q)``, ``qd`` the
    difference quotient of ``q``. Starts at ``q0`` (rad), at rest.
    """

    def __init__(self, n, dt=1e-3, time_constant=0.02, q0=None):
        self.dt = dt
        self.time_constant = time_constant
        self.q = np.zeros(n) if q0 is None else np.array(q0, dtype=float)
        self.qd = np.zeros(n)

    def __call__(self, model):
        q_ref = Q15_16.decode(model.reference[:, 0])
        q = self.q + self.dt / self.time_constant * (q_ref - self.q)
        self.qd = (q - self.q) / self.dt
        self.q = q
        for i, (qi, qdi) in enumerate(zip(Q15_16.encode(self.q), Q15_16.encode(self.qd))):
            model.set_sensor(i, int(qi), int(qdi))


class ControlledReferenceSerial(ReferenceSerial):
    """:class:`support.host.ReferenceSerial` with a board built with controllers: the
    ReferenceEngine on :class:`SensedChainModel` (``target``), with the same faults to order.

    Parameters
    ----------
    n_nodes : int
    sensor : callable, optional
        ``sensor(model)`` at the start of every control step (:func:`sensor_at_reference`,
        :class:`FirstOrderJoints`); default: the sensor ports keep what was set.
    local_loop : bool
        A board built with the local loop (LOCAL_MULTIPLE; ``ProtocolSpec(local_loop=True)``).
    """

    def __init__(self, n_nodes=6, sensor=None, *, clock_hz=12_000_000, baudrate=3_000_000,
                 local_loop=False):
        super().__init__(n_nodes, clock_hz=clock_hz, baudrate=baudrate)
        self.spec = P.ProtocolSpec(n_nodes, clock_hz=clock_hz, baudrate=baudrate,
                                   controllers=True, local_loop=local_loop)
        self.target = SensedChainModel(self.spec, sensor)
        self.engine = P.ReferenceEngine(self.spec, self.target)
        self.controls = 0

    def write(self, data):
        if len(data) > 3 and data[3] == P.Command.CONTROL:
            self.controls += 1
        return super().write(data)


class ReferencePty:
    """A software board served on a pseudo-terminal: the host opens :attr:`port` like a board's
    serial port (``Board.open``, the CLI's ``--port``, :class:`support.host.FaultyLine`).

    A thread passes the host's bytes to the engine as they come and writes its replies back; a
    silence of the protocol's inter-byte timeout inside a frame ends it (TRUNCATED), as on a
    board.

    Parameters
    ----------
    serial : ReferenceSerial
        Its ``engine`` is the board (``serial.target`` its register target).
    """

    def __init__(self, serial):
        self.serial = serial
        self.engine = serial.engine
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.port = os.ttyname(self._slave)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        last = time.monotonic()
        while not self._stop.is_set():
            readable, _, _ = select.select([self._master], [], [], P.INTER_BYTE_TIMEOUT / 2)
            now = time.monotonic()
            if readable:
                try:
                    data = os.read(self._master, 4096)
                except OSError:
                    time.sleep(0.01)
                    continue
                with self._lock:
                    out = self.engine.receive(data)
                last = now
            elif now - last > P.INTER_BYTE_TIMEOUT:
                with self._lock:
                    out = self.engine.idle()
            else:
                continue
            if out:
                os.write(self._master, out)

    def call(self, function, *args):
        """Run ``function(*args)`` while no request is being executed (e.g. to set sensors)."""
        with self._lock:
            return function(*args)

    def close(self):
        self._stop.set()
        self._thread.join(2)
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
