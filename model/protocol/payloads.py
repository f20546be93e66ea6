"""Payloads of the host link protocol: the request payloads a host builds and the reply
payloads it decodes (INFO, STATUS, STEP, BATCH)."""

from __future__ import annotations

from dataclasses import dataclass

from .frames import WORD_BYTES, ErrorCode, PayloadError, bytes_to_words, words_to_bytes
from .registers import (
    CONTROL_REGISTERS, INFO_COUNT, INFO_FIRST, STATUS_BUSY, STATUS_COUNT, STATUS_DONE,
    STATUS_FIRST, STEP_CONTROL_COUNT,
)

__all__ = ["block_word", "read_payload", "write_payload", "load_robot_payload", "step_payload",
           "batch_payload", "BuildInfo", "ChainStatus", "StepResult", "BatchResult"]


def block_word(node, addr, count):
    """Return the block word ``node | addr << 8 | count << 16`` of READ and WRITE."""
    for name, value, bits in (("node", node, 8), ("addr", addr, 8), ("count", count, 16)):
        if not isinstance(value, int) or not 0 <= value < (1 << bits):
            raise ValueError(f"{name} must be 0 .. {(1 << bits) - 1}, not {value!r}")
    return node | (addr << 8) | (count << 16)


def read_payload(node, addr, count):
    """Return the READ payload: read ``count`` words of ``node`` from ``addr``."""
    return words_to_bytes([block_word(node, addr, count)])


def write_payload(node, addr, words):
    """Return the WRITE payload: write ``words`` to ``node`` from ``addr``."""
    words = list(words)
    return words_to_bytes([block_word(node, addr, len(words))] + words)


def load_robot_payload(spec, constants, base_motion):
    """Return the LOAD_ROBOT payload.

    Parameters
    ----------
    spec : ProtocolSpec
    constants : list of dict
        Per node, ``{register name: word}`` of every constant register
        (:func:`linkdyn.model.golden.encode_robot`).
    base_motion : dict
        The 9 forward-mailbox words of node 0 (:func:`linkdyn.model.golden.encode_base_motion`).
    """
    if len(constants) != spec.n_nodes:
        raise PayloadError(f"{len(constants)} nodes of constants, the chain has {spec.n_nodes}")
    words = []
    for node in constants:
        words += [node[reg.name] for reg in spec.registers.of_kind("constant")]
    words += [base_motion[reg.name] for reg in spec.registers.of_kind("forward_in")]
    return words_to_bytes(words)


def step_payload(spec, q, qd, qdd, wrench=None):
    """Return the STEP payload from joint words.

    Parameters
    ----------
    spec : ProtocolSpec
    q, qd, qdd : sequence of int, length n
        Joint position, velocity, acceleration words (the node format).
    wrench : sequence of sequence of int, shape (n, 6), optional
        External wrench words per node, ``f_ext_x .. mu_ext_z`` (then every input is sent).
    """
    n = spec.n_nodes
    for name, values in (("q", q), ("qd", qd), ("qdd", qdd)):
        if len(values) != n:
            raise PayloadError(f"{name} has {len(values)} words, the chain has {n} nodes")
    words = []
    for i in range(n):
        words += [q[i], qd[i], qdd[i]]
        if wrench is not None:
            if len(wrench[i]) != spec.input_count - 3:
                raise PayloadError(f"wrench of node {i} must have {spec.input_count - 3} words")
            words += list(wrench[i])
    return words_to_bytes(words)


def batch_payload(spec, steps):
    """Return the BATCH payload: the sample count K, then the K STEP payloads.

    Parameters
    ----------
    spec : ProtocolSpec
        A pipelined chain's (``spec.max_batch`` > 0).
    steps : sequence of bytes, length K
        The samples' STEP payloads (:func:`step_payload`), all with or all without the wrench.

    Raises
    ------
    PayloadError
        If K is not 1 .. ``spec.max_batch`` or a payload has the wrong length.
    """
    steps = [bytes(step) for step in steps]
    if not 1 <= len(steps) <= spec.max_batch:
        raise PayloadError(f"a BATCH carries 1 .. {spec.max_batch} samples on this chain "
                           f"({spec.banks} banks), not {len(steps)}")
    sizes = {len(step) for step in steps}
    allowed = {WORD_BYTES * spec.step_words(False), WORD_BYTES * spec.step_words(True)}
    if len(sizes) != 1 or not sizes <= allowed:
        raise PayloadError(f"the samples of a BATCH must all be STEP payloads of one of "
                           f"{sorted(allowed)} bytes, not {sorted(sizes)}")
    return words_to_bytes([len(steps)]) + b"".join(steps)


