"""Build a board: bitstream (open flow) or synthesis report and ISE build tree (Spartan-6).

Run as ``python -m linkdyn.boards.build --board ulx3s --nodes 6 [--clock-mhz 50]
[--out build/ulx3s] [--chain linkdyn|fake] [--policy sequential|pipelined [--banks 2|4]]
[--controllers [--local-loop]] [--router router1|router2] [--floorplan] [--robot NAME|PATH |
--parents LIST]
[--synth-only]``; ``--list`` prints the boards.

``--robot`` builds the tree of nodes of a robot (a built-in name, a robot file or a URDF; a
branched one gives its whole tree, docs/trees.md): its node topology
(:func:`linkdyn.model.golden_tree.node_tree`, mount nodes included) sets the node count and the
parents of ``LinkDynChain(n, parents=...)``. ``--parents=-1,0,1,0,3`` gives the node topology
directly. A chain robot builds the chain, as before.

``--distributed --role base|middle|last [--boards N]`` (``make bitstream BOARD=ulx3s
DISTRIBUTED=1``) builds one actuator board of the distributed mode instead
(:class:`~linkdyn.boards.actuator_board.ActuatorBoardTop`: one node, its neighbour links on
header pins, the UART on the base board, 50 MHz core clock for 100 Mbit/s links); the base
board needs ``--boards`` (default 6), its report has the chain's update cycles from a
simulation of ``DistributedChain(N)``. ``--policy pipelined`` (``POLICY=pipelined``) builds the
board for the pipelined policy over the links (every board of a chain needs the same policy);
it has no joint controllers. ``--controllers`` (``CONTROLLERS=1``) builds the board with its
joint controller beside the node (``ActuatorBoardTop(..., controllers=True)``; on the base
board the control step's front end and sequencer); every board of a chain needs it; its joint
port on the board's joint 0 pins (as below). A Spartan-6 board with its controller may not
fit an XC6SLX9: the build says so first and reports Yosys's utilisation (``fits``).

``--controllers`` builds a joint controller beside every node (paper Fig. 7;
:class:`~linkdyn.gateware.controlled_chain.ControlledChain`, ``BoardTop(..., controllers=True)``;
the sequential LinkDyn chain only). Every joint's controller talks to its drive through a
joint port (an SPI link, :mod:`linkdyn.boards.joint_pins`, docs/controller.md, "Joint port")
on the board's header pins (ULX3S: 6, Mimas and SK-XC6SLX9: 2; a build with more joints is
refused); the Atlys has none (the sensor inputs read 0). The report's ``joint_pins`` names
them. ``--local-loop`` (with
``--controllers``; ``make bitstream CONTROLLERS=1 LOCAL_LOOP=1``) builds the controlled chain
with the local loop (``ControlledChain(..., local_loop=True)``: LOCAL_MULTIPLE, INFO CONTROLLERS
bit 1; docs/controller.md, "The local loop in gateware").

``--banks 2|4`` (``make bitstream POLICY=pipelined BANKS=2``; only with ``--policy pipelined``,
on one FPGA or ``--distributed``) sets the pipelined chain's register banks (default 4,
:data:`linkdyn.model.microprogram.BANKS`): ``LinkDynChain(n, policy="pipelined", banks=...)``,
``ActuatorBoardTop(..., policy="pipelined", banks=...)`` (every board of a chain needs the same
count). Two banks keep up to 4 updates in flight instead of 8 and take fewer LUTs: the
pipelined Mimas middle board fits its XC6SLX9 with 2 banks, not with 4 (docs/performance.md,
"Distributed boards"). The build info's BANKS, the report's ``banks`` and ``Board.info().banks``
say the count.

- ECP5 (``ulx3s``): Amaranth writes the Trellis build tree into ``--out`` and its script runs
  Yosys, nextpnr-ecp5 and ecppack (the YoWASP packages unless ``YOSYS``, ``NEXTPNR_ECP5``,
  ``ECPPACK`` name others) into ``top.bit``; Fmax and utilisation come from nextpnr's report
  (``top.nextpnr.json``). ``--synth-only`` stops after a Yosys ``synth_ecp5``.
  ``--floorplan`` (ECP5) runs the script's commands one by one and, between Yosys and
  nextpnr, pins each node's and its controller's multipliers and block RAMs to one region of
  the chip per node, in the chain's order (:mod:`linkdyn.boards.floorplan`; nextpnr reads
  ``top.floorplan.json``, the assignment is in ``floorplan.json``).
- Spartan-6 (``atlys``, ``mimas``, ``sk_xc6slx9``): Yosys ``synth_xilinx -family xc6s`` gives
  the utilisation, always; Amaranth writes the ISE build tree (``build_top.sh``, ``top.v``,
  ``top.ucf``, ``top.xst``, ``top.prj``); if ISE 14.7 is on the PATH (``xst``, ``ngdbuild``,
  ``map``, ``par``, ``bitgen``) the script runs and ``top.bit`` is made (timing from ``trce`` if
  present), else the build says that place and route needs ISE and exits with status 3.

Every build writes ``report.json`` (fields: :data:`REPORT_FIELDS`) and ``report.txt`` into
``--out``. The update latency and interval come from a simulation of the build's chain (its
LATENCY_CYCLES / INTERVAL_CYCLES counters); for the stand-in chain (``--chain fake``) they
come from the microprogram's schedule instead, and ``cycles_source`` says so.

Exit status:

====  ===================================================================================
0     done: bitstream written and timing met, or ``--synth-only`` synthesis done
1     a tool failed (its log is named), or the build could not be written
2     bad arguments (unknown board, node count out of range, clock the board cannot make)
3     Spartan-6 without ISE: synthesis report and ISE build tree written, no bitstream
4     bitstream written but timing not met (Fmax below the clock; see ``report.txt``)
5     synthesis done but the design does not fit the device (more LUTs, FFs, DSPs or block
      RAMs than it has)
130   interrupted (Ctrl-C): the build directory is incomplete
====  ===================================================================================

Through ``make bitstream`` a non-zero status is reported by make as its own status 2 (make
prints ``Error N`` with the build's status).
"""

