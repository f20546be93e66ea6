"""A distributed board core as separate Verilog modules, one per board, in one simulation.

:func:`distributed_board_verilog` exports, each as its own Verilog module:

- ``linkdyn_host``: board 0's host link (:class:`~linkdyn.gateware.hostlink.HostLink`: UART,
  FIFOs, protocol engine with ``ProtocolSpec(boards=n)``), the register bus as its ports;
- ``linkdyn_actuator_base``, ``linkdyn_actuator_middle``, ``linkdyn_actuator_last``: the
  actuator board cores (:class:`~linkdyn.gateware.actuator.ActuatorCore` of each role; every
  middle board is an instance of the one middle module, as every middle board runs the same
  bitstream);
- ``linkdyn_line_<h>_<down|up>``: the line models of every hop
  (:class:`~linkdyn.gateware.distributed.LineModel`, each with its own seed);

and a generated top ``linkdyn_board`` that instantiates them and joins the boards' link ports
through the lines as :class:`~linkdyn.gateware.distributed.DistributedChain` does, with the
ports of the single-design export of :class:`~linkdyn.boards.core.BoardCore` (``clk``, ``rst``,
``rx``, ``tx``, ``leds``, ``link_cut``, ``link_noise``), so the simulated board's testbench
and bridge drive it unchanged.
"""

from __future__ import annotations

import re

from amaranth.back import verilog

from linkdyn.gateware.actuator import ActuatorCore, check_policy
from linkdyn.gateware.distributed import LineModel
from linkdyn.gateware.hostlink import HostLink

__all__ = ["distributed_board_verilog", "module_ports"]


def module_ports(text, name):
    """Return ``[(direction, width, port)]`` of module ``name`` in Verilog ``text`` (as Yosys
    writes it: the header lists the ports, ``input``/``output`` lines declare them).

    Raises
    ------
    ValueError
        If the module is not in the text.
    """
    match = re.search(rf"^module {re.escape(name)}\((.*?)\);\n(.*?)^endmodule", text,
                      re.S | re.M)
    if match is None:
        raise ValueError(f"no module {name!r} in the Verilog")
    names = [p.strip() for p in match.group(1).split(",")]
    declared = {}
    for direction, width, port in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\S+);",
                                             match.group(2), re.M):
        declared[port] = (direction, int(width) + 1 if width else 1)
    return [(declared[p][0], declared[p][1], p) for p in names]


def _instance(module, instance, ports, nets):
    """An instance of ``module`` with every port connected to ``nets[port]``."""
    connections = ",\n    ".join(f".{port}({nets[port]})" for _, _, port in ports)
    return f"  {module} {instance} (\n    {connections}\n  );\n"


def distributed_board_verilog(n, *, clock_hz, divisor, fmt=None, bits=2, delay=3, ber=0.0,
                              seed=1, timeout=1 << 16, link_parameters=None,
                              name="linkdyn_board", policy="sequential", banks=None):
    """Return the Verilog of a distributed board core of ``n`` boards, one module per board.

    Parameters
    ----------
    n : int
        Boards (one node each), at least 1.
    clock_hz, divisor : int
        Of the host link's UART (as :class:`~linkdyn.boards.core.BoardCore`).
    fmt, bits, delay, ber, seed, timeout, link_parameters
        As :class:`~linkdyn.gateware.distributed.DistributedChain` (line ``2h`` is hop h
        downstream, ``2h + 1`` upstream, seeds ``seed + 2h`` and ``seed + 2h + 1``).
    name : str
        Name of the top module.
    policy, banks
        Update policy and register banks of every board
        (:class:`~linkdyn.gateware.actuator.ActuatorCore`).

    Returns
    -------
    str
        Every module's Verilog, then the top's.
    """
    hops = max(n - 1, 1)
    parts = []
    policy, banks = check_policy(policy, banks)
    banked = {"banks": banks} if policy == "pipelined" else {}
    host = HostLink(n, clock_hz=clock_hz, divisor=divisor, fmt=fmt, boards=n, **banked)
    host_v = verilog.convert(host, name="linkdyn_host", emit_src=False)
    parts.append(host_v)
    roles = {}
    common = dict(bits=bits, link_parameters=link_parameters,
                  **({"policy": policy, "banks": banks} if policy == "pipelined" else {}))
    roles["base"] = ActuatorCore(fmt, base=True, last=n == 1, nodes=n, timeout=timeout,
                                 **common)
    if n > 2:
        roles["middle"] = ActuatorCore(fmt, base=False, last=False, **common)
    if n > 1:
        roles["last"] = ActuatorCore(fmt, base=False, last=True, **common)
    role_ports = {}
    for role, core in roles.items():
        module = f"linkdyn_actuator_{role}"
        text = verilog.convert(core, name=module, emit_src=False)
        parts.append(text)
        role_ports[role] = module_ports(text, module)
    line_modules = []
    for h in range(n - 1):
        for k, direction in enumerate(("down", "up")):
            module = f"linkdyn_line_{h}_{direction}"
            text = verilog.convert(LineModel(bits=bits, delay=delay, ber=ber,
                                             seed=seed + 2 * h + k),
                                   name=module, emit_src=False)
            parts.append(text)
            line_modules.append((h, direction, module, module_ports(text, module)))
    host_ports = module_ports(host_v, "linkdyn_host")

    top = [f"module {name} (\n  input wire clk,\n  input wire rst,\n  input wire rx,\n"
           f"  output wire tx,\n  output wire [3:0] leds,\n"
           f"  input wire [{hops - 1}:0] link_cut,\n  input wire [{hops - 1}:0] link_noise\n);\n"]
    # The register bus between the host link and board 0: one net per bus port.
    for direction, width, port in host_ports:
        if port.startswith("bus__"):
            top.append(f"  wire [{width - 1}:0] {port};\n")
    nets = {port: port for _, _, port in host_ports}
    nets.update(clk="clk", rst="rst", rx="rx", tx="tx")
    for port in nets:
        if port not in ("clk", "rst", "rx", "tx") and not port.startswith("bus__"):
            raise ValueError(f"unexpected host link port {port!r}")
    top.append(_instance("linkdyn_host", "host", host_ports, nets))
    for k in range(n):
        role = "base" if k == 0 else ("last" if k == n - 1 else "middle")
        ports = role_ports[role]
        nets = {"clk": "clk", "rst": "rst"}
        for direction, width, port in ports:
            if port in nets:
                continue
            net = f"board{k}_{port}"
            if role == "base" and port.startswith("bus__"):
                net = port
            else:
                top.append(f"  wire [{width - 1}:0] {net};\n")
            nets[port] = net
        top.append(_instance(f"linkdyn_actuator_{role}", f"board{k}", ports, nets))
    for h, direction, module, ports in line_modules:
        proximal, distal = f"board{h}", f"board{h + 1}"
        source, sink = ((f"{proximal}_down_tx", f"{distal}_up_rx") if direction == "down"
                        else (f"{distal}_up_tx", f"{proximal}_down_rx"))
        top.append(f"  wire [31:0] line{h}_{direction}_flipped;\n")
        nets = {"clk": "clk", "rst": "rst", "tx": source, "rx": sink,
                "cut": f"link_cut[{h}]", "noise": f"link_noise[{h}]",
                "flipped": f"line{h}_{direction}_flipped"}
        top.append(_instance(module, f"line{h}_{direction}", ports, nets))
    top.append("  assign leds = {board0_busy, |board0_overflow_sticky, 2'b00};\n")
    top.append("endmodule\n")
    return "\n".join(parts) + "\n" + "".join(top)
