"""Shared by the chain tests: export the chain's Verilog once per parameter set, run the cocotb
testbench :mod:`linkdyn.sim.chain_cocotb` on it, and read back its summary and results.

Build folders: ``$LINKDYN_BUILD_DIR/sim/chain`` (default ``build/sim/chain`` of the checkout),
one per simulator, node count and policy. The Verilog is exported on every run but only written
when it changed, and a folder's build is reused while its Verilog is unchanged
(:func:`linkdyn.sim.runner.run_cocotb` with ``rebuild=False``), so tests that share a parameter
set (the golden-model run and the Pinocchio run on a 6-node chain) build it once.
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.model.microprogram import BANKS
from linkdyn.sim.chain_cases import encode_cases
from linkdyn.sim.runner import run_cocotb, simulator

from support import LONG, REPOSITORY

__all__ = ["LONG", "STATES", "build_root", "chain_verilog", "run_chain"]


#: Random states per robot: at least 500 in CI, 5,000 in the long run.
STATES = 5000 if LONG else 500

TOPLEVEL = "linkdyn_chain"


def build_root():
    """Return the folder of the chain's simulation builds."""
    if os.environ.get("LINKDYN_BUILD_DIR"):
        return Path(os.environ["LINKDYN_BUILD_DIR"]) / "sim" / "chain"
    return REPOSITORY / "build" / "sim" / "chain"


@functools.lru_cache(maxsize=None)
def _verilog(n, policy):
    from amaranth.back import verilog
    return verilog.convert(LinkDynChain(n, policy=policy), name=TOPLEVEL, emit_src=False)


def chain_verilog(n, policy, folder):
    """Export ``LinkDynChain(n, policy=policy)`` to ``folder/linkdyn_chain.v`` if it changed
    (once per test session); return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{TOPLEVEL}.v"
    text = _verilog(n, policy)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def run_chain(n, policy, cases, *, sim=None, window=4, tag="golden"):
    """Run :mod:`linkdyn.sim.chain_cocotb` on a chain of ``n`` nodes with ``cases``.

    Parameters
    ----------
    n : int
        Node count (every case's robot has ``n`` joints).
    policy : str
        ``"sequential"`` or ``"pipelined"``.
    cases : list of dict
        Cases of :mod:`linkdyn.sim.chain_cases`.
    sim : str, optional
        Simulator (default ``SIM``, else Icarus).
    window : int
        Pipelined policy: updates kept in flight by the driver.
    tag : str
        Name of this run's summary and results files in the build folder.

    Returns
    -------
    dict
        The testbench's summary (``checked``, per-case ``cycles`` ...), with ``"results"`` (the
        tau words per case) and ``"wall_seconds"`` added.
    """
    sim = simulator(sim)
    folder = build_root() / f"{sim}-n{n}-{policy}"
    start = time.monotonic()
    source = chain_verilog(n, policy, folder)
    summary_path = folder / f"{tag}.summary.json"
    results_path = folder / f"{tag}.results.json"
    for path in (summary_path, results_path):
        path.unlink(missing_ok=True)
    run_cocotb(TOPLEVEL, [source], "linkdyn.sim.chain_cocotb", folder, extra_env={
        "LINKDYN_CHAIN_CASES": encode_cases(cases),
        "LINKDYN_CHAIN_POLICY": policy,
        "LINKDYN_CHAIN_BANKS": str(BANKS if policy == "pipelined" else 1),
        "LINKDYN_CHAIN_WINDOW": str(window),
        "LINKDYN_CHAIN_SUMMARY": str(summary_path),
        "LINKDYN_CHAIN_RESULTS": str(results_path),
    }, sim=sim, rebuild=False, results_xml=f"{tag}.results.xml")
    summary = json.loads(summary_path.read_text())
    summary["results"] = json.loads(results_path.read_text())["cases"]
    summary["wall_seconds"] = time.monotonic() - start
    return summary