import argparse
import datetime
import json
import math
import os
import platform as host_platform
import re
import subprocess
import sys
import time
from pathlib import Path

from linkdyn.model.microprogram import BANK_COUNTS

from . import BOARDS, board
from .common import (
    CHAINS, DEFAULT_CHAIN, chain_name, chain_parents, chain_policy, check_chain,
    has_controllers, make_chain,
)
from .cycles import schedule_update_cycles, simulate_update_cycles
from .toolchain import (
    DEVICE_CAPACITY, ToolError, find_tool, nextpnr_report, tool_env, tool_variable,
    tool_version, yosys_utilisation,
)

__all__ = ["build", "BuildError", "REPORT_FIELDS", "EXIT_OK", "EXIT_TOOL_FAILED", "EXIT_USAGE",
           "EXIT_NEEDS_ISE", "EXIT_TIMING", "EXIT_DOES_NOT_FIT", "main"]

EXIT_OK = 0
EXIT_TOOL_FAILED = 1
EXIT_USAGE = 2
EXIT_NEEDS_ISE = 3
EXIT_TIMING = 4
EXIT_DOES_NOT_FIT = 5

#: Fields every ``report.json`` holds.
REPORT_FIELDS = (
    "board", "title", "device", "part", "family", "nodes", "chain", "policy", "banks",
    "controllers",
    "local_loop", "clock_mhz", "baudrate",
    "luts", "ffs", "dsps", "brams", "capacity", "utilisation_percent", "fits",
    "utilisation_source", "fmax_mhz", "timing_met", "clocks", "update_latency_cycles",
    "update_interval_cycles", "cycles_source", "status", "exit_status", "message",
    "bitstream", "build_seconds", "tools", "command", "date",
)

ISE_TOOLS = ("xst", "ngdbuild", "map", "par", "bitgen")
ECP5_TOOLS = ("yosys", "nextpnr-ecp5", "ecppack")


class BuildError(Exception):
    """A build step failed; ``exit_status`` is the documented status, ``report`` what was
    written (may be None)."""

    def __init__(self, message, exit_status=EXIT_TOOL_FAILED, report=None):
        super().__init__(message)
        self.exit_status = exit_status
        self.report = report


def _run_script(out, env, log_name):
    """Run Amaranth's ``build_top.sh`` in ``out``; its output goes to ``log_name``."""
    with open(out / log_name, "w") as log:
        process = subprocess.run(["sh", "build_top.sh"], cwd=out, env=env, stdout=log,
                                 stderr=subprocess.STDOUT)
    if process.returncode != 0:
        tail = "".join((out / log_name).read_text().splitlines(keepends=True)[-30:])
        raise ToolError(f"the build script failed (status {process.returncode}); see "
                        f"{out / log_name}:\n{tail}")


