"""Random request frames, malformed frames and byte streams: the host-link protocol fuzzers.

Shared by the protocol engine's tests on the Amaranth simulator
(``tests/gateware/test_protocol_engine.py``, the engine on a FakeChain) and the cocotb testbench
of the whole board at its UART pins (:mod:`linkdyn.sim.board_uart_cocotb`), which runs in the simulator's
process and therefore imports them from here.

A *script* is a list of events: ``bytes`` (sent back to back) and :data:`IDLE` (the line stays
idle for longer than the engine's inter-byte timeout, so that a frame in progress ends with
TRUNCATED). The expected replies come from :class:`linkdyn.model.protocol.ReferenceEngine`
fed with the same events (``receive`` for bytes, ``idle`` for :data:`IDLE`); no generator here
predicts a reply itself.

Generators (all take a :class:`random.Random` and a :class:`~linkdyn.model.protocol.ProtocolSpec`):

:func:`random_request`
    A well-formed request (right CRC) of a random kind; many are invalid in content (unknown
    command, node or address out of range, writes to read-only words, bad block counts).
:func:`invalid_request`
    A well-formed request that the engine must refuse, whatever the chain's state: bad version,
    unknown command, bad length, bad node, bad address, read-only word.
:func:`corrupt`
    A damaged copy of a frame: bit flip, truncation, dropped or inserted byte, random bytes,
    bad version, damaged length, damaged CRC.
:func:`garbage`
    Random bytes, with or without request sync bytes.
:func:`fuzz_script`
    Random requests, half of them (or all) corrupted, with idle gaps.
:func:`malformed_script`
    Only frames that must change no state: corrupted frames, invalid requests and garbage,
    each run of garbage followed by a read-only probe (INFO or STATUS) that the engine must
    answer once it has resynchronised.
"""

from __future__ import annotations

from collections import Counter

from linkdyn.model import protocol as P

__all__ = ["IDLE", "REQUEST_KINDS", "REQUEST_WEIGHTS", "CORRUPTIONS", "INVALID_KINDS",
           "random_request", "invalid_request", "corrupt", "garbage", "fuzz_script",
           "malformed_script"]

#: Script event: the line stays idle for longer than the inter-byte timeout.
IDLE = "idle"

#: Kinds of :func:`random_request` and their default weights.
REQUEST_KINDS = ("info", "status", "clear", "read", "write", "load", "step", "unknown")
REQUEST_WEIGHTS = (2, 2, 1, 5, 5, 1, 4, 1)

#: Damage done by :func:`corrupt` (``flip`` twice as likely as the others).
CORRUPTIONS = ("flip", "flip", "truncate", "drop", "insert", "garbage", "version", "length",
               "crc")

#: Kinds of :func:`invalid_request`.
INVALID_KINDS = ("version", "command", "length", "node", "address", "read_only")

_C = P.Command

#: Addresses of the control block that do not exist, below the build-information words.
_CONTROL_HOLES = sorted(set(range(P.INFO_FIRST))
                        - {reg.address for reg in P.CONTROL_REGISTERS if not reg.requires})


def _request(command, payload=b"", seq=0, **kw):
    return P.encode_request(command, payload, seq=seq, **kw)