@dataclass(frozen=True)
class BuildInfo:
    """The INFO reply, decoded."""

    words: dict

    @classmethod
    def from_payload(cls, payload):
        """Decode an INFO reply payload."""
        words = bytes_to_words(payload)
        names = [reg.name for reg in CONTROL_REGISTERS if INFO_FIRST <= reg.address
                 < INFO_FIRST + INFO_COUNT]
        if len(words) != len(names):
            raise PayloadError(f"INFO payload has {len(words)} words, not {len(names)}")
        return cls(dict(zip(names, words)))

    def __getattr__(self, name):
        try:
            return self.words[name.upper()]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class ChainStatus:
    """The STATUS reply, decoded: ``{control register name: word}``."""

    words: dict

    @classmethod
    def from_payload(cls, payload):
        """Decode a STATUS reply payload."""
        words = bytes_to_words(payload)
        names = [reg.name for reg in CONTROL_REGISTERS if STATUS_FIRST <= reg.address
                 < STATUS_FIRST + STATUS_COUNT]
        if len(words) != len(names):
            raise PayloadError(f"STATUS payload has {len(words)} words, not {len(names)}")
        return cls(dict(zip(names, words)))

    @property
    def busy(self):
        return bool(self.words["STATUS"] & STATUS_BUSY)

    @property
    def done(self):
        return bool(self.words["STATUS"] & STATUS_DONE)

    @property
    def errors(self):
        """dict: error code -> count of error replies."""
        return {code: self.words[f"ERRORS_{code.name}"] for code in ErrorCode
                if code is not ErrorCode.OK}


@dataclass(frozen=True)
class StepResult:
    """The STEP reply, decoded.

    Attributes
    ----------
    tau_words : list of int
        Signed ``tau`` word per node (N·m in the node format).
    overflow : int
        Bit i: node i saturated in this update.
    overflow_sticky : int
        Bit i: node i saturated since the last clear.
    latency_cycles, interval_cycles, update_count : int
        See the control map.
    """

    tau_words: list
    overflow: int
    overflow_sticky: int
    latency_cycles: int
    interval_cycles: int
    update_count: int

    @classmethod
    def from_payload(cls, payload, n_nodes):
        """Decode a STEP reply payload of a chain of ``n_nodes``."""
        words = bytes_to_words(payload)
        if len(words) != n_nodes + STEP_CONTROL_COUNT:
            raise PayloadError(f"STEP payload has {len(words)} words, not "
                               f"{n_nodes + STEP_CONTROL_COUNT}")
        tau = [w - (1 << 32) if w & 0x80000000 else w for w in words[:n_nodes]]
        return cls(tau, *words[n_nodes:])


@dataclass(frozen=True)
class BatchResult:
    """The BATCH reply, decoded.

    Attributes
    ----------
    tau_words : list of list of int
        Per sample, the signed ``tau`` word per node.
    overflow : list of int
        Per sample, bit i: node i saturated in that sample's update.
    update_numbers : list of int
        Per sample, the number of its update (as UPDATE_COUNT counts: RESULT_SELECT read back).
    last : StepResult
        OVERFLOW .. UPDATE_COUNT after the batch (of its last update; ``tau_words`` are those
        of the last sample).
    """

    tau_words: list
    overflow: list
    update_numbers: list
    last: StepResult

    @classmethod
    def from_payload(cls, payload, n_nodes):
        """Decode a BATCH reply payload of a chain of ``n_nodes``."""
        words = bytes_to_words(payload)
        per = n_nodes + 2
        samples, rest = divmod(len(words) - STEP_CONTROL_COUNT, per)
        if samples < 1 or rest:
            raise PayloadError(f"BATCH payload has {len(words)} words, not K * {per} + "
                               f"{STEP_CONTROL_COUNT}")
        tau, overflow, numbers = [], [], []
        for k in range(samples):
            row = words[k * per:(k + 1) * per]
            tau.append([w - (1 << 32) if w & 0x80000000 else w for w in row[:n_nodes]])
            overflow.append(row[n_nodes])
            numbers.append(row[n_nodes + 1])
        last = StepResult(tau[-1], *words[samples * per:])
        return cls(tau, overflow, numbers, last)
