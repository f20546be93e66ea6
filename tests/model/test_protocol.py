"""The protocol definition (model/protocol.py): CRC, frames, codec, spec, reference engine."""

import random
import struct

import pytest
from amaranth.lib.crc import catalog

from linkdyn.gateware import bus
from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.gateware.protocol import crc_parameters
from linkdyn.model import protocol as P
from linkdyn.model.fixedpoint import QFormat
from linkdyn.model.golden import microprogram

C = P.Command
E = P.ErrorCode


def test_crc_is_crc16_ccitt_false_as_in_amaranth_catalog():
    assert P.crc16(b"123456789") == P.CRC16.check == 0x29B1
    reference = catalog.CRC16_CCITT_FALSE(8)
    rng = random.Random(0)
    for length in (0, 1, 2, 7, 64, 300):
        data = rng.randbytes(length)
        assert P.crc16(data) == reference.compute(data) == crc_parameters().compute(data)
    assert P.crc16(b"6789", P.crc16(b"12345")) == 0x29B1


def test_protocol_constants_agree_with_the_bus():
    assert P.CONTROL_NODE == bus.CONTROL_NODE
    assert P.REQUEST_SYNC != P.REPLY_SYNC
    assert P.REQUEST_HEADER_BYTES == 6 and P.REPLY_HEADER_BYTES == 7


def test_control_map_is_consistent():
    addresses = [reg.address for reg in P.CONTROL_REGISTERS]
    assert len(set(addresses)) == len(addresses) and max(addresses) < 256
    names = [reg.name for reg in P.CONTROL_REGISTERS]
    assert len(set(names)) == len(names)
    # The blocks read by STATUS, INFO and STEP have no holes (the engine reads them blindly).
    for first, count in ((P.STATUS_FIRST, P.STATUS_COUNT), (P.INFO_FIRST, P.INFO_COUNT),
                         (P.STEP_CONTROL_FIRST, P.STEP_CONTROL_COUNT)):
        assert set(range(first, first + count)) <= set(addresses)
    # One error counter per error code, and only CONTROL is writable.
    for code in E:
        if code is not E.OK:
            assert P.control_register(f"ERRORS_{code.name}").owner == "engine"
    assert [reg.name for reg in P.CONTROL_REGISTERS if reg.access == "w"] == ["CONTROL"]
    assert all(reg.owner == "chain" for reg in P.CONTROL_REGISTERS[:7])
    with pytest.raises(KeyError, match="no control register named 'NOPE'"):
        P.control_register("NOPE")


def test_spec_sizes_and_access_follow_the_register_map():
    spec = P.ProtocolSpec(6)
    rmap = microprogram().registers
    assert spec.node_map_size == rmap.size
    assert spec.load_robot_words == 6 * 24 + 9
    assert spec.step_words() == 18 and spec.step_words(True) == 54
    assert spec.step_reply_words == 6 + 5
    assert spec.buffer_words == spec.load_robot_words
    for reg in rmap:
        if reg.address is None:
            continue
        for node in (0, 3):
            access = spec.access(node, reg.address)
            assert access.exists
            writable = reg.kind in ("constant", "input") or (node == 0 and
                                                             reg.kind == "forward_in")
            assert access.writable == writable, (node, reg.name)
    assert not spec.access(0, rmap.size).exists
    assert not spec.access(6, 0).exists
    assert spec.access(P.CONTROL_NODE, 0) == P.Access(True, True, "chain")
    assert spec.access(P.CONTROL_NODE, 0x07) == P.Access(True, False, "engine")
    assert not spec.access(P.CONTROL_NODE, 0x16).exists
    # tau's format (Q12.19) and bit 24: formats per quantity (MAP_CHECK covers the others)
    assert spec.build_info()["WORD_FORMAT"] == 19 | (12 << 8) | (32 << 16) | (1 << 24)
    assert P.ProtocolSpec(6, QFormat(15, 16)).build_info()["WORD_FORMAT"] == \
        16 | (15 << 8) | (32 << 16)


