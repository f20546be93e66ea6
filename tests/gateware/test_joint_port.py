"""The joint port (gateware/joint_port.py) against a behavioural drive in the Amaranth simulator.

The drive (tests/support/joint_drive.py) is an SPI slave with its own bitwise CRC-8/AUTOSAR; it
answers each frame with a feedback frame, some of them damaged, and records the command frames.
Checked word for word: the feedback words reach ``sensor`` after a good frame and not after a
damaged one, the command frame carries the controller's ``i_ref`` and ``enable`` with a CRC the
drive accepts, the error counter and the fault latch, the enable pin.
"""

import itertools
import random

import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.joint_port import (CRC, DEFAULT_FAULT_ERRORS, ERROR_COUNTER_BITS,
                                         FRAME_BITS, JointPort, frame_cycles)
from support.joint_drive import DriveModel, crc8_autosar, feedback_frame, word_bits

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

DIVISOR, GAP = 2, 8
MASK32 = (1 << 32) - 1


def _signed(value):
    value &= MASK32
    return value - (1 << 32) if value >> 31 else value


def _damaged(frame, position):
    bits = list(frame)
    bits[position] ^= 1
    return bits


def _run(port, drive, commands, clears=()):
    """Simulate ``len(commands)`` frames; ``commands[k]`` = (i_ref, enable) the controller
    drives while frame k is due, ``clears``: frames after which ``fault_clear`` pulses. Return
    per frame what the controller side saw after it (q, qd, errors, fault, valid) and the
    enable pin a cycle after it."""
    seen = []

    async def controller(ctx):
        for k, (i_ref, enable) in enumerate(commands):
            ctx.set(port.actuator.i_ref, i_ref)
            ctx.set(port.actuator.enable, enable)
            while True:
                await ctx.tick()
                if ctx.get(port.frame_done):
                    break
            state = (ctx.get(port.sensor.q), ctx.get(port.sensor.qd), ctx.get(port.errors),
                     ctx.get(port.fault), ctx.get(port.valid))
            if k in clears:
                ctx.set(port.fault_clear, 1)
                await ctx.tick()
                ctx.set(port.fault_clear, 0)
            else:
                await ctx.tick()
            seen.append(state + (ctx.get(port.drive.enable),))

    async def drive_side(ctx):
        await drive.run(ctx, port.drive, len(commands))

    sim = Simulator(port)
    sim.add_clock(1e-8)
    sim.add_testbench(controller)
    sim.add_testbench(drive_side, background=True)
    sim.run()
    return seen


def _expected(responses, commands, clears=(), fault_errors=DEFAULT_FAULT_ERRORS):
    """What the port must do, frame by frame (module docstring of gateware/joint_port.py):
    ``(command (i_ref, control), after (q, qd, errors, fault, valid))`` per frame."""
    q = qd = errors = run = 0
    fault = valid = False
    out = []
    for k, (i_ref, enable) in enumerate(commands):
        enabled = bool(enable) and valid and not fault
        command = (_signed(i_ref) if enabled else 0, int(enabled))
        frame = responses[min(k, len(responses) - 1)]
        payload = frame[:64]
        if crc8_autosar(payload) == int("".join(map(str, frame[64:])), 2):
            q = int("".join(map(str, payload[:32])), 2)
            qd = int("".join(map(str, payload[32:])), 2)
            run = 0
            valid = valid or not fault
        else:
            errors = min(errors + 1, (1 << ERROR_COUNTER_BITS) - 1)
            run += 1
            if run == fault_errors:
                fault, valid, run = True, False, 0
        out.append((command, (_signed(q), _signed(qd), errors, int(fault), int(valid))))
        if k in clears:
            fault, valid, run = False, False, 0
    return out


def test_crc_reference_is_crc8_autosar_with_its_catalogue_check_value():
    # The catalogue's check value of CRC-8/AUTOSAR (reveng CRC catalogue): 0xDF.
    message = [bit for byte in b"123456789" for bit in word_bits(byte, 8)]
    assert crc8_autosar(message) == 0xDF
    assert (CRC.polynomial, CRC.initial_crc, CRC.xor_output) == (0x2F, 0xFF, 0xFF)
    assert not CRC.reflect_input and not CRC.reflect_output


def test_crc_detects_every_error_of_up_to_three_bits_in_a_frame():
    # CRC-8 is linear: flipping a set of bits changes the CRC check by the XOR of the
    # flipped bits' syndromes; an error goes undetected iff that XOR is 0.
    def syndrome(position):
        zero = [0] * FRAME_BITS
        bits = _damaged(zero, position)
        return crc8_autosar(bits[:64]) ^ crc8_autosar(zero[:64]) ^ int(
            "".join(map(str, bits[64:])), 2)
    syndromes = [syndrome(p) for p in range(FRAME_BITS)]
    assert all(syndromes)
    assert all(a ^ b for a, b in itertools.combinations(syndromes, 2))
    assert all(a ^ b ^ c for a, b, c in itertools.combinations(syndromes, 3))
    # Every odd number of flipped bits: the polynomial x^8 + x^5 + x^3 + x^2 + x + 1 has an
    # even number of terms, so x + 1 divides it; sampled here over random odd-weight errors.
    assert bin((1 << 8) | CRC.polynomial).count("1") % 2 == 0
    rng = random.Random(1)
    for _ in range(2000):
        flipped = rng.sample(range(FRAME_BITS), rng.choice([5, 7, 9, 21, 71]))
        total = 0
        for position in flipped:
            total ^= syndromes[position]
        assert total
    # A line stuck at 0 or at 1 (no drive on the pins) is no frame.
    for level in (0, 1):
        stuck = [level] * FRAME_BITS
        assert crc8_autosar(stuck[:64]) != int("".join(map(str, stuck[64:])), 2)