def _run_floorplanned(out, env, log_name, nodes, progress):
    """Run the commands of Amaranth's ``build_top.json`` in ``out`` one by one; nextpnr reads
    ``top.floorplan.json``, Yosys's ``top.json`` with the nodes' hard cells pinned
    (:func:`linkdyn.boards.floorplan.apply_floorplan`); output goes to ``log_name``."""
    from .floorplan import FloorplanError, apply_floorplan
    commands = json.loads((out / "build_top.json").read_text())["commands"]
    with open(out / log_name, "w") as log:
        for command in commands:
            tool = env.get(tool_variable(command[0]), command[0])
            if command[0].startswith("nextpnr"):
                index = command.index("--json") + 1
                source = command[index]
                command = [*command[:index], "top.floorplan.json", *command[index + 1:]]
                try:
                    result = apply_floorplan(out / source, nodes=nodes,
                                             output_path=out / "top.floorplan.json",
                                             report_path=out / "floorplan.json")
                except FloorplanError as error:
                    raise ToolError(f"the floorplan failed: {error}") from None
                progress(f"floorplan: {len(result['pinned'])} multipliers and block RAMs "
                         f"pinned in {result['nodes']} regions, {len(result['unpinned'])} "
                         f"left to the placer ({out / 'floorplan.json'})")
            log.flush()
            process = subprocess.run([tool, *command[1:]], cwd=out, env=env, stdout=log,
                                     stderr=subprocess.STDOUT)
            if process.returncode != 0:
                log.close()
                tail = "".join((out / log_name).read_text().splitlines(keepends=True)[-30:])
                raise ToolError(f"{command[0]} failed (status {process.returncode}); see "
                                f"{out / log_name}:\n{tail}")


def _is_chain(parents):
    return tuple(parents) == tuple(range(-1, len(parents) - 1))


def _cycles(chain, nodes, fmt, cordic_step_cycles=2):
    kind = chain_name(chain)
    if kind == "linkdyn":
        policy = chain_policy(chain)
        parents = chain_parents(chain)
        figures = simulate_update_cycles(make_chain(
            "linkdyn", nodes, fmt, policy, cordic_step_cycles,
            parents=None if _is_chain(parents) else parents,
            banks=chain.banks if policy == "pipelined" else None))
        figures.pop("update_count", None)
        banked = f", {chain.banks} banks" if policy == "pipelined" else ""
        return figures, (f"simulation of this build's chain (LinkDynChain, {policy} policy"
                         f"{banked}, "
                         "zero state, Amaranth simulator): LATENCY_CYCLES of one update alone, "
                         "INTERVAL_CYCLES of back-to-back starts over its register bus, no inputs written "
                         "between them")
    figures = schedule_update_cycles(nodes, fmt)
    return figures, (f"model schedule, NOT a simulation: the build's chain is the stand-in "
                     f"{type(chain).__name__}; figures are build_microprogram().segments for a "
                     "sequential update (joint + n forward + local + n distal), no mailbox "
                     "handover")


def _build_banks(top):
    """Return the register banks of a board top's chain, as its build info's BANKS says them:
    1 for the sequential policy (and the stand-in chain), 2 or 4 for the pipelined one."""
    if hasattr(top, "distributed_report"):         # an actuator board: its node's banks
        return top.banks
    return top.core.hostlink.engine.spec.banks


def _trce_fmax(out):
    """Run ISE's ``trce`` on the routed design if present; return Fmax in MHz or None."""
    trce = find_tool("trce")
    if trce is None or not (out / "top_par.ncd").exists():
        return None
    subprocess.run([*trce, "-v", "3", "-o", "top.twr", "top_par.ncd", "top.pcf"], cwd=out,
                   capture_output=True)
    twr = out / "top.twr"
    if not twr.exists():
        return None
    match = re.search(r"Maximum frequency:\s*([0-9.]+)\s*MHz", twr.read_text(errors="replace"))
    return float(match.group(1)) if match else None


