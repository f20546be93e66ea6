"""Host link figures: serial bytes and round trip per control cycle, and the simulated board's
speed. Run as ``python -m linkdyn.bench.hostlink [--write-docs docs/performance.md]``.

1. **Link budget** (from the protocol's frame sizes): one control cycle is one STEP request
   (``q, qd, qdd`` of every joint) and its reply (``tau`` of every joint and the status words).
   Its round trip is the request's line time, the board's turnaround (the protocol engine's
   work plus the chain's update, in cycles at the board clock) and the reply's line time; 8N1,
   10 bits per byte, at the rate the board clock makes (``clock / round(clock / baud)``).
2. **Turnaround cycles**, measured on the simulated board (:class:`linkdyn.sim.SimulatedBoard`,
   Verilator): from the request's last stop bit to the reply's start bit, one request at a
   time. The chain's share is its LATENCY_CYCLES; the rest is the engine (frame check, bus
   transfers, reply header). With the FakeChain stand-in the chain's cycles are replaced by
   the microprogram's schedule of a sequential chain update (``joint + n forward + local +
   n distal``), an estimate until ``LinkDynChain`` is measured.
3. **Host CPU** per control cycle: encoding the STEP request and decoding its reply.
4. **Simulated board speed**: wall-clock updates per second over the pseudo-terminal, one
   request at a time and streamed.

With ``--write-docs PATH`` the figures replace the ``## Host link`` section of a Markdown file,
leaving its other sections alone.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from linkdyn.model import protocol as P

from .report import replace_section

__all__ = ["frame_bytes", "LinkBudget", "link_budget", "chain_cycles_estimate",
           "host_cpu_per_cycle", "measure_simulated_board", "report", "main"]

#: The goal: a 6-DOF control cycle at 3 Mbaud within this many microseconds.
GOAL_US = 500.0
BAUDRATES = (1_000_000, 3_000_000)
NODE_COUNTS = (6, 7)
SECTION = "## Host link"


def frame_bytes(n):
    """Return ``(request, reply)`` bytes of one control cycle (STEP without the wrench) of an
    n-node board."""
    spec = P.ProtocolSpec(n)
    request = P.REQUEST_HEADER_BYTES + P.WORD_BYTES * spec.step_words() + P.CRC_BYTES
    reply = P.REPLY_HEADER_BYTES + P.WORD_BYTES * spec.step_reply_words + P.CRC_BYTES
    return request, reply


def chain_cycles_estimate(n):
    """Return the cycles of a sequential chain update from the node microprogram's schedule:
    ``joint + n forward + local + n distal`` (no mailbox transfer)."""
    from linkdyn.model.golden import microprogram
    s = microprogram().segments
    return s["joint"].cycles + n * s["forward"].cycles + s["local"].cycles \
        + n * s["distal"].cycles


@dataclass(frozen=True)
class LinkBudget:
    """One control cycle over the serial line.

    Attributes
    ----------
    n : int
        Joints (nodes).
    baudrate : int
        Nominal line rate, baud.
    line_rate : float
        Line rate the board clock makes, baud.
    request_bytes, reply_bytes : int
        Frame sizes.
    line_us : float
        Line time of both frames, us.
    turnaround_cycles : int
        Board cycles from the request's last stop bit to the reply's start bit.
    board_us : float
        The turnaround at the board clock, us.
    round_trip_us : float
        ``line_us + board_us``.
    """

    n: int
    baudrate: int
    line_rate: float
    request_bytes: int
    reply_bytes: int
    line_us: float
    turnaround_cycles: int
    board_us: float
    round_trip_us: float

    @property
    def bytes(self):
        """int: bytes on the line per control cycle (both directions)."""
        return self.request_bytes + self.reply_bytes


def link_budget(n, baudrate, clock_hz, turnaround_cycles):
    """Return the :class:`LinkBudget` of one control cycle.

    Parameters
    ----------
    n : int
        Joints.
    baudrate : int
        Nominal line rate, baud.
    clock_hz : float
        Board clock, Hz.
    turnaround_cycles : int
        Board cycles between the request's last stop bit and the reply's start bit.
    """
    from linkdyn.gateware.uart import uart_divisor
    divisor = uart_divisor(clock_hz, baudrate)
    rate = clock_hz / divisor
    request, reply = frame_bytes(n)
    line_us = (request + reply) * 10 / rate * 1e6
    board_us = turnaround_cycles / clock_hz * 1e6
    return LinkBudget(n, baudrate, rate, request, reply, line_us, turnaround_cycles, board_us,
                      line_us + board_us)


def host_cpu_per_cycle(n=6, repeat=2000):
    """Return the host CPU time per control cycle, microseconds: building a STEP request and
    decoding its reply with :mod:`linkdyn.model.protocol` (what :class:`linkdyn.host.Board`
    does), the best of three runs of ``repeat`` cycles."""
    spec = P.ProtocolSpec(n)
    payload = P.step_payload(spec, list(range(n)), list(range(n)), list(range(n)))
    reply = P.encode_reply(1, P.Command.STEP, P.ErrorCode.OK, [7] * spec.step_reply_words)
    decoder = P.ReplyDecoder()
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for k in range(repeat):
            P.encode_request(P.Command.STEP, payload, seq=k & 0xFF)
            decoder.feed(reply)
        best = min(best, (time.perf_counter() - start) / repeat * 1e6)
    return best


def measure_simulated_board(n, chain="fake", sync_states=40, stream_states=400, seed=0):
    """Run a simulated board and measure it.

    Returns
    -------
    dict
        ``turnaround_cycles`` (list, one request at a time), ``latency_cycles`` (the chain's
        LATENCY_CYCLES), ``sync_updates_per_s``, ``stream_updates_per_s``, ``simulator``,
        ``divisor``, ``clock_hz``, ``chain``.
    """
    from linkdyn.host.simulated import open_simulated
    from linkdyn.sim.board import SimulatedBoard
    chain_component = None
    if chain == "fake":
        from linkdyn.gateware.fake_chain import FakeChain
        chain_component = FakeChain(n)
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, (max(sync_states, stream_states), n))
    with SimulatedBoard(n, chain=chain_component, trace=True) as sim, \
            open_simulated(sim) as board:
        if chain != "fake":
            from linkdyn.model import load_robot
            robots = {6: "ur5"}
            if n in robots:
                board.load_robot(load_robot(robots[n]))
        board.rnea(q[0], q[0], q[0])
        skip = len(sim.turnarounds())
        start = time.perf_counter()
        latency = []
        for k in range(sync_states):
            latency.append(int(board.rnea(q[k], q[k], q[k]).latency_cycles))
        sync = sync_states / (time.perf_counter() - start)
        turnarounds = sim.turnarounds()[skip:]
        start = time.perf_counter()
        result = board.rnea(q[:stream_states], q[:stream_states], q[:stream_states],
                            progress=False)
        stream = stream_states / (time.perf_counter() - start)
        assert result.updates == stream_states
        return {"turnaround_cycles": turnarounds, "latency_cycles": latency,
                "sync_updates_per_s": sync, "stream_updates_per_s": stream,
                "simulator": sim.simulator, "divisor": sim.divisor, "clock_hz": sim.clock_hz,
                "chain": chain, "window": board.window()}


def _chain_available():
    try:
        from linkdyn.gateware.chain import LinkDynChain  # noqa: F401
    except ImportError:
        return False
    return True


def report(clock_hz, measured, cpu, *, command="python -m linkdyn.bench.hostlink"):
    """Return the ``## Host link`` Markdown section."""
    lines = [SECTION, "", f"Figures from `{command}` ({datetime.date.today().isoformat()}, "
             f"{platform.machine()}, Python {platform.python_version()}).", ""]
    lines += ["### Bytes and round trip per control cycle", "",
              "One control cycle = one STEP request (`q, qd, qdd` of every joint, no external "
              "wrench) and its reply (`tau` of every joint, then OVERFLOW .. UPDATE_COUNT); 8N1, "
              f"10 bits per byte. Board clock {clock_hz / 1e6:g} MHz; the line rate is the one "
              "the clock makes (divisor `round(clock / baud)`). Turnaround = board cycles from "
              "the request's last stop bit to the reply's start bit: the engine's cycles "
              "measured on the simulated board plus the chain's update.", ""]
    lines += ["| n | baud | bytes (request + reply) | line [us] | engine [cycles] | "
              "chain [cycles] | board [us] | round trip [us] |",
              "|---:|---:|---|---:|---:|---:|---:|---:|"]
    budgets = {}
    for n in NODE_COUNTS:
        m = measured[n]
        engine = m["engine_cycles"]
        chain = m["chain_cycles"]
        for baud in BAUDRATES:
            b = link_budget(n, baud, clock_hz, engine + chain)
            budgets[n, baud] = b
            lines.append(f"| {n} | {b.line_rate / 1e6:.3g} M | {b.bytes} ({b.request_bytes} + "
                         f"{b.reply_bytes}) | {b.line_us:.1f} | {engine} | {chain}"
                         f"{'' if m['chain_measured'] else ' *'} | {b.board_us:.1f} | "
                         f"**{b.round_trip_us:.1f}** |")
    goal = budgets[6, 3_000_000]
    lines.append("")
    if not all(measured[n]["chain_measured"] for n in NODE_COUNTS):
        lines += ["\\* chain cycles estimated from the node microprogram's schedule of a "
                  "sequential update (`joint + n forward + local + n distal`, "
                  "`linkdyn.bench.node`), no mailbox transfer: `LinkDynChain` is not "
                  "measured yet.", ""]
    else:
        lines += ["Chain cycles: LATENCY_CYCLES of `LinkDynChain` (sequential policy, the "
                  "board's default) on the simulated board. The engine's cycles do not depend "
                  "on the clock; the UART's share (the last byte is delivered in the middle of "
                  "its stop bit) changes by less than a bit time with the divisor.", ""]
    met = goal.round_trip_us <= GOAL_US
    lines += [f"**Goal {'met' if met else 'NOT met'}**: a 6-DOF control cycle at 3 Mbaud takes "
              f"{goal.round_trip_us:.1f} us on the board side of the cable (goal <= "
              f"{GOAL_US:g} us), of which {goal.line_us:.1f} us are the line "
              f"({goal.line_us / goal.round_trip_us:.0%}). The host adds its own work (below) "
              "and the serial adapter's latency: a USB adapter delivers received bytes per "
              "USB frame (1 ms full speed, 125 us high speed) or after its latency timer "
              "(FTDI: 16 ms by default, set it to 1 ms), which is larger than the whole "
              "budget; the 500 us need a high-speed adapter or a UART on the host's bus.", ""]
    lines += ["### Host CPU per control cycle", "",
              f"Building the STEP request and decoding its reply (6 joints): {cpu:.1f} us "
              "(`linkdyn.model.protocol`'s `encode_request` and `ReplyDecoder`, the CRC by "
              "`binascii.crc_hqx`).", ""]
    lines += ["### Simulated board", "",
              "`linkdyn.sim.SimulatedBoard`: the board core (UART, FIFOs, protocol engine, "
              "chain) in Verilator through cocotb, its UART bridged to a pseudo-terminal by "
              "the byte-level line driver (`linkdyn.sim.board_bridge`); the host is "
              "`linkdyn.host.Board` with pyserial on the pseudo-terminal. Wall-clock updates "
              "per second:", "",
              "| n | chain | simulator | clock, divisor | one at a time [updates/s] | "
              "streamed [updates/s] (window) | turnaround [cycles] | LATENCY_CYCLES |",
              "|---:|---|---|---|---:|---:|---:|---:|"]
    for n in NODE_COUNTS:
        m = measured[n]
        t = m["turnaround_cycles"]
        lines.append(f"| {n} | {m['chain']} | {m['simulator']} | {m['clock_hz'] / 1e6:g} MHz, "
                     f"{m['divisor']} | {m['sync_updates_per_s']:.0f} | "
                     f"{m['stream_updates_per_s']:.0f} ({m['window']}) | "
                     f"{min(t)} .. {max(t)} (median {statistics.median(t):g}) | "
                     f"{statistics.median(m['latency_cycles']):g} |")
    fake = any(measured[n]["chain"] == "fake" for n in NODE_COUNTS)
    per_cycle = {n: 1e6 / (measured[n]["stream_updates_per_s"] * frame_bytes(n)[0] * 10
                           * measured[n]["divisor"]) for n in NODE_COUNTS}
    lines += ["", "Engine cycles (first table) = median turnaround - median LATENCY_CYCLES"
              + (" (the FakeChain adds 0 to 3 wait states per bus access, pseudo-random, so "
                 "the turnaround varies by a few cycles)" if fake else "")
              + ". One at a time, a round trip costs the simulator both frames' line time "
              "plus the turnaround in board cycles; streamed, the line sets the rate: an update "
              "starts every request frame (`INTERVAL_CYCLES` = request bytes x 10 x divisor), "
              "so the simulator runs "
              + ", ".join(f"{per_cycle[n]:.1f} us (n = {n})" for n in NODE_COUNTS)
              + " of wall-clock time per board cycle (Verilator, with cocotb's callbacks). "
              "The machine was shared with other jobs; repeated runs vary by tens of percent.",
              ""]
    if any(measured[n]["chain"] != "fake" and n != 6 for n in NODE_COUNTS):
        lines += ["For n = 7 no robot is loaded (there is no built-in 7-joint robot): the chain's "
                  "cycles do not depend on the values.", ""]
    return "\n".join(lines)


