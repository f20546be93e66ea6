"""The register bus's ``lock``: a host command never meets a CONTROL_PERIOD step midway.

The protocol engine checks STATUS before a state-changing command and answers BUSY (which the
host retries) if a control step runs; without a lock, the timer could start a step between that
check and the command's writes, and the busy chain would refuse the writes (BUS_ERROR, a
command half done). :class:`~linkdyn.gateware.protocol.ProtocolEngine` raises ``bus.lock`` from
the check to the reply and :class:`~linkdyn.gateware.controlled_chain.ControlledChain` defers a
due step while it is high.

The test runs the engine and a one-node controlled chain in the Amaranth simulator, with the
timer at a period a few commands long, and sends WRITE commands of the controller's gain words
back to back (their phase against the timer drifts from command to command): every reply must
be OK or BUSY, the words must read back, and the timer's steps must have run meanwhile. The
same run with the lock not wired (the chain sees it low) gets BUS_ERROR replies: the test can
fail.
"""

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.protocol import ProtocolEngine
from linkdyn.model import protocol as P

from support.protocol_engine import exchange

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

C, E = P.Command, P.ErrorCode
#: Timer period, cycles: a few WRITE commands, more than one control step of a node.
PERIOD = 1_000
#: WRITE commands sent while the timer runs.
COMMANDS = 60
_KP = next(w.address for w in P.CONTROLLER_WORDS if w.name == "kp")
#: The controller's writable gain and limit words kp .. watchdog_cycles (0x80 .. 0x92).
_GAINS = 19


class _Board(wiring.Component):
    def __init__(self, lock):
        self.engine = ProtocolEngine(1, controllers=True, timeout_cycles=2000,
                                     step_timeout_cycles=20_000)
        self.chain = ControlledChain(1)
        self.lock = lock
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = self.engine
        m.submodules.chain = chain = self.chain
        if self.lock:
            wiring.connect(m, engine.bus, chain.bus)
        else:                                   # every member but lock (the chain sees it low)
            for name in ("valid", "node", "addr", "we", "wdata"):
                m.d.comb += getattr(chain.bus, name).eq(getattr(engine.bus, name))
            for name in ("ready", "rdata", "error"):
                m.d.comb += getattr(engine.bus, name).eq(getattr(chain.bus, name))
        return m


def _run(lock):
    """Return the replies (decoded) of: CONTROL_PERIOD = PERIOD, COMMANDS gain WRITEs, a READ
    of the gains, a READ of CONTROL_STEPS."""
    board = _Board(lock)
    engine = board.engine
    seq = iter(range(1, 1 << 20))

    def request(command, payload):
        return P.encode_request(command, payload, seq=next(seq) & 0xFF)

    words = [[(1000 * k + j) & 0xFFFFFFFF for j in range(_GAINS)] for k in range(COMMANDS)]
    script = [request(C.WRITE, P.write_payload(P.CONTROL_NODE, 0x16, [PERIOD]))]
    script += [request(C.WRITE, P.write_payload(0, _KP, block)) for block in words]
    script += [request(C.READ, P.read_payload(0, _KP, _GAINS)),
               request(C.READ, P.read_payload(P.CONTROL_NODE, 0x17, 1))]
    replies = []

    async def bench(ctx):
        ctx.set(engine.tx.ready, 1)
        for frame in script:
            replies.append(P.decode_reply(await exchange(ctx, engine, frame, 50_000)))

    sim = Simulator(board)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return words, replies


def test_commands_never_meet_a_timer_step_midway():
    words, replies = _run(lock=True)
    period, writes, (gains, steps) = replies[0], replies[1:-2], replies[-2:]
    assert period.status == E.OK
    statuses = [reply.status for reply in writes]
    assert set(statuses) <= {E.OK, E.BUSY}, statuses
    assert gains.status == E.OK
    last_ok = max(k for k, status in enumerate(statuses) if status == E.OK)
    assert list(gains.words) == words[last_ok]
    # The timer ran its steps meanwhile (one per period, none lost to the lock here).
    assert steps.status == E.OK and steps.words[0] >= COMMANDS // 10


def test_without_the_lock_a_timer_step_refuses_a_command_midway():
    _, replies = _run(lock=False)
    assert E.BUS_ERROR in [reply.status for reply in replies[1:-2]]