def build(top, *, out=None, synth_only=False, seed=1, router=None, robot=None, floorplan=False,
          progress=print):
    """Build a board and write ``report.json`` and ``report.txt``.

    Parameters
    ----------
    top : BoardTop
        The board top-level, e.g. ``BOARDS["ulx3s"](6)`` (its nodes, clock and chain).
    out : path-like, optional
        Build directory (default ``build/<board>``).
    synth_only : bool
        Stop after Yosys synthesis (no place and route, no bitstream).
    seed : int
        nextpnr placement seed.
    router : str, optional
        nextpnr router (``"router1"``, ``"router2"``; default nextpnr's own, router1 on ECP5).
    robot : str, optional
        The robot whose tree of nodes ``top`` was built for (recorded in the report).
    floorplan : bool
        ECP5 place and route: pin each node's multipliers and block RAMs to its region
        (:mod:`linkdyn.boards.floorplan`) between Yosys and nextpnr.
    progress : callable
        Called with one line of text per step.

    Returns
    -------
    dict
        The report (also in ``out/report.json``); ``report["exit_status"]`` is the status
        of the module's table (0, 3 or 4 here).

    Raises
    ------
    BuildError
        If a tool is missing or fails (``exit_status`` 1).
    """
    started = time.monotonic()
    top_class, name, nodes = type(top), top.name, top.nodes
    out = Path(out if out is not None else Path("build") / name)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("report.json", "report.txt", "top.bit"):
        (out / stale).unlink(missing_ok=True)
    phases = {}

    def phase(label, since):
        phases[label] = round(time.monotonic() - since, 1)

    controllers = has_controllers(top.core.chain)
    local_loop = bool(getattr(top.core, "local_loop", False))
    parents = chain_parents(top.core.chain)
    tree = not _is_chain(parents)
    progress(f"{top.title} ({top.device}): {nodes} node(s)"
             f"{' in a tree (parents ' + ','.join(map(str, parents)) + ')' if tree else ''}"
             f"{' + joint controllers' if controllers else ''}"
             f"{' with the local loop' if local_loop else ''}, {top.clock_hz / 1e6:g} MHz, "
             f"chain {chain_name(top.core.chain)}, UART {top.core.baudrate:,} baud; "
             f"build directory {out}")

    t = time.monotonic()
    platform = top.platform()
    overrides = {}
    if top.family == "ecp5":
        overrides["nextpnr_opts"] = ["--report", "top.nextpnr.json", "--timing-allow-fail",
                                     "--seed", str(seed)] + (["--router", router] if router
                                                             else [])
    plan = platform.prepare(top, name="top", **overrides)
    plan.extract(out)
    phase("elaborate", t)
    progress(f"build tree written ({', '.join(sorted(plan.files))})")

    t = time.monotonic()
    if hasattr(top, "update_cycles"):
        progress("update cycles: simulation of the distributed chain ...")
        cycles, cycles_source = top.update_cycles()
    else:
        cycles, cycles_source = _cycles(top.core.chain, nodes, top.core.fmt,
                                        top.cordic_step_cycles)
    if controllers:
        cycles_source += ("; the controlled chain's update is this chain's (a control step "
                          "adds the controllers' segments and the sequencer's accesses: "
                          "docs/performance.md, \"Controlled chain\")")
    phase("cycles", t)
    progress(f"update latency {cycles['update_latency_cycles']} cycles, interval "
             f"{cycles['update_interval_cycles']} cycles ({cycles_source.split(':')[0]})")
    distributed = getattr(top, "distributed_report", None)

    report = {
        "board": name, "title": top.title, "device": top.device,
        "part": f"{top.device}-{platform.speed}{platform.package}", "family": top.family,
        "nodes": nodes, "chain": chain_name(top.core.chain),
        "policy": chain_policy(top.core.chain) or (distributed or {}).get("policy"),
        "banks": _build_banks(top),
        "controllers": controllers,
        "local_loop": local_loop,
        "parents": list(parents), "robot": robot,
        "clock_mhz": top.clock_hz / 1e6, "baudrate": top.core.baudrate, "uart": top.uart_note,
        **cycles, "cycles_source": cycles_source,
        "fmax_mhz": None, "timing_met": None, "clocks": {}, "bitstream": None,
        "ise_build_tree": None, "floorplan": bool(floorplan),
        **({"distributed": distributed} if distributed else {}),
    }
    joint_pins = getattr(top, "joint_pins_report", None)
    if joint_pins:
        report["joint_pins"] = joint_pins
    status, exit_status, message = "synthesis-only", EXIT_OK, ""
    tools = {"yosys": tool_version("yosys")}
    try:
        t = time.monotonic()
        if top.family == "ecp5" and synth_only:
            progress("synthesis: yosys synth_ecp5 (no place and route: --synth-only)")
            utilisation = yosys_utilisation("ecp5", "top.il", out)
            source = "yosys synth_ecp5 (before packing; LUT4 + 2 per CCU2C)"
            phase("synthesis", t)
        elif top.family == "ecp5":
            progress("yosys + nextpnr-ecp5 + ecppack (this takes minutes) ...")
            if floorplan:
                _run_floorplanned(out, tool_env(ECP5_TOOLS), "build.log", nodes, progress)
            else:
                _run_script(out, tool_env(ECP5_TOOLS), "build.log")
            phase("yosys_nextpnr_ecppack", t)
            pnr = nextpnr_report(out / "top.nextpnr.json")
            utilisation = pnr["utilisation"]
            source = ("nextpnr-ecp5 (placed and routed: TRELLIS_COMB, TRELLIS_FF, MULT18X18D, "
                      "DP16KD)")
            report["clocks"] = {net: {"fmax_mhz": round(v["achieved"], 2),
                                      "constraint_mhz": round(v["constraint"], 2)}
                                for net, v in pnr["fmax"].items()}
            if report["clocks"]:
                report["fmax_mhz"] = min(c["fmax_mhz"] for c in report["clocks"].values())
                report["timing_met"] = all(c["fmax_mhz"] >= c["constraint_mhz"]
                                           for c in report["clocks"].values())
            report["bitstream"] = str(out / "top.bit")
            tools["nextpnr-ecp5"] = tool_version("nextpnr-ecp5")
            status = "bitstream"
            if report["timing_met"] is False:
                status, exit_status = "timing-failed", EXIT_TIMING
                message = (f"timing NOT met: Fmax {report['fmax_mhz']} MHz < "
                           f"{top.clock_hz / 1e6:g} MHz; the bitstream is written but may "
                           "misbehave; build with a lower --clock-mhz")
        else:
            progress("synthesis: yosys synth_xilinx -family xc6s ...")
            utilisation = yosys_utilisation("xc6s", "top.v", out)
            source = "yosys synth_xilinx -family xc6s -flatten (before ISE map)"
            phase("synthesis", t)
            report["ise_build_tree"] = str(out / "build_top.sh")
            missing = [tool for tool in ISE_TOOLS if find_tool(tool) is None]
            if synth_only:
                message = "synthesis only (--synth-only); ISE build tree written"
            elif missing:
                status, exit_status = "needs-ise", EXIT_NEEDS_ISE
                message = (f"place and route and bitgen need Xilinx ISE 14.7 ({', '.join(missing)} "
                           f"not on the PATH); the ISE build tree is in {out}: run "
                           f"'sh build_top.sh' there on a machine with ISE (settings64.sh "
                           f"sourced, or AMARANTH_ENV_ISE naming it). Synthesis report written.")
            else:
                t = time.monotonic()
                progress("ISE: xst, ngdbuild, map, par, bitgen ...")
                _run_script(out, dict(os.environ), "build.log")
                phase("ise", t)
                report["bitstream"] = str(out / "top.bit")
                report["fmax_mhz"] = _trce_fmax(out)
                if report["fmax_mhz"] is not None:
                    report["timing_met"] = report["fmax_mhz"] >= top.clock_hz / 1e6
                status = "bitstream"
                if report["timing_met"] is False:
                    status, exit_status = "timing-failed", EXIT_TIMING
                    message = (f"timing NOT met: Fmax {report['fmax_mhz']} MHz < "
                               f"{top.clock_hz / 1e6:g} MHz")
    except ToolError as error:
        raise BuildError(str(error), EXIT_TOOL_FAILED) from error

    capacity = DEVICE_CAPACITY[top.device]
    utilisation = {key: utilisation[key] for key in ("luts", "ffs", "dsps", "brams")}
    report.update(utilisation)
    report["capacity"] = capacity
    report["utilisation_percent"] = {key: round(100 * utilisation[key] / capacity[key], 1)
                                     for key in capacity}
    report["fits"] = all(utilisation[key] <= capacity[key] for key in capacity)
    report["utilisation_source"] = source
    if not report["fits"]:
        over = ", ".join(f"{key} {utilisation[key]:g} > {capacity[key]}" for key in capacity
                         if utilisation[key] > capacity[key])
        message = (message + "; " if message else "") + f"the design does NOT fit ({over})"
        if exit_status == EXIT_OK:
            exit_status = EXIT_DOES_NOT_FIT
    report.update({
        "status": status, "exit_status": exit_status, "message": message,
        "phases_seconds": phases, "build_seconds": round(time.monotonic() - started, 1),
        "tools": tools,
        "command": "python -m linkdyn.boards.build " + " ".join(
            [f"--board {name}"]
            + ([f"--distributed --role {distributed['role']}"]
               + ([f"--boards {distributed['boards']}"] if distributed["boards"] else [])
               if distributed else [f"--nodes {nodes}"])
            + [f"--clock-mhz {top.clock_hz / 1e6:g}"]
            + ([f"--chain {report['chain']}"] if not distributed else [])
            + ([f"--policy {report['policy']}"] if report["policy"] else [])
            + ([f"--banks {report['banks']}"] if report["policy"] == "pipelined" else [])
            + (["--controllers"] if controllers else [])
            + (["--local-loop"] if local_loop else [])
            + ([f"--robot {robot}"] if robot else [])
            + ([f"--parents={','.join(map(str, parents))}"] if tree and not robot else [])
            + ([f"--router {router}"] if router else [])
            + (["--floorplan"] if floorplan else [])
            + ([f"--seed {seed}"] if not synth_only else [])
            + [f"--out {out}"] + (["--synth-only"] if synth_only else [])),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": f"{host_platform.machine()}, {os.cpu_count()} CPU(s)",
    })
    missing_fields = [field for field in REPORT_FIELDS if field not in report]
    assert not missing_fields, missing_fields
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.txt").write_text(report_text(report))
    progress(f"report: {out / 'report.json'}, {out / 'report.txt'}")
    return report