def main(argv=None):
    """Command line: print the figures; optionally write the docs section."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.hostlink",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--clock-mhz", type=float, default=100.0,
                        help="board clock for the link budget, MHz (default 100)")
    parser.add_argument("--chain", choices=("auto", "fake", "linkdyn"), default="auto",
                        help="chain of the simulated board (auto: LinkDynChain when it exists)")
    parser.add_argument("--stream-states", type=int, default=400)
    parser.add_argument("--sync-states", type=int, default=40)
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Host link' section of this Markdown file")
    args = parser.parse_args(argv)
    chain = args.chain
    if chain == "auto":
        chain = "linkdyn" if _chain_available() else "fake"
    measured = {}
    for n in NODE_COUNTS:
        print(f"simulated board, {n} nodes, {chain} chain (the first build takes a minute) ...",
              file=sys.stderr, flush=True)
        m = measure_simulated_board(n, chain, args.sync_states, args.stream_states)
        chain_measured = chain != "fake"
        latency = statistics.median(m["latency_cycles"])
        m["engine_cycles"] = int(round(statistics.median(m["turnaround_cycles"]) - latency))
        m["chain_cycles"] = int(latency) if chain_measured else chain_cycles_estimate(n)
        m["chain_measured"] = chain_measured
        measured[n] = m
    cpu = host_cpu_per_cycle()
    section = report(args.clock_mhz * 1e6, measured, cpu)
    print(section)
    if args.write_docs:
        replace_section(args.write_docs, section)
        print(f"wrote the '{SECTION}' section of {args.write_docs}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