def random_request(rng, spec, seq, weights=REQUEST_WEIGHTS, *, kinds=None):
    """Return a well-formed request frame of a random kind.

    Parameters
    ----------
    rng : random.Random
    spec : ProtocolSpec
    seq : int
        Sequence number of the frame.
    weights : sequence of float
        Weights of :data:`REQUEST_KINDS` (the default keeps the random sequence of the
        engine tests).
    kinds : collections.Counter, optional
        Counts the kind chosen.

    Returns
    -------
    bytes

    Notes
    -----
    Never a WRITE of CONTROL.start (a reference chain model finishes updates at once, the
    chain does not), never a READ of INTERVAL_CYCLES of the control block (it depends on
    timing); READs of LATENCY_CYCLES do occur.
    """
    n = spec.n_nodes
    ctl = P.CONTROL_NODE
    kind = rng.choices(REQUEST_KINDS, weights=weights)[0]
    if kinds is not None:
        kinds[kind] += 1
    if kind == "info":
        return _request(_C.INFO, seq=seq)
    if kind == "status":
        return _request(_C.STATUS, seq=seq)
    if kind == "clear":
        return _request(_C.CLEAR, seq=seq)
    if kind == "unknown":
        return _request(rng.choice([0, 8, 0x42, 0x81, 0xFF]), rng.randbytes(rng.choice([0, 4])),
                        seq=seq)
    if kind == "read":
        node = rng.choice([0, n - 1, rng.randrange(n), ctl, n, 0x80])
        count = rng.choice([1, 1, 2, 5, rng.randrange(0, 12)])
        addr = rng.randrange(spec.node_map_size + 3)
        if node == ctl:
            # INTERVAL_CYCLES (5) depends on timing the Python model does not have.
            addr = rng.randrange(6, 0x30)
            if rng.random() < 0.3:
                addr = rng.randrange(5)
                count = min(count, 5 - addr)
        return _request(_C.READ, P.read_payload(node, addr, count), seq=seq)
    if kind == "write":
        node = rng.choice([0, rng.randrange(n), rng.randrange(n), ctl, n])
        if node == ctl:
            # Never START through WRITE: the Python model finishes updates instantly.
            return _request(_C.WRITE, P.write_payload(ctl, rng.choice([0, 0, 1, 7]),
                                                      [rng.choice([0, P.CONTROL_CLEAR])]),
                            seq=seq)
        addr = rng.randrange(spec.writable_end_node0 + 4)
        words = [rng.getrandbits(32) for _ in range(rng.choice([1, 2, 3, 8]))]
        return _request(_C.WRITE, P.write_payload(node, addr, words), seq=seq)
    if kind == "load":
        return _request(_C.LOAD_ROBOT, P.words_to_bytes(
            [rng.getrandbits(32) for _ in range(spec.load_robot_words)]), seq=seq)
    wide = rng.random() < 0.3
    words = [rng.getrandbits(rng.choice([8, 20, 32])) for _ in range(spec.step_words(wide))]
    return _request(_C.STEP, P.words_to_bytes(words), seq=seq)