def test_map_check_changes_with_the_word_format():
    assert P.ProtocolSpec(2).map_check == P.ProtocolSpec(5).map_check
    assert P.ProtocolSpec(2).map_check != P.ProtocolSpec(2, QFormat(11, 20)).map_check


def test_spec_checks_its_parameters():
    with pytest.raises(ValueError, match="Node count must be 1 .. 32, not 0"):
        P.ProtocolSpec(0)
    with pytest.raises(TypeError, match="Node count must be an integer"):
        P.ProtocolSpec("6")
    with pytest.raises(TypeError, match="fmt must be NodeFormats or a QFormat"):
        P.ProtocolSpec(6, "Q15.16")
    with pytest.raises(ValueError, match="board_id must be"):
        P.ProtocolSpec(6, board_id=-1)


def test_request_and_reply_round_trip():
    rng = random.Random(1)
    for _ in range(200):
        command = rng.choice(list(C))
        payload = rng.randbytes(4 * rng.randrange(0, 20))
        seq = rng.randrange(256)
        frame = P.encode_request(command, payload, seq=seq)
        assert P.decode_request(frame) == P.Request(seq, command, payload)
        status = rng.choice(list(E))
        reply = P.encode_reply(seq, command, status, payload if status == E.OK else b"")
        decoded = P.decode_reply(reply)
        assert (decoded.seq, decoded.command, decoded.status) == (seq, command, status)
    words = [0, 1, 0xFFFFFFFF, -1, -(1 << 31)]
    assert P.bytes_to_words(P.words_to_bytes(words)) == [0, 1, 0xFFFFFFFF, 0xFFFFFFFF,
                                                         0x80000000]
    assert P.bytes_to_words(P.words_to_bytes(words), signed=True) == [0, 1, -1, -1, -(1 << 31)]


def test_request_frame_layout_is_as_documented():
    frame = P.encode_request(C.READ, P.read_payload(2, 61, 3), seq=7)
    assert frame[:6] == bytes([0xA5, P.PROTOCOL_VERSION, 7, C.READ, 4, 0])
    assert frame[6:10] == struct.pack("<I", 2 | 61 << 8 | 3 << 16)
    assert frame[10:] == struct.pack("<H", P.crc16(frame[1:10]))
    reply = P.encode_reply(7, C.READ, E.OK, [1, 2, 3])
    assert reply[:7] == bytes([0x5A, P.PROTOCOL_VERSION, 7, C.READ, 0, 12, 0])


def test_decoder_raises_clear_errors():
    reply = P.encode_reply(3, C.INFO, E.OK, [1, 2])
    with pytest.raises(P.TruncatedFrameError, match="the frame has 17"):
        P.decode_reply(reply[:-1])
    with pytest.raises(P.TruncatedFrameError, match="header alone"):
        P.decode_reply(reply[:4])
    with pytest.raises(P.ChecksumError):
        P.decode_reply(reply[:8] + bytes([reply[8] ^ 1]) + reply[9:])
    with pytest.raises(P.FrameSyncError, match="not the sync byte 0x5a"):
        P.decode_reply(P.encode_request(C.INFO))
    with pytest.raises(P.VersionError):
        P.decode_reply(P.encode_reply(3, C.INFO, version=P.PROTOCOL_VERSION + 1))
    with pytest.raises(P.UnknownCommandError, match="OK reply to command byte 0x42"):
        P.decode_reply(P.encode_reply(3, 0x42))
    with pytest.raises(P.UnknownCommandError, match="status 0x77"):
        P.decode_reply(P.encode_reply(3, C.INFO, 0x77))
    with pytest.raises(P.ProtocolError, match="follow"):
        P.decode_reply(reply + b"\x00")
    assert P.decode_reply(P.encode_reply(3, 0x42, E.UNKNOWN_COMMAND)).command == 0x42
    with pytest.raises(P.DeviceError, match="READ_ONLY to WRITE"):
        P.decode_reply(P.encode_reply(4, C.WRITE, E.READ_ONLY)).check()
    with pytest.raises(ValueError, match="seq must be a byte"):
        P.encode_request(C.INFO, seq=256)


