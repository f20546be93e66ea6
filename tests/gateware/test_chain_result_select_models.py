"""RESULT_SELECT of the chain models against the chain: the same accesses, the same answers.

:class:`~linkdyn.gateware.chain.LinkDynChain` (sequential policy), the host-link test chain
:class:`~linkdyn.gateware.fake_chain.FakeChain` and its Python model
:class:`~linkdyn.gateware.fake_chain.FakeChainModel` (the reference engine's target) get the
same random RESULT_SELECT reads and writes between updates; every answer (refused or not, word
read) must be the chain's.
"""

import random

import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.fake_chain import FakeChain
from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.model import protocol as P

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

_CONTROL = P.control_register("CONTROL").address


def _script(seed, length=60):
    """Random events: ``("start",)``, ``("read",)``, ``("write", kind)``."""
    rng = random.Random(seed)
    kinds = ("zero", "last", "next", "previous", "follow", "follow_number", "random")
    events = [("read",), ("write", "last"), ("start",)]
    for _ in range(length):
        events.append(rng.choices([("start",), ("read",), ("write", rng.choice(kinds))],
                                  weights=(1, 2, 4))[0])
    return events, rng.getrandbits(31)


def _word(kind, updates, random_word):
    return {"zero": 0, "last": updates, "next": updates + 1, "previous": max(updates - 1, 0),
            "follow": P.RESULT_FOLLOW, "follow_number": P.RESULT_FOLLOW | (updates + 3),
            "random": random_word}[kind]


def _run_target(target, events, random_word):
    """Play the events on a register-bus target in the simulator; return the answers."""
    bus = target.bus
    answers = []

    async def access(ctx, addr, word=None):
        ctx.set(bus.valid, 1)
        ctx.set(bus.node, P.CONTROL_NODE)
        ctx.set(bus.addr, addr)
        ctx.set(bus.we, word is not None)
        ctx.set(bus.wdata, word or 0)
        for _ in range(10_000):
            _, _, ready, error, rdata = await ctx.tick().sample(bus.ready, bus.error, bus.rdata)
            if ready:
                ctx.set(bus.valid, 0)
                return bool(error), int(rdata)
        raise TimeoutError("no answer")

    async def bench(ctx):
        for event in events:
            if event[0] == "start":
                assert not (await access(ctx, _CONTROL, P.CONTROL_START))[0]
                while (await access(ctx, P.STATUS_FIRST))[1] & P.STATUS_BUSY:
                    pass
                continue
            updates = (await access(ctx, P.control_register("UPDATE_COUNT").address))[1]
            if event[0] == "read":
                answers.append(await access(ctx, P.RESULT_SELECT))
            else:
                word = _word(event[1], updates, random_word)
                error, _ = await access(ctx, P.RESULT_SELECT, word)
                answers.append((error, word))

    sim = Simulator(target)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return answers


def _run_model(events, random_word):
    model = FakeChainModel(P.ProtocolSpec(1), 1)
    answers = []
    for event in events:
        if event[0] == "start":
            assert model.write(P.CONTROL_NODE, _CONTROL, P.CONTROL_START)
            continue
        updates = model.read(P.CONTROL_NODE, P.control_register("UPDATE_COUNT").address)[1]
        if event[0] == "read":
            ok, word = model.read(P.CONTROL_NODE, P.RESULT_SELECT)
            answers.append((not ok, word))
        else:
            word = _word(event[1], updates, random_word)
            answers.append((not model.write(P.CONTROL_NODE, P.RESULT_SELECT, word), word))
    return answers


@pytest.mark.parametrize("seed", [1, 2])
def test_chain_models_answer_result_select_as_the_chain(seed):
    events, random_word = _script(seed)
    chain = _run_target(LinkDynChain(1), events, random_word)
    fake = _run_target(FakeChain(1, wait_states=True), events, random_word)
    model = _run_model(events, random_word)
    assert chain == fake == model
    refused = [error for error, _ in chain]
    assert any(refused) and not all(refused)
    reads = [word for event, (_, word) in zip([e for e in events if e[0] != "start"], chain)
             if event[0] == "read"]
    assert P.RESULT_FOLLOW in reads and any(0 < word < P.RESULT_FOLLOW for word in reads)