def invalid_request(rng, spec, seq, weights=REQUEST_WEIGHTS, *, kinds=None):
    """Return a well-formed request (right CRC) that the engine must refuse in any state.

    Parameters
    ----------
    rng : random.Random
    spec : ProtocolSpec
    seq : int
    weights : sequence of float
        Weights of the request kinds behind a bad version (:func:`random_request`).
    kinds : collections.Counter, optional
        Counts the kind chosen (:data:`INVALID_KINDS`).

    Returns
    -------
    bytes
        A request answered with BAD_VERSION, UNKNOWN_COMMAND, BAD_LENGTH, BAD_NODE,
        BAD_ADDRESS or READ_ONLY (before any access to the chain, so it changes nothing).
    """
    n = spec.n_nodes
    ctl = P.CONTROL_NODE
    kind = rng.choice(INVALID_KINDS)
    if kinds is not None:
        kinds[kind] += 1
    if kind == "version":
        frame = random_request(rng, spec, seq, weights)
        return P.encode_request(frame[3], frame[6:-2], seq=seq,
                                version=rng.choice([0, P.PROTOCOL_VERSION + 1, 0x5A, 0xA5, 0xFF]))
    if kind == "command":
        command = rng.choice([0x00, 0x08, 0x09, 0x10, 0x42, 0x80 | rng.randrange(1, 8), 0xFF])
        return _request(command, rng.randbytes(4 * rng.randrange(3)), seq=seq)
    if kind == "length":
        # (LOAD_ROBOT, the longest frame, least often)
        case = rng.choices(range(7), weights=(2, 2, 1, 2, 1, 2, 1))[0]
        if case == 0:       # a payload on a command that has none
            command = rng.choice([_C.INFO, _C.STATUS, _C.CLEAR])
            return _request(command, rng.randbytes(rng.choice([1, 2, 4, 8])), seq=seq)
        if case == 1:       # STEP of neither 3n nor 9n words, or not whole words
            lengths = {4 * spec.step_words(False), 4 * spec.step_words(True)}
            length = rng.choice([4 * spec.step_words(False) + rng.choice([-4, -1, 1, 4]),
                                 4 * spec.step_words(True) + rng.choice([-4, -2, 4]), 0, 4])
            assert length not in lengths
            return _request(_C.STEP, rng.randbytes(length), seq=seq)
        if case == 2:       # LOAD_ROBOT of the wrong length
            length = 4 * spec.load_robot_words + rng.choice([-8, -4, -1, 4])
            if length > spec.max_payload_bytes:
                # Answered right after the header; the rest is hunted through as garbage.
                header = _request(_C.LOAD_ROBOT, bytes(length), seq=seq)[:P.REQUEST_HEADER_BYTES]
                return header + rng.randbytes(rng.randrange(16))
            return _request(_C.LOAD_ROBOT, rng.randbytes(length), seq=seq)
        if case == 3:       # READ count 0 or beyond the buffer
            count = rng.choice([0, spec.buffer_words + 1, rng.randrange(spec.buffer_words + 1,
                                                                         1 << 16)])
            return _request(_C.READ, P.read_payload(rng.randrange(n), 0, count), seq=seq)
        if case == 4:       # READ payload of the wrong length
            return _request(_C.READ, rng.randbytes(rng.choice([0, 2, 8])), seq=seq)
        if case == 5:       # WRITE count that disagrees with the words sent
            count = rng.randrange(1, 6)
            words = [rng.getrandbits(32) for _ in range(count + rng.choice([-1, 1, 2]))]
            block = P.block_word(rng.randrange(n), rng.randrange(spec.writable_end - 8), count)
            return _request(_C.WRITE, P.words_to_bytes([block] + words), seq=seq)
        # WRITE that is too short or not whole words
        return _request(_C.WRITE, rng.randbytes(rng.choice([0, 4, 6, 9])), seq=seq)
    if kind == "node":
        node = rng.choice([n, n + 1, rng.randrange(n, ctl), ctl - 1])
        if rng.random() < 0.5:
            return _request(_C.READ, P.read_payload(node, rng.randrange(4), rng.randrange(1, 4)),
                            seq=seq)
        return _request(_C.WRITE, P.write_payload(node, rng.randrange(spec.writable_end),
                                                  [rng.getrandbits(32)]), seq=seq)
    if kind == "address":
        size = spec.node_map_size
        if rng.random() < 0.5:      # node registers: a block that ends beyond the map
            addr = rng.randrange(size - 4, 256)
            count = rng.randrange(max(1, size - addr + 1), max(2, size - addr + 5))
            node = rng.randrange(n)
        else:                       # control block: a hole in the map, or past its end
            node = ctl
            hole = _CONTROL_HOLES[0]
            addr = rng.choice([hole, hole + 1, P.INFO_FIRST - 1, P.INFO_FIRST + P.INFO_COUNT,
                               0x40, 0xFF, rng.randrange(hole, P.INFO_FIRST)])
            count = rng.randrange(1, 4)
            if rng.random() < 0.3:
                # A block of existing words that runs into the first hole.
                addr, count = hole - 3, rng.randrange(4, 9)
        if rng.random() < 0.5:
            return _request(_C.READ, P.read_payload(node, addr, count), seq=seq)
        words = [rng.getrandbits(32) for _ in range(count)]
        return _request(_C.WRITE, P.write_payload(node, addr, words), seq=seq)
    # read_only
    case = rng.randrange(4)
    if case == 0:       # a computed register of any node
        node = rng.randrange(n)
        addr = rng.randrange(spec.writable_end_node0, spec.node_map_size)
        count = rng.randrange(1, min(4, spec.node_map_size - addr) + 1)
    elif case == 1:     # the forward mailbox of a node other than node 0
        node = rng.randrange(1, n) if n > 1 else 0
        addr = rng.randrange(spec.writable_end, spec.writable_end_node0)
        count = 1
        if node == 0:
            addr = spec.writable_end_node0
    elif case == 2:     # a block that starts writable and runs into read-only words
        node = rng.randrange(n)
        end = spec.writable_end_node0 if node == 0 else spec.writable_end
        addr = rng.randrange(end - 3, end)
        count = end - addr + rng.randrange(1, 3)
    else:               # a read-only control word
        node = ctl
        addr = rng.choice([reg.address for reg in P.CONTROL_REGISTERS
                           if reg.access == "r" and not reg.requires])
        count = 1
    words = [rng.getrandbits(32) for _ in range(count)]
    return _request(_C.WRITE, P.write_payload(node, addr, words), seq=seq)