def report_text(report):
    """Return the human-readable ``report.txt`` for a report dict."""
    r = report
    capacity = r["capacity"]
    phases = ", ".join(f"{step} {seconds:g} s" for step, seconds in r["phases_seconds"].items())
    fmax = "n/a (no place and route)" if r["fmax_mhz"] is None else f"{r['fmax_mhz']:.2f} MHz"
    lines = [
        f"LinkDyn board build: {r['title']} ({r['part']})",
        "",
        f"nodes            {r['nodes']} (chain: {r['chain']}"
        + (", STAND-IN without inverse dynamics" if r["chain"] == "fake" else "")
        + (f", {r['policy']} policy" if r.get("policy") else "")
        + (f", {r['banks']} register banks" if r.get("policy") == "pipelined"
           and r.get("banks") else "")
        + (", a joint controller beside every node" if r.get("controllers") else "")
        + (", the local loop" if r.get("local_loop") else "") + ")",
    ]
    if r.get("joint_pins"):
        lines.append(f"joint pins       {r['joint_pins']}")
    parents = r.get("parents")
    if parents and not _is_chain(parents):
        lines.append(f"tree of nodes    parents {','.join(map(str, parents))}"
                     + (f" (robot {r['robot']})" if r.get("robot") else ""))
    lines += [
        f"clock            {r['clock_mhz']:g} MHz; UART {r['baudrate']:,} baud ({r['uart']})",
        f"Fmax             {fmax}"
        + ("" if r["timing_met"] is None else
           f" -> timing {'met' if r['timing_met'] else 'NOT MET'}"),
    ]
    for net, clock in r["clocks"].items():
        lines.append(f"                 {net}: {clock['fmax_mhz']:.2f} MHz "
                     f"(constraint {clock['constraint_mhz']:g} MHz)")
    if r.get("floorplan"):
        lines.append("floorplan        each node's multipliers and block RAMs pinned to its "
                     "region (floorplan.json)")
    lines += ["", f"utilisation ({r['utilisation_source']}):"]
    for key, label in (("luts", "LUTs"), ("ffs", "flip-flops"), ("dsps", "DSP blocks"),
                       ("brams", "block RAMs (18 Kb)")):
        lines.append(f"  {label:<20} {r[key]:>8g} / {capacity[key]:>6} "
                     f"({r['utilisation_percent'][key]:.1f} %)")
    lines.append(f"  fits the device:     {'yes' if r['fits'] else 'NO'}")
    if r.get("distributed"):
        d = r["distributed"]
        lines += ["", f"distributed      {d['role']} board"
                  + (f" of {d['boards']}" if d["boards"] else "")
                  + f"; links {d['link_mbit_s']:g} Mbit/s per direction on {d['link_pins']}"]
        if d.get("controller"):
            lines.append(f"                 joint controller on the board; joint pins: "
                         f"{d['joint_pins']}")
    latency = r["update_latency_cycles"]
    interval = r["update_interval_cycles"]
    lines += [
        "",
        f"update latency   " + (f"{latency} cycles = {latency / r['clock_mhz']:.2f} us at "
                                f"{r['clock_mhz']:g} MHz" if latency is not None else "n/a"),
        f"update interval  " + (f"{interval} cycles" if interval is not None else "n/a"),
        f"                 source: {r['cycles_source']}",
        "",
        f"status           {r['status']} (exit status {r['exit_status']})",
    ]
    if r["message"]:
        lines.append(f"                 {r['message']}")
    if r["bitstream"]:
        lines.append(f"bitstream        {r['bitstream']}")
    if r.get("ise_build_tree"):
        lines.append(f"ISE build tree   {r['ise_build_tree']}")
    lines += [
        f"build time       {r['build_seconds']:g} s ({phases}); {r['host']}",
        f"tools            " + "; ".join(f"{k}: {v}" for k, v in r["tools"].items()),
        f"command          {r['command']}",
        f"date             {r['date']}",
        "",
    ]
    return "\n".join(lines)


