"""Run the chain's golden-model cocotb testbench (:mod:`linkdyn.sim.chain_cocotb`) on the
Verilog of a :class:`~linkdyn.gateware.distributed.DistributedChain`.

The distributed chain is exported as module ``linkdyn_chain`` with the chain's ports (``clk``,
``rst``, ``bus__*``, ``busy``, ``overflow_sticky``) and the line controls (``cut``, ``noise``,
left at 0 by the testbench), so the testbench that checks the single-FPGA chain drives it
unchanged: the host cannot tell the two apart through the bus. Used by the tests and by
:mod:`linkdyn.bench.distributed`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from linkdyn.gateware.distributed import DistributedChain
from linkdyn.sim.chain_cases import encode_cases
from linkdyn.sim.runner import run_cocotb, simulator

__all__ = ["TOPLEVEL", "run_distributed"]

TOPLEVEL = "linkdyn_chain"


def run_distributed(n, cases, build_root, *, sim="verilator", tag="golden", **parameters):
    """Run :mod:`linkdyn.sim.chain_cocotb` on ``DistributedChain(n, **parameters)``.

    Parameters
    ----------
    n : int
        Boards (every case's robot has ``n`` joints).
    cases : list of dict
        Cases of :mod:`linkdyn.sim.chain_cases`.
    build_root : path-like
        Folder of the builds: one sub-folder per simulator, ``n`` and parameter set, reused
        while its Verilog is unchanged (a Verilator build of 6 boards takes minutes).
    sim : str
        Simulator (default Verilator).
    tag : str
        Name of the run's summary files in the build folder.
    **parameters
        Of :class:`~linkdyn.gateware.distributed.DistributedChain` (``bits``, ``delay``,
        ``policy`` ...).

    Returns
    -------
    dict
        The testbench's summary (``checked``, per case ``latency_min``, ``latency_max``,
        ``interval_median`` ...), with ``"results"`` and ``"wall_seconds"`` added.

    Raises
    ------
    AssertionError
        If a word differed from the golden model's (the cocotb test failed).
    """
    from amaranth.back import verilog
    sim = simulator(sim)
    key = "-".join(f"{k}{v}" for k, v in sorted(parameters.items()))
    folder = Path(build_root) / f"{sim}-n{n}-{key or 'default'}"
    folder.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    source = folder / f"{TOPLEVEL}.v"
    chain = DistributedChain(n, **parameters)
    text = verilog.convert(chain, name=TOPLEVEL, emit_src=False)
    if not source.is_file() or source.read_text() != text:
        source.write_text(text)
    summary_path = folder / f"{tag}.summary.json"
    results_path = folder / f"{tag}.results.json"
    for path in (summary_path, results_path):
        path.unlink(missing_ok=True)
    run_cocotb(TOPLEVEL, [source], "linkdyn.sim.chain_cocotb", folder, extra_env={
        "LINKDYN_CHAIN_CASES": encode_cases(cases),
        # The pipelined policy: a stream, every update picked with RESULT_SELECT, as many in
        # flight as the chain takes.
        "LINKDYN_CHAIN_POLICY": chain.policy,
        "LINKDYN_CHAIN_BANKS": str(chain.banks),
        "LINKDYN_CHAIN_WINDOW": str(chain.max_in_flight),
        "LINKDYN_CHAIN_SUMMARY": str(summary_path),
        "LINKDYN_CHAIN_RESULTS": str(results_path),
    }, sim=sim, rebuild=False, results_xml=f"{tag}.results.xml")
    summary = json.loads(summary_path.read_text())
    summary["results"] = json.loads(results_path.read_text())["cases"]
    summary["wall_seconds"] = time.monotonic() - start
    return summary