def _corrupt(rng, frame, strict):
    mode = rng.choice(CORRUPTIONS)
    data = bytearray(frame)
    if mode == "flip":
        position = rng.randrange(1, len(data))
        data[position] ^= 1 << rng.randrange(8)
    elif mode == "truncate":
        return bytes(data[:rng.randrange(1, len(data))]), True, mode
    elif mode == "drop":
        if strict:
            # Not the last byte (the next frame's first byte could restore it), nor a byte
            # equal to its successor (the same bytes would arrive).
            positions = [k for k in range(1, len(data) - 1) if data[k] != data[k + 1]]
            del data[rng.choice(positions)]
        else:
            del data[rng.randrange(1, len(data))]
    elif mode == "insert":
        position = rng.randrange(1, len(data))
        byte = rng.getrandbits(8)
        while strict and byte == data[position]:
            byte = rng.getrandbits(8)      # else the frame would arrive whole, a byte late
        data.insert(position, byte)
    elif mode == "garbage":
        return bytes(rng.randbytes(rng.randrange(1, 40))), False, mode
    elif mode == "version":
        return P.encode_request(frame[3], frame[6:-2], seq=frame[2],
                                version=rng.choice([0, P.PROTOCOL_VERSION + 1, 0xA5])), False, mode
    elif mode == "length":
        data[4] ^= 1 << rng.randrange(8)
        data[5] ^= rng.choice([0, 0, 1, 0x80])
    elif mode == "crc":
        data[-2] ^= 1 << rng.randrange(8)
    return bytes(data), False, mode


def corrupt(rng, frame, spec, *, strict=False, modes=None):
    """Return a malformed version of a request frame.

    Parameters
    ----------
    rng : random.Random
    frame : bytes
        A well-formed request.
    spec : ProtocolSpec
        Unused (kept for the callers' symmetry with the other generators).
    strict : bool
        Never leave the frame's own bytes intact: an inserted byte differs from the byte it
        displaces, and a dropped byte is neither the last one nor equal to its successor.
        Without it (the engine tests' random sequence), an inserted copy of the last byte
        leaves a whole frame and a stray byte, and a dropped last byte is restored when the
        next frame starts with it.
    modes : collections.Counter, optional
        Counts the damage done (:data:`CORRUPTIONS`).

    Returns
    -------
    (bytes, bool)
        The damaged bytes, and whether they must be followed by an idle line (a truncated
        frame: without the idle the next frame's bytes would complete it).

    Notes
    -----
    A flipped bit or a damaged CRC always fails CRC-16; a changed version is answered
    BAD_VERSION. A dropped or inserted byte, a damaged length or random bytes shift the
    framing; the frame the engine then assembles (with bytes of the next frame, or fewer of its
    own) is well-formed by chance only (see ``strict``; else a 2**-16 chance that the CRC
    matches), and the reference engine then answers it like the engine.
    """
    data, needs_idle, mode = _corrupt(rng, frame, strict)
    if modes is not None:
        modes[mode] += 1
    return data, needs_idle


def garbage(rng, length, sync=False):
    """Return ``length`` random bytes: without any request sync byte, or (``sync``) with a few
    sync bytes (and a plausible version byte after some of them) scattered in."""
    if not sync:
        data = bytearray(rng.randbytes(length))
        for k, byte in enumerate(data):
            while data[k] == P.REQUEST_SYNC:
                data[k] = rng.getrandbits(8)
        return bytes(data)
    data = bytearray(rng.randbytes(length))
    for _ in range(rng.randrange(1, 4)):
        k = rng.randrange(length)
        data[k] = P.REQUEST_SYNC
        if k + 1 < length and rng.random() < 0.5:
            data[k + 1] = P.PROTOCOL_VERSION
    return bytes(data)