def board_table():
    """Return the registry as a text table (``--list``)."""
    lines = [f"{'board':<11} {'title':<15} {'device':<10} {'nodes':>5} {'max':>4} "
             f"{'clock':>8}  UART"]
    for name, top in BOARDS.items():
        lines.append(f"{name:<11} {top.title:<15} {top.platform_class.device:<10} "
                     f"{top.default_nodes:>5} {top.max_nodes:>4} "
                     f"{top.default_clock_hz / 1e6:>5g} MHz  {top.uart_note}")
    return "\n".join(lines)


def _topology(robot, parents):
    """Return the node parents of ``--robot`` or ``--parents``, or raise ValueError."""
    if parents is not None:
        try:
            values = tuple(int(p) for p in parents.split(","))
        except ValueError:
            raise ValueError(f"--parents must be comma-separated integers, not {parents!r}") \
                from None
        for node, parent in enumerate(values):
            if not -1 <= parent < node:
                raise ValueError(f"--parents: node {node}'s parent must be -1 or a node before "
                                 f"it, not {parent}")
        return values
    from linkdyn.model.golden_tree import node_tree
    from linkdyn.model.library import load_robot
    from linkdyn.model.robot import RobotDescriptionError
    try:
        loaded = load_robot(robot)
        return tuple(node_tree(loaded).parents)
    except (RobotDescriptionError, FileNotFoundError, NotImplementedError) as error:
        raise ValueError(f"--robot {robot}: {error}") from None