def test_joint_port_exchanges_the_words_of_every_frame_with_the_drive():
    rng = random.Random(14)
    frames = 7
    words = [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(frames)]
    words[2] = (0x8000_0000, 0x7FFF_FFFF)           # the extremes of Q15.16
    responses = [feedback_frame(q, qd) for q, qd in words]
    commands = [(rng.getrandbits(32), 1) for _ in range(frames)]
    commands[4] = (commands[4][0], 0)               # the controller disables the joint
    port = JointPort(divisor=DIVISOR, gap=GAP)
    drive = DriveModel(responses)
    seen = _run(port, drive, commands)
    expected = _expected(responses, commands)
    for k, (command, after) in enumerate(expected):
        frame = drive.commands[k]
        assert frame.crc_ok and frame.reserved == 0, k
        assert (frame.i_ref, frame.control) == command, k
        assert drive.enable_at_start[k] == frame.control, k
        assert seen[k][:5] == after, k
        assert seen[k][:2] == (_signed(words[k][0]), _signed(words[k][1])), k
    # The first frame goes out disabled (no sensor sample yet), the others as commanded.
    assert [f.control for f in drive.commands] == [0, 1, 1, 1, 0, 1, 1]
    assert drive.commands[1].i_ref == _signed(commands[1][0])
    # Timing: sclk at clock / (2 divisor), a frame every frame_cycles.
    rises = drive.sclk_rises
    assert {b - a for a, b in zip(rises, rises[1:FRAME_BITS])} == {2 * DIVISOR}
    starts = [f.start_cycle for f in drive.commands]
    assert {b - a for a, b in zip(starts, starts[1:])} == {frame_cycles(DIVISOR, GAP)}
    assert port.frame_cycles == 2 * DIVISOR * 72 + DIVISOR + GAP + 1


@pytest.mark.parametrize("divisor, delay", [(2, 0), (2, 1), (3, 3), (4, 5)])
def test_joint_port_drops_damaged_frames_and_latches_a_fault_that_disables_the_drive(divisor,
                                                                                      delay):
    # delay: the drive changes miso this many cycles after it sees sclk fall, up to the
    # port's margin of 2 divisor - 3 cycles.
    rng = random.Random(7 + delay)
    good = [feedback_frame(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(9)]
    responses = [
        good[0],
        _damaged(good[1], 5),                  # one bad frame: dropped, no fault
        good[2],
        _damaged(good[3], 40),                 # three in a row: the fault latches
        _damaged(good[4], 66),                 # (a flipped CRC bit)
        [1] * FRAME_BITS,                      # (a drive gone: miso at its pull-up)
        good[5],                               # good again: words taken, still faulted
        good[6],                               # the host clears after this one
        good[7],                               # enabled again after this good frame
        good[8],
    ]
    commands = [(rng.getrandbits(32), 1) for _ in responses]
    clears = (7,)
    port = JointPort(divisor=divisor, gap=GAP)
    drive = DriveModel(responses, delay=delay)
    seen = _run(port, drive, commands, clears)
    expected = _expected(responses, commands, clears)
    for k, (command, after) in enumerate(expected):
        assert drive.commands[k].crc_ok, k
        assert (drive.commands[k].i_ref, drive.commands[k].control) == command, k
        assert seen[k][:5] == after, k
    q_after = [s[0] for s in seen]
    # The damaged frames leave the last good words in place.
    assert q_after[1] == q_after[0] and q_after[3] == q_after[4] == q_after[5] == q_after[2]
    assert q_after[6] != q_after[5]
    errors = [s[2] for s in seen]
    fault = [s[3] for s in seen]
    assert errors == [0, 1, 1, 2, 3, 4, 4, 4, 4, 4]
    assert fault == [0, 0, 0, 0, 0, 1, 1, 1, 0, 0]
    # The enable pin: low a cycle after the fault, until a good frame after the clear.
    pin = [s[5] for s in seen]
    assert pin == [1, 1, 1, 1, 1, 0, 0, 0, 1, 1]
    assert [f.control for f in drive.commands] == [0, 1, 1, 1, 1, 1, 0, 0, 0, 1]
    assert all(f.i_ref == 0 for f in drive.commands if not f.control)


def test_a_drive_slower_than_the_margin_is_read_wrong_and_rejected():
    # One cycle past the margin the port takes the next bit: every frame fails its CRC.
    rng = random.Random(3)
    responses = [feedback_frame(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(3)]
    port = JointPort(divisor=DIVISOR, gap=GAP)
    seen = _run(port, DriveModel(responses, delay=2 * DIVISOR - 2), [(0, 1)] * 3)
    assert [s[2:5] for s in seen] == [(1, 0, 0), (2, 0, 0), (3, 1, 0)]
    assert [s[:2] for s in seen] == [(0, 0)] * 3


def test_joint_port_checks_its_parameters():
    with pytest.raises(ValueError, match="SPI clock divisor must be at least 2, not 1"):
        JointPort(divisor=1, gap=8)
    with pytest.raises(ValueError, match=r"Gap between frames \(cycles\) must be at least 8"):
        JointPort(divisor=4, gap=7)
    with pytest.raises(TypeError, match="Bad frames to latch a fault must be an integer"):
        JointPort(divisor=2, gap=8, fault_errors=2.0)
    with pytest.raises(ValueError, match="Bad frames to latch a fault must be at least 1"):
        JointPort(divisor=2, gap=8, fault_errors=0)