def fuzz_script(rng, spec, frames, malformed_only, weights=REQUEST_WEIGHTS, *, strict=False,
                stats=None):
    """Return a script of ``frames`` random requests, corrupted with probability 1/2 (all of
    them with ``malformed_only``), with an idle line after every truncated frame and after
    15 % of the others.

    Parameters
    ----------
    rng : random.Random
    spec : ProtocolSpec
    frames : int
    malformed_only : bool
    weights : sequence of float
        Weights of the request kinds (:func:`random_request`).
    strict : bool
        See :func:`corrupt`.
    stats : collections.Counter, optional
        Counts ``kind:<request kind>``, ``corrupt:<damage>``, ``valid`` and ``idle``.

    Returns
    -------
    list
        Script events (``bytes`` and :data:`IDLE`).
    """
    kinds = Counter() if stats is not None else None
    modes = Counter() if stats is not None else None
    script = []
    for k in range(frames):
        frame = random_request(rng, spec, k & 0xFF, weights, kinds=kinds)
        if malformed_only or rng.random() < 0.5:
            frame, needs_idle = corrupt(rng, frame, spec, strict=strict, modes=modes)
        else:
            needs_idle = False
            if stats is not None:
                stats["valid"] += 1
        script.append(frame)
        if needs_idle or rng.random() < 0.15:
            script.append(IDLE)
            if stats is not None:
                stats["idle"] += 1
    if stats is not None:
        stats.update({f"kind:{name}": count for name, count in kinds.items()})
        stats.update({f"corrupt:{name}": count for name, count in modes.items()})
    return script


def malformed_script(rng, spec, frames, weights=REQUEST_WEIGHTS, *, shares=(0.5, 0.3, 0.2),
                     garbage_bytes=64, stats=None):
    """Return a script of ``frames`` frames or byte streams that must change no state.

    Each entry is, at random (``shares``): a corrupted request (:func:`corrupt`, strict, of
    :func:`random_request`), a well-formed invalid request (:func:`invalid_request`), or a run
    of :func:`garbage` (half of the runs contain sync bytes). After a run of garbage comes
    a read-only probe, INFO (2/3) or STATUS (after an idle line if the garbage held a sync byte, so
    that a false frame start is resolved by the timeout first): the engine has resynchronised
    when it answers the probe. An idle line follows every truncated frame and 10 % of the
    other entries.

    Parameters
    ----------
    rng : random.Random
    spec : ProtocolSpec
    frames : int
        Entries (frames and runs of garbage; the probes are not counted).
    weights : sequence of float
        Weights of the request kinds that are corrupted (:func:`random_request`).
    shares : (float, float, float)
        Shares of corrupted requests, invalid requests and runs of garbage (sum 1).
    garbage_bytes : int
        Longest run of garbage.
    stats : collections.Counter, optional
        Counts ``corrupted``, ``invalid``, ``garbage``, ``garbage_sync``, ``probe``,
        ``idle``, and ``corrupt:<damage>``, ``invalid:<kind>``.

    Returns
    -------
    list
        Script events (``bytes`` and :data:`IDLE`).
    """
    stats = Counter() if stats is None else stats
    modes, kinds = Counter(), Counter()
    script = []
    for k in range(frames):
        seq = k & 0xFF
        roll = rng.random()
        needs_idle = False
        if roll < shares[0]:
            frame, needs_idle = corrupt(rng, random_request(rng, spec, seq, weights), spec,
                                        strict=True, modes=modes)
            script.append(frame)
            stats["corrupted"] += 1
        elif roll < shares[0] + shares[1]:
            script.append(invalid_request(rng, spec, seq, weights, kinds=kinds))
            stats["invalid"] += 1
        else:
            sync = rng.random() < 0.5
            script.append(garbage(rng, rng.randrange(1, garbage_bytes + 1), sync))
            stats["garbage_sync" if sync else "garbage"] += 1
            if sync:
                script.append(IDLE)
                stats["idle"] += 1
            probe = rng.choice([P.Command.INFO, P.Command.INFO, P.Command.STATUS])
            script.append(P.encode_request(probe, seq=seq))
            stats["probe"] += 1
        if needs_idle or rng.random() < 0.1:
            script.append(IDLE)
            stats["idle"] += 1
    stats.update({f"corrupt:{name}": count for name, count in modes.items()})
    stats.update({f"invalid:{name}": count for name, count in kinds.items()})
    return script