def main(argv=None):
    """Command line; returns the exit status of the module's table."""
    parser = argparse.ArgumentParser(
        prog="python -m linkdyn.boards.build", description=__doc__.splitlines()[0],
        epilog="Exit status: 0 done, 1 tool failed, 2 bad arguments, 3 Spartan-6 without ISE "
               "(synthesis report written), 4 timing not met, 5 does not fit the device, 130 "
               "interrupted.")
    parser.add_argument("--board", default="ulx3s", choices=list(BOARDS),
                        help="board (default ulx3s)")
    parser.add_argument("--nodes", type=int, help="number of nodes (default: the board's)")
    parser.add_argument("--clock-mhz", type=float, help="core clock in MHz (default: the "
                        "board's; ULX3S through its PLL, Spartan-6 through PLL_BASE)")
    parser.add_argument("--out", help="build directory (default build/<board>)")
    parser.add_argument("--chain", choices=CHAINS, default=None,
                        help=f"chain of nodes: linkdyn (the LinkDyn chain) or fake (the "
                             f"register-bus stand-in, no inverse dynamics); default "
                             f"{DEFAULT_CHAIN}")
    parser.add_argument("--policy", choices=("sequential", "pipelined"), default=None,
                        help="update policy of the LinkDyn chain (default sequential)")
    parser.add_argument("--banks", type=int, choices=BANK_COUNTS[1:], default=None,
                        help="with --policy pipelined (one FPGA or --distributed): the "
                             "chain's register banks (default 4; 2 takes fewer LUTs, up to 4 "
                             "updates in flight instead of 8)")
    parser.add_argument("--controllers", action="store_true",
                        help="a joint controller beside every node (paper Fig. 7; the "
                             "sequential LinkDyn chain only)")
    parser.add_argument("--local-loop", action="store_true",
                        help="with --controllers: the controlled chain with the local loop "
                             "(local updates between chain updates, LOCAL_MULTIPLE)")
    parser.add_argument("--synth-only", action="store_true",
                        help="Yosys synthesis only: no place and route, no bitstream")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr seed (default 1)")
    parser.add_argument("--router", choices=("router1", "router2"),
                        help="nextpnr router (default nextpnr's, router1 on ECP5; router2 "
                             "routes a large design faster)")
    parser.add_argument("--floorplan", action="store_true",
                        help="ECP5: pin each node's and its controller's multipliers and block "
                             "RAMs to one region of the chip per node, in the chain's order "
                             "(linkdyn.boards.floorplan)")
    topology = parser.add_mutually_exclusive_group()
    topology.add_argument("--robot", help="build the tree of nodes of this robot (built-in "
                          "name, robot file or URDF; node count and parents from its "
                          "topology, mount nodes included)")
    topology.add_argument("--parents", help="the parent node of every node, comma-separated "
                          "(-1 a root), e.g. --parents=-1,0,1,0,3: a tree of nodes")
    parser.add_argument("--distributed", action="store_true",
                        help="build one actuator board of the distributed mode (one node, "
                             "neighbour links on header pins; ulx3s, mimas, sk_xc6slx9)")
    parser.add_argument("--role", choices=("base", "middle", "last"), default=None,
                        help="with --distributed: the board's place in the chain (default "
                             "base: the UART, no upstream link)")
    parser.add_argument("--boards", type=int, default=None,
                        help="with --distributed --role base: the number of boards (default 6)")
    parser.add_argument("--list", action="store_true", help="list the boards and exit")
    args = parser.parse_args(argv)
    if args.list:
        print(board_table())
        return EXIT_OK
    clock_hz = None
    if args.clock_mhz is not None:
        if not math.isfinite(args.clock_mhz) or args.clock_mhz <= 0:
            parser.error(f"--clock-mhz must be positive and finite, not {args.clock_mhz:g}")
        clock_hz = round(args.clock_mhz * 1e6)
        if clock_hz <= 0:
            parser.error(f"--clock-mhz {args.clock_mhz:g} is below 1 Hz")
    if args.out is not None:
        out = Path(args.out)
        if not args.out.strip():
            parser.error("--out must name a build directory, not an empty string")
        if out.exists() and not out.is_dir():
            parser.error(f"--out {args.out} is a file, not a directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            parser.error(f"cannot create the build directory {args.out}: "
                         f"{error.strerror or error}")
    top_class = board(args.board)
    parents = None
    if args.banks is not None and args.policy != "pipelined":
        parser.error("--banks needs --policy pipelined (the sequential policy has one "
                     "register bank)")
    if args.floorplan and (top_class.family != "ecp5" or args.synth_only or args.distributed):
        parser.error("--floorplan pins cells for nextpnr-ecp5: it needs an ECP5 board "
                     "(ulx3s) with place and route (not --synth-only) of one FPGA's chain "
                     "(not --distributed)")
    if args.distributed:
        if args.robot is not None or args.parents is not None:
            parser.error("--distributed builds one board of a chain; --robot and --parents "
                         "(a tree of nodes) do not combine with it")
        return _main_distributed(parser, args, clock_hz)
    if args.boards is not None:
        parser.error("--boards needs --distributed")
    if args.role is not None:
        parser.error("--role needs --distributed")
    try:
        if args.robot is not None or args.parents is not None:
            parents = _topology(args.robot, args.parents)
            if args.nodes is not None and args.nodes != len(parents):
                raise ValueError(f"--nodes {args.nodes} does not match the topology's "
                                 f"{len(parents)} nodes")
            args.nodes = len(parents)
            if _is_chain(parents):
                parents = None
            elif args.controllers:
                raise ValueError("--controllers builds the chain only, not a tree of nodes")
        top_class.check_arguments(args.nodes, clock_hz)
        chain, policy = check_chain(args.chain, args.policy)
        if args.local_loop and not args.controllers:
            raise ValueError("--local-loop is built with the joint controllers: give "
                             "--controllers as well")
        if args.controllers and chain != "linkdyn":
            raise ValueError(f"--controllers needs the LinkDyn chain, not --chain {chain}")
        if args.controllers and policy != "sequential":
            raise ValueError(f"--controllers needs the sequential policy, not --policy {policy}")
        top = top_class(args.nodes, clock_hz=clock_hz, chain=chain, policy=policy,
                        controllers=args.controllers, parents=parents,
                        local_loop=args.local_loop, banks=args.banks)
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    return _run(top, args.out or Path("build") / top.name, synth_only=args.synth_only,
                seed=args.seed, router=args.router, robot=args.robot,
                floorplan=args.floorplan)