def test_reply_decoder_resynchronises_on_a_noisy_stream():
    rng = random.Random(2)
    replies = [P.encode_reply(k, C.READ, E.OK, [k, k + 1]) for k in range(50)]
    stream = bytearray()
    for k, reply in enumerate(replies):
        if k % 3 == 0:
            stream += rng.randbytes(rng.randrange(1, 20))
        if k % 7 == 0:
            damaged = bytearray(reply)
            damaged[rng.randrange(1, len(damaged))] ^= 0x10
            stream += damaged
        stream += reply
    decoder = P.ReplyDecoder()
    got = []
    position = 0
    while position < len(stream):
        step = rng.randrange(1, 9)
        got += decoder.feed(stream[position:position + step])
        position += step
    got += decoder.flush()
    assert [r.seq for r in got][-50:] == list(range(50))
    assert all(r.words == [r.seq, r.seq + 1] for r in got[-50:])
    assert decoder.discarded > 0 and decoder.pending == 0
    # With the board's payload limit, a damaged header is not waited for.
    small = P.ReplyDecoder(max_payload=64)
    bogus = bytes([P.REPLY_SYNC, 1, 0, 2, 0, 0xFF, 0x7F])
    assert [r.seq for r in small.feed(bogus + replies[5])] == [5]


def test_payload_builders_follow_the_register_map():
    spec = P.ProtocolSpec(2)
    rmap = spec.registers
    constants = [{reg.name: 100 * i + reg.address for reg in rmap.of_kind("constant")}
                 for i in range(2)]
    base = {reg.name: reg.address for reg in rmap.of_kind("forward_in")}
    words = P.bytes_to_words(P.load_robot_payload(spec, constants, base))
    assert words == list(range(24)) + [100 + a for a in range(24)] + list(range(33, 42))
    step = P.bytes_to_words(P.step_payload(spec, [1, 2], [3, 4], [5, 6], [[7] * 6, [8] * 6]))
    assert step == [1, 3, 5] + [7] * 6 + [2, 4, 6] + [8] * 6
    with pytest.raises(P.PayloadError, match="q has 1 words"):
        P.step_payload(spec, [1], [2, 3], [4, 5])
    with pytest.raises(ValueError, match="count must be 0 .. 65535"):
        P.read_payload(0, 0, 1 << 16)
    result = P.StepResult.from_payload(P.words_to_bytes([-5, 7, 1, 1, 100, 200, 3]), 2)
    assert result.tau_words == [-5, 7] and result.latency_cycles == 100


def test_reference_engine_executes_and_validates():
    spec = P.ProtocolSpec(2)
    chain = FakeChainModel(spec, 77)
    engine = P.ReferenceEngine(spec, chain)

    def send(frame):
        return P.decode_reply(engine.receive(frame))

    assert send(P.encode_request(C.WRITE, P.write_payload(1, 24, [1, 2, 3]), seq=1)).ok
    step = send(P.encode_request(C.STEP, P.step_payload(spec, [0, 10], [0, 20], [0, 30]), seq=2))
    assert P.StepResult.from_payload(step.payload, 2).tau_words == [0, 60]
    assert send(P.encode_request(C.WRITE, P.write_payload(1, 31, [9, 9, 9]))).status == \
        E.READ_ONLY
    assert chain.memory[1][31] == 0            # validated before anything was written
    assert send(P.encode_request(C.READ, P.read_payload(0, 0, 0))).status == E.BAD_LENGTH
    assert engine.receive(P.encode_request(C.INFO)[:5]) == b""
    assert P.decode_reply(engine.idle()).status == E.TRUNCATED
    status = P.ChainStatus.from_payload(send(P.encode_request(C.STATUS)).payload)
    assert status.errors[E.READ_ONLY] == 1 and status.errors[E.TRUNCATED] == 1
    assert status.words["FRAME_COUNT"] == 2 and status.words["LATENCY_CYCLES"] == 77
