"""A slow serial line is not a damaged one: the host reads a reply that keeps arriving, in bursts
with gaps longer than its settle time, to its end (the defect: a 6-node board simulated by Icarus
Verilog, whose replies arrive in bursts 30 .. 100 ms apart, was reported as "the replies keep
arriving damaged or lost"; a USB adapter's 16 ms latency timer is the same case).

The board is the protocol's :class:`~linkdyn.model.protocol.ReferenceEngine` on the FakeChain
model behind a fake port that releases each reply ``chunk`` bytes at a time, ``gap`` seconds
apart (wall clock): every gap is shorter than the host's silence timeout, the whole reply takes
longer than it."""

import threading
import time

import numpy as np
import pytest

from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.host import Board, BoardTimeoutError
from linkdyn.model import load_robot
from linkdyn.model import protocol as P

ROBOT = load_robot("ur5")


class SlowLine:
    """A pyserial-like port to a software board whose replies arrive ``chunk`` bytes every
    ``gap`` seconds (after ``first`` seconds); ``mute`` stops the line after that many reply
    bytes (a line that goes dead inside a frame). With ``paced_requests`` the board receives
    the host's bytes at the same pace, and answers once the whole request has arrived (as a
    simulated board does)."""

    def __init__(self, gap, chunk=4, first=0.01, mute=None, n_nodes=6, paced_requests=False):
        self.spec = P.ProtocolSpec(n_nodes, clock_hz=12_000_000, baudrate=3_000_000)
        self.engine = P.ReferenceEngine(self.spec, FakeChainModel(self.spec, 96))
        self.gap, self.chunk, self.first, self.mute = gap, chunk, first, mute
        self.paced_requests = paced_requests
        self.timeout = 0.005
        self.port = "slow-line"
        self._pending = bytearray()         # reply bytes not yet released
        self._released = bytearray()        # released, not yet read
        self._next = None                   # time of the next release
        self.sent = 0
        self.gaps = []                      # wall-clock gaps between the bursts released
        self._lock = threading.Lock()

    def write(self, data):
        with self._lock:
            self._pending += self.engine.receive(bytes(data))
            start = time.monotonic() + self.first
            if self.paced_requests:
                start += -(-len(data) // self.chunk) * self.gap
            if self._next is None or self.paced_requests:
                self._next = max(self._next or 0.0, start)
        return len(data)

    def _release(self):
        now = time.monotonic()
        while self._pending and self._next is not None and now >= self._next:
            if self.mute is not None and self.sent >= self.mute:
                self._pending.clear()
                break
            burst = self._pending[:self.chunk]
            del self._pending[:self.chunk]
            self._released += burst
            self.sent += len(burst)
            self._next += self.gap
            self.gaps.append(self.gap)
        if not self._pending:
            self._next = None

    @property
    def in_waiting(self):
        with self._lock:
            self._release()
            return len(self._released)

    def read(self, size=1):
        deadline = time.monotonic() + self.timeout
        while True:
            with self._lock:
                if not self._pending and not self._released:
                    self._pending += self.engine.idle()
                    if self._pending and self._next is None:
                        self._next = time.monotonic() + self.first
                self._release()
                if self._released:
                    data = bytes(self._released[:size])
                    del self._released[:size]
                    return data
            if time.monotonic() >= deadline:
                return b""
            time.sleep(0.001)

    def close(self):
        pass


def _reply_bytes(words):
    return P.REPLY_HEADER_BYTES + 4 * words + P.CRC_BYTES


def test_a_reply_arriving_in_bursts_slower_than_the_settle_time_is_read_to_its_end():
    # 60 ms between bursts of 4 bytes: twice the default settle time (30 ms), well inside the
    # 0.5 s silence timeout; the INFO reply (47 bytes, 12 bursts) takes 0.7 s in all.
    line = SlowLine(gap=0.06)
    board = Board(line, timeout=0.5)
    assert board.settle < line.gap < board.timeout
    assert _reply_bytes(P.INFO_COUNT) / line.chunk * line.gap > board.timeout
    start = time.monotonic()
    info = board.info()
    elapsed = time.monotonic() - start
    assert (info.nodes, info.clock_hz, info.baudrate) == (6, 12_000_000, 3_000_000)
    assert info.map_check == P.ProtocolSpec(6).map_check
    assert elapsed > board.timeout                    # the reply did take longer than that
    stats = board.statistics
    assert (stats.requests, stats.replies, stats.retries, stats.damaged_bytes) == (1, 1, 0, 0)


def test_streamed_steps_on_a_slow_line_equal_those_on_a_fast_one():
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.uniform(-1, 1, (5, 6)) for _ in range(3))
    fast = SlowLine(gap=0.0, chunk=1 << 16, first=0.0)
    with Board(fast, timeout=0.5) as board:
        board.load_robot(ROBOT, verify=False)
        expected = board.rnea(q, qd, qdd)
    slow = SlowLine(gap=0.05, chunk=16)
    with Board(slow, timeout=0.5) as board:
        board.load_robot(ROBOT, verify=False)
        result = board.rnea(q, qd, qdd)
        assert board.statistics.damaged_bytes == 0
    np.testing.assert_array_equal(result.tau_words, expected.tau_words)
    assert (result.retries, result.updates) == (0, 5)


def test_a_line_that_goes_silent_inside_a_frame_still_times_out():
    # The reply stops after 10 bytes: after `timeout` of silence the frame is given up (its
    # bytes counted as damaged) and, after every retry, the host says the board stopped.
    line = SlowLine(gap=0.01, mute=10)
    board = Board(line, timeout=0.1, retries=1)
    start = time.monotonic()
    with pytest.raises(BoardTimeoutError, match="stopped answering: INFO failed 2 times"):
        board.info()
    assert time.monotonic() - start < 2.0


def test_a_first_reply_later_than_the_timeout_is_resent_as_a_timeout_not_as_damage():
    # The board's first byte comes after 0.3 s, later than the 0.2 s timeout (an HDL simulator
    # on a busy machine, before the host has seen the line's pace): the request is resent once
    # (at 0.21 s, after the 10 ms settle time), counted as a timeout; the late reply is dropped
    # as stale, the second one (due within 0.41 s) is used.
    line = SlowLine(gap=0.0, chunk=1 << 16, first=0.3)
    board = Board(line, timeout=0.2, settle=0.01)
    info = board.info()
    assert info.map_check == P.ProtocolSpec(6).map_check
    stats = board.statistics
    assert (stats.requests, stats.replies, stats.retries, stats.timeouts) == (2, 1, 1, 1)
    assert (stats.damaged_bytes, stats.stale_replies) == (0, 1)


def test_a_long_request_to_a_board_that_receives_at_the_line_pace_is_waited_for():
    # LOAD_ROBOT (about 570 bytes) reaches the board in 1.5 s, 16 bytes every 40 ms, three times the
    # 0.5 s silence timeout: the host has learned the line's pace from the INFO reply and adds
    # the request's time on the line at that pace to the timeout.
    line = SlowLine(gap=0.04, chunk=16, paced_requests=True)
    board = Board(line, timeout=0.5)
    board.info()
    spec = line.spec
    request = P.REQUEST_HEADER_BYTES + 4 * (spec.constant_count * 6 + spec.base_motion_count) \
        + P.CRC_BYTES
    assert request / line.chunk * line.gap > 2 * board.timeout
    board.load_robot(ROBOT, verify=False)
    assert (board.statistics.retries, board.statistics.damaged_bytes) == (0, 0)