def _run(top, out, **options):
    """Build ``top`` into ``out``, print its report; return the exit status."""
    try:
        report = build(top, out=out, **options)
    except KeyboardInterrupt:
        print(f"\ninterrupted: the build directory {out} is incomplete (no report, no "
              f"bitstream); run the build again", file=sys.stderr)
        return 130
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_status
    print()
    print(report_text(report), end="")
    if report["message"]:
        print(("warning: " if report["exit_status"] else "") + report["message"],
              file=sys.stderr)
    return report["exit_status"]


def _main_distributed(parser, args, clock_hz):
    from .actuator_board import ACTUATOR_BOARDS, DEFAULT_LINK_CLOCK_HZ, ActuatorBoardTop
    if args.board not in ACTUATOR_BOARDS:
        parser.error(f"--distributed builds {', '.join(ACTUATOR_BOARDS)}, not --board "
                     f"{args.board}")
    if args.local_loop:
        parser.error("--distributed builds no local loop (it is built with --controllers on "
                     "one FPGA)")
    if args.nodes not in (None, 1) or args.chain not in (None, "linkdyn"):
        parser.error("--distributed builds one LinkDyn node per board (no --nodes, --chain)")
    if args.controllers and args.policy == "pipelined":
        parser.error("--distributed --controllers runs the sequential policy only (one update "
                     "per control step): the pipelined policy has no joint controllers")
    boards = args.boards
    if args.role is None:
        args.role = "base"
    if args.role == "base":
        boards = 6 if boards is None else boards
    elif boards is not None:
        parser.error(f"--boards is the base board's; a {args.role} board works in any chain")
    try:
        top = ActuatorBoardTop(args.board, args.role, boards,
                               clock_hz=clock_hz or DEFAULT_LINK_CLOCK_HZ,
                               policy=args.policy or "sequential", banks=args.banks,
                               controllers=args.controllers)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    if args.controllers and top.family == "xc6s":
        print(f"note: a {args.role} board with its joint controller may not fit the "
              f"{top.device} (docs/performance.md, \"Distributed boards with their joint "
              "controllers\"); Yosys gives the utilisation and the report says whether it "
              "fits", file=sys.stderr)
    out = args.out or Path("build") / f"{args.board}-{args.role}"
    return _run(top, out, synth_only=args.synth_only, seed=args.seed, router=args.router)


if __name__ == "__main__":
    sys.exit(main())
