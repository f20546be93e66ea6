"""Real-time factor of the closed loop in gateware mode.

``python -m linkdyn.bench.closed_loop_gateware``.

Runs the loop of the ``point`` experiment (UR5 at its reference pose, medium gains, no
disturbance) and of the ``payload_modelled`` run (the payload's weight told to the last node's
wrench registers) for ``--cycles`` control cycles in both controller modes
(:mod:`linkdyn.host.experiments.modes`): ``golden`` (the golden models) and ``gateware`` (the
controller and chain gateware in Verilator behind a pseudo-terminal,
:class:`linkdyn.host.experiments.gateware.GatewareController`). Prints milliseconds per control
cycle (controller + plant + log, wall clock), of them the controller's step, control cycles per
wall second and the real-time factor against the 1 kHz control rate (1 ms of plant time per
cycle / wall time per cycle). ``--write-docs docs/performance.md`` writes the section
"Closed loop, gateware mode". Speed only: the words of the two modes are compared by
tests/host/test_experiments_gateware.py.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import numpy as np

from linkdyn.host.experiments.gateware import GatewareSession
from linkdyn.host.experiments.loop import payload_wrench, run_closed_loop
from linkdyn.host.experiments.modes import golden_controller
from linkdyn.host.experiments.runs import PAYLOAD_GAINS, POINT_GAINS, reference_pose
from linkdyn.sim.board import DEFAULT_DIVISOR
from linkdyn.sim.plant import Plant

from .report import replace_section

__all__ = ["measure", "section", "CASES"]

#: The loops timed: (name, gains, payload told to the node).
CASES = (("point", POINT_GAINS["medium"], False), ("payload_modelled", PAYLOAD_GAINS, True))
_MASS, _COM = 0.8, (0.0, 0.0, 0.05)


class _Timed:
    """Wrap a controller to add up the wall time of its steps."""

    def __init__(self, controller):
        self.controller, self.robot, self.seconds = controller, controller.robot, 0.0

    def step(self, *args, **kwargs):
        start = time.perf_counter()
        tau = self.controller.step(*args, **kwargs)
        self.seconds += time.perf_counter() - start
        return tau


def measure(cycles=500, robot="ur5", session=None):
    """Time the loops of :data:`CASES` in both modes.

    Parameters
    ----------
    cycles : int
        Control cycles per loop (>= 1).
    robot : str
        Reference arm.
    session : GatewareSession, optional
        A started board to use (default: one is started and stopped here).

    Returns
    -------
    list of dict
        Per case and mode: ``case``, ``mode``, ``cycles``, ``ms_per_cycle`` (whole loop),
        ``ms_controller`` (the controller's step), ``cycles_per_second``,
        ``real_time_factor`` (against 1 kHz: plant seconds per wall second).
    """
    plant = Plant.from_reference(robot)
    q0 = reference_pose(plant)
    zero = np.zeros(plant.n)
    transform = plant.tip_in_dh
    com_n = transform[:3, :3] @ np.asarray(_COM) + transform[:3, 3]
    own = session is None
    if own:
        session = GatewareSession(plant.n).start()
    rows = []
    try:
        for case, gains, payload in CASES:
            for mode, make in (("golden", golden_controller), ("gateware", session.controller)):
                if payload:
                    plant.set_payload(_MASS, _COM)
                else:
                    plant.remove_payload()
                plant.reset(q0)
                plant.clear_disturbances()
                controller = _Timed(make(plant.robot, gains))
                f_ext = (lambda q: payload_wrench(plant.robot, q, _MASS, com_n)) \
                    if payload else None
                log = run_closed_loop(plant, controller, lambda t: (q0, zero, zero), cycles,
                                      f_ext=f_ext)
                wall = log.seconds_per_cycle
                rows.append({"case": case, "mode": mode, "cycles": cycles,
                             "ms_per_cycle": 1e3 * wall,
                             "ms_controller": 1e3 * controller.seconds / cycles,
                             "cycles_per_second": 1.0 / wall,
                             "real_time_factor": plant.control_period / wall})
        plant.remove_payload()
    finally:
        if own:
            session.stop()
    return rows


def section(rows, robot="ur5"):
    """Return the docs section of :func:`measure`'s rows (Markdown, heading first)."""
    from linkdyn.model import load_robot
    from linkdyn.model.protocol import (CRC_BYTES, REPLY_HEADER_BYTES, REQUEST_HEADER_BYTES,
                                        ProtocolSpec)
    spec = ProtocolSpec(load_robot(robot).n, controllers=True)
    request = REQUEST_HEADER_BYTES + 4 * spec.control_words + CRC_BYTES
    reply = REPLY_HEADER_BYTES + 4 * spec.control_reply_words + CRC_BYTES
    line = 10 * DEFAULT_DIVISOR * (request + reply)
    lines = [
        "## Closed loop, gateware mode",
        "",
        "`python -m linkdyn.bench.closed_loop_gateware`: the closed loop of the experiments "
        f"({robot}, MuJoCo plant at 1 kHz control) with the controller in each mode: `golden` "
        "(the golden models) and `gateware` (the board core with joint controllers in "
        "Verilator behind a pseudo-terminal, `SimulatedBoard(controllers=True)`, through the "
        "host `Board`: per cycle the sensor words set, the wrench written when it changed, one "
        "CONTROL). `point`: the reference pose held, medium gains; `payload_modelled`: the "
        "payload's weight told to the last node's wrench registers (a WRITE in the cycles "
        f"where the measured q changes its words). {rows[0]['cycles']} cycles each, wall "
        "clock; the real-time factor is plant time over wall time (1: a 1 kHz controller's pace).",
        "",
        "| loop | mode | ms per cycle | of it the controller | cycles per second | "
        "real-time factor |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['case']} | {row['mode']} | {row['ms_per_cycle']:.2f} | "
                     f"{row['ms_controller']:.2f} | {row['cycles_per_second']:.1f} | "
                     f"{row['real_time_factor']:.3f} |")
    lines += [
        "",
        "In gateware mode the cycle's time is the simulation (Verilator and the cocotb bridge "
        f"behind the pseudo-terminal): a CONTROL exchange carries {request} request and "
        f"{reply} reply bytes, {line:,} simulated clock cycles on the line at the simulated "
        f"board's {DEFAULT_DIVISOR} cycles per bit, against the control step's own (under a "
        "thousand, docs/controller.md, \"Integration (as built)\"); the sensor words go to the "
        "bridge through a file, one write per changed joint.",
        "",
        f"Machine: {platform.machine()}, shared with other jobs, python "
        f"{platform.python_version()}; {datetime.date.today().isoformat()}.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=500, help="control cycles per loop")
    parser.add_argument("--robot", default="ur5")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="write the section into this Markdown file")
    args = parser.parse_args(argv)
    if args.cycles < 1:
        parser.error(f"--cycles must be >= 1, not {args.cycles}")
    rows = measure(args.cycles, args.robot)
    text = section(rows, args.robot)
    print(text)
    if args.write_docs:
        replace_section(args.write_docs, text)
        print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
