"""The ECP5 floorplan (linkdyn.boards.floorplan): sites, grouping by node, regions, errors,
and the build's ``--floorplan`` path with stand-in tools.

The site table is checked against the device's resource counts (nextpnr-ecp5's utilisation
report of the LFE5U-85F: 156 MULT18X18D, 208 DP16KD, :data:`DEVICE_CAPACITY`) and the bel
names nextpnr gave a placement of a netlist that used every one of them. With
``LINKDYN_LONG=1`` nextpnr itself places a floorplanned synthetic netlist and must put every
pinned cell on its site.
"""

import json
import os
import subprocess

import pytest

from linkdyn.boards import BOARDS
from linkdyn.boards import build as build_module
from linkdyn.boards.build import build
from linkdyn.boards.floorplan import (
    FloorplanError, apply_floorplan, device_sites, hard_cells, node_of, plan_floorplan,
    plot_floorplan, regions,
)
from linkdyn.boards.toolchain import DEVICE_CAPACITY, find_tool
from support import stand_in_tools

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

#: Bel names from nextpnr-ecp5 0.11's placement of 156 MULT18X18D and 208 DP16KD cells on the
#: LFE5U-85F (its ``--write`` output, NEXTPNR_BEL), a sample from each row's ends and middle.
NEXTPNR_BELS = {
    "MULT18X18D": ["X4/Y10/MULT18_0", "X5/Y34/MULT18_1", "X8/Y58/MULT18_4", "X9/Y10/MULT18_5",
                   "X62/Y34/MULT18_4", "X69/Y34/MULT18_0", "X119/Y58/MULT18_5",
                   "X100/Y10/MULT18_4", "X101/Y58/MULT18_5"],
    "DP16KD": ["X4/Y22/EBR0", "X6/Y46/EBR1", "X10/Y70/EBR3", "X10/Y82/EBR3", "X64/Y46/EBR3",
               "X69/Y70/EBR0", "X100/Y22/EBR2", "X120/Y82/EBR3"],
}


def _synthetic_netlist(nodes, node_mults=4, controller_mults=4, node_brams=4,
                       controller_brams=2, extra_brams=3):
    """A Yosys-JSON-shaped netlist with the hard cells the 6-node controlled chain has, named
    as Yosys names them after flattening the board top (plus fabric cells)."""
    cells = {}
    for i in range(nodes):
        for name in ("pp_hh", "pp_hl", "pp_lh", "pp_ll")[:node_mults]:
            cells[f"core.chain.chain.node{i}.mac.{name}_TRELLIS_FF_Q_DI_MULT18X18D_P0"] = \
                "MULT18X18D"
        for k in range(controller_mults):
            cells[f"core.chain.controller{i}.mult{k}_MULT18X18D_P0"] = "MULT18X18D"
        for name in ("registers_a.0.0", "registers_b.0.0", "sincos.memory.0.0",
                     "sincos.memory.0.1")[:node_brams]:
            cells[f"core.chain.chain.node{i}.{name}"] = "DP16KD"
        for k in range(controller_brams):
            cells[f"core.chain.controller{i}.rf.0.{k}"] = "DP16KD"
        cells[f"core.chain.chain.node{i}.alu.sum_LUT4_Z"] = "LUT4"
    for name in ("engine.buffer", "rx_fifo.storage", "tx_fifo.storage")[:extra_brams]:
        cells[f"core.hostlink.{name}.0.0"] = "DP16KD"
    cells["core.hostlink.uart.tx_TRELLIS_FF_Q"] = "TRELLIS_FF"
    return {"creator": "test", "modules": {"top": {
        "attributes": {"top": "00000000000000000000000000000001"}, "ports": {},
        "cells": {name: {"type": cell_type, "parameters": {}, "attributes": {},
                         "port_directions": {}, "connections": {}}
                  for name, cell_type in cells.items()},
        "netnames": {}}}}


# -- the device's sites ---------------------------------------------------------------------------

def test_lfe5u_85f_sites_are_as_many_as_the_device_has_and_distinct():
    sites = device_sites("LFE5U-85F")
    capacity = DEVICE_CAPACITY["LFE5U-85F"]
    assert sum(s.cell_type == "MULT18X18D" for s in sites) == capacity["dsps"] == 156
    assert sum(s.cell_type == "DP16KD" for s in sites) == capacity["brams"] == 208
    assert len({s.name for s in sites}) == len(sites)
    assert all(s.name.startswith(f"X{s.x}/Y{s.y}/") for s in sites)


def test_lfe5u_85f_sites_carry_the_bel_names_nextpnr_uses():
    names = {(s.cell_type, s.name) for s in device_sites()}
    for cell_type, bels in NEXTPNR_BELS.items():
        for bel in bels:
            assert (cell_type, bel) in names


def test_unknown_device_is_refused():
    with pytest.raises(FloorplanError, match="No site table for device 'LFE5U-25F'"):
        device_sites("LFE5U-25F")


# -- grouping by node -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, node", [
    ("core.chain.chain.node2.mac.pp_hh_TRELLIS_FF_Q_DI_MULT18X18D_P0", 2),
    ("core.chain.controller5.rf.0.0", 5),
    ("core.chain.chain.forward3.storage.0.0", 3),
    ("core.chain.chain.node12.sincos.memory.0.1", 12),
    ("core.hostlink.rx_fifo.storage.0.0", None),
    ("core.chain.chain.nodes.x", None),            # no index: not a node's
    ("core.chain.chain.node1x.y", None),           # not a whole path element
    ("node4", 4),
])
def test_node_of_reads_the_node_index_of_a_hierarchical_name(name, node):
    assert node_of(name) == node


def test_node_of_needs_a_string():
    with pytest.raises(TypeError, match="Cell name must be a string, not 3"):
        node_of(3)


def test_hard_cells_are_the_multipliers_and_block_rams_of_the_top():
    netlist = _synthetic_netlist(2)
    cells = hard_cells(netlist)
    assert set(cells.values()) == {"MULT18X18D", "DP16KD"}
    assert len(cells) == 2 * (4 + 4 + 4 + 2) + 3
    with pytest.raises(FloorplanError, match="no module 'board'"):
        hard_cells(netlist, top="board")


# -- regions and the plan -------------------------------------------------------------------------

def test_six_regions_are_a_serpentine_of_two_bands_of_three():
    sites = device_sites()
    centres = regions(6, sites)
    xs = sorted({round(x, 2) for x, _ in centres})
    ys = sorted({round(y, 2) for _, y in centres})
    assert len(xs) == 3 and len(ys) == 2
    step_x, step_y = xs[1] - xs[0], ys[1] - ys[0]
    for (xa, ya), (xb, yb) in zip(centres, centres[1:]):   # neighbours share an edge
        assert (round(abs(xa - xb), 6), round(abs(ya - yb), 6)) in \
            {(round(step_x, 6), 0.0), (0.0, round(step_y, 6))}
    assert centres[0][1] < centres[3][1] and centres[0][0] < centres[1][0] < centres[2][0]


def test_region_count_must_be_positive():
    with pytest.raises(ValueError, match="Region count must be a positive integer, not 0"):
        regions(0, device_sites())


def _bounds(sites, count):
    """Each region's box (x0, x1, y0, y1) of the serpentine grid of :func:`regions`."""
    centres = regions(count, sites)
    xs, ys = sorted({x for x, _ in centres}), sorted({y for _, y in centres})
    half_x = (xs[1] - xs[0]) / 2 if len(xs) > 1 else float("inf")
    half_y = (ys[1] - ys[0]) / 2 if len(ys) > 1 else float("inf")
    return [(x - half_x, x + half_x, y - half_y, y + half_y) for x, y in centres]


def test_every_nodes_hard_cells_get_distinct_legal_sites_in_its_region():
    sites = device_sites()
    netlist = _synthetic_netlist(6)
    cells = hard_cells(netlist)
    placement = plan_floorplan(cells, sites)
    legal = {s.name: s for s in sites}
    node_cells = {name for name in cells if node_of(name) is not None}
    assert set(placement) == node_cells                    # the host link's are not pinned
    assert len({s.name for s in placement.values()}) == len(placement)
    boxes = _bounds(sites, 6)
    for name, site in placement.items():
        assert legal[site.name] == site and site.cell_type == cells[name]
        x0, x1, y0, y1 = boxes[node_of(name)]
        assert x0 <= site.x <= x1 and y0 <= site.y <= y1, (name, site)


def test_a_node_with_more_cells_than_its_region_has_fills_outwards_without_collision():
    # Two nodes of 60 multipliers each: more than one region's rows hold, 120 of 156 in all.
    cells = {f"core.chain.chain.node{i}.m{k}": "MULT18X18D" for i in (0, 1) for k in range(60)}
    placement = plan_floorplan(cells, device_sites())
    assert len(placement) == 120 and len({s.name for s in placement.values()}) == 120


def test_more_cells_than_the_device_has_sites_is_refused_with_the_counts():
    cells = {f"core.chain.chain.node{k % 6}.m{k}": "MULT18X18D" for k in range(157)}
    with pytest.raises(FloorplanError,
                       match="The netlist has 157 MULT18X18D cells, the device 156 "
                             "MULT18X18D sites"):
        plan_floorplan(cells, device_sites())


def test_a_cell_type_the_device_has_no_sites_for_is_refused():
    cells = {"core.chain.chain.node0.m": "MULT18X18D"}
    only_brams = [s for s in device_sites() if s.cell_type == "DP16KD"]
    with pytest.raises(FloorplanError, match="1 MULT18X18D cells, the device 0 MULT18X18D"):
        plan_floorplan(cells, only_brams)


def test_a_node_beyond_the_region_count_is_refused():
    cells = hard_cells(_synthetic_netlist(3))
    with pytest.raises(FloorplanError, match="belongs to node 2, but the floorplan has 2 "
                                             "regions"):
        plan_floorplan(cells, device_sites(), nodes=2)


def test_apply_floorplan_writes_the_bel_attributes_into_the_netlist(tmp_path):
    path = tmp_path / "top.json"
    path.write_text(json.dumps(_synthetic_netlist(6)))
    result = apply_floorplan(path, report_path=tmp_path / "floorplan.json")
    cells = json.loads(path.read_text())["modules"]["top"]["cells"]
    pinned = {name: cell["attributes"]["BEL"] for name, cell in cells.items()
              if "BEL" in cell["attributes"]}
    assert pinned == result["pinned"] and len(pinned) == 6 * 14
    assert result["unpinned"] == sorted(f"core.hostlink.{n}.0.0" for n in (
        "engine.buffer", "rx_fifo.storage", "tx_fifo.storage"))
    assert json.loads((tmp_path / "floorplan.json").read_text()) == result
    assert result["nodes"] == 6 and len(result["centres"]) == 6


def test_apply_floorplan_can_leave_the_netlist_as_it_is(tmp_path):
    path, pinned = tmp_path / "top.json", tmp_path / "pinned.json"
    path.write_text(json.dumps(_synthetic_netlist(2)))
    result = apply_floorplan(path, output_path=pinned)
    assert json.loads(path.read_text()) == _synthetic_netlist(2)
    cells = json.loads(pinned.read_text())["modules"]["top"]["cells"]
    assert {name: cells[name]["attributes"]["BEL"] for name in result["pinned"]} == \
        result["pinned"]


def test_plot_floorplan_draws_a_png(tmp_path):
    path = tmp_path / "top.json"
    path.write_text(json.dumps(_synthetic_netlist(6)))
    plot_floorplan(apply_floorplan(path), tmp_path / "floorplan.png")
    assert (tmp_path / "floorplan.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the build's --floorplan path -----------------------------------------------------------------

FAKE_YOSYS = """\
import json, os, shutil, sys
args = sys.argv[1:]
if "-V" in args:
    print("Yosys 0.0 (stand-in)"); sys.exit(0)
assert "top.ys" in args, args
shutil.copy(os.environ["FAKE_NETLIST"], "top.json")
"""

FAKE_NEXTPNR = """\
import json, os, sys
args = sys.argv[1:]
if "--version" in args:
    print("nextpnr-0.0 (stand-in)"); sys.exit(0)
netlist = json.load(open(args[args.index("--json") + 1]))
bels = {name: cell["attributes"]["BEL"] for name, cell in
        netlist["modules"]["top"]["cells"].items() if "BEL" in cell["attributes"]}
json.dump(bels, open(os.environ["FAKE_BELS"], "w"))
used = {"TRELLIS_COMB": 30000, "TRELLIS_FF": 17000, "MULT18X18D": 48, "DP16KD": 39}
json.dump({"fmax": {"$glbnet$clk": {"achieved": 101.0, "constraint": 100.0}},
           "utilization": {k: {"used": v, "available": 1000} for k, v in used.items()}},
          open(args[args.index("--report") + 1], "w"))
open(args[args.index("--textcfg") + 1], "w").write(".device LFE5U-85F\\n")
"""

def test_build_with_floorplan_pins_the_netlist_nextpnr_reads(tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    write = stand_in_tools.write_tool
    monkeypatch.setenv("YOSYS", write(tools, "yosys", FAKE_YOSYS))
    monkeypatch.setenv("NEXTPNR_ECP5", write(tools, "nextpnr-ecp5", FAKE_NEXTPNR))
    monkeypatch.setenv("ECPPACK", write(tools, "ecppack", stand_in_tools.ECPPACK))
    netlist = tmp_path / "netlist.json"
    netlist.write_text(json.dumps(_synthetic_netlist(2)))
    monkeypatch.setenv("FAKE_NETLIST", str(netlist))
    monkeypatch.setenv("FAKE_BELS", str(tmp_path / "bels.json"))
    out = tmp_path / "ulx3s"
    lines = []
    report = build(BOARDS["ulx3s"](2, chain="fake"), out=out, floorplan=True,
                   progress=lines.append)
    seen = json.loads((tmp_path / "bels.json").read_text())
    expected = {name: site.name for name, site in
                plan_floorplan(hard_cells(_synthetic_netlist(2)), device_sites()).items()}
    assert seen == expected and len(seen) == 2 * 14
    assert json.loads((out / "top.json").read_text()) == _synthetic_netlist(2)   # Yosys's own
    assert report["floorplan"] is True and "--floorplan" in report["command"]
    assert report["fmax_mhz"] == 101.0 and report["exit_status"] == 0
    assert any(line.startswith("floorplan: 28 multipliers and block RAMs pinned in 2 regions")
               for line in lines)
    assert "floorplan        each node's" in (out / "report.txt").read_text()


@pytest.mark.parametrize("argv", [
    ["--board", "mimas", "--floorplan"],
    ["--board", "ulx3s", "--floorplan", "--synth-only"],
    ["--board", "ulx3s", "--distributed", "--floorplan"],
])
def test_floorplan_outside_an_ecp5_place_and_route_is_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_module.main(argv)
    assert exit_info.value.code == 2
    assert "--floorplan pins cells for nextpnr-ecp5" in capsys.readouterr().err


@pytest.mark.skipif(not os.environ.get("LINKDYN_LONG"),
                    reason="a real nextpnr run (LINKDYN_LONG=1)")
def test_nextpnr_places_every_pinned_cell_on_its_site(tmp_path):
    nextpnr = find_tool("nextpnr-ecp5")
    if nextpnr is None:
        pytest.skip("nextpnr-ecp5 not installed")
    path = tmp_path / "top.json"
    path.write_text(json.dumps(_synthetic_netlist(6)))
    result = apply_floorplan(path)
    subprocess.run([*nextpnr, "--85k", "--package", "CABGA381", "--speed", "6", "--json",
                    "top.json", "--write", "placed.json", "--no-route", "--seed", "1",
                    "--log", "nextpnr.log"], cwd=tmp_path, check=True, capture_output=True)
    placed = json.loads((tmp_path / "placed.json").read_text())["modules"]["top"]["cells"]
    assert {name: placed[name]["attributes"]["NEXTPNR_BEL"] for name in result["pinned"]} == \
        result["pinned"]
    assert f"Placed {len(result['pinned'])} cells based on constraints" in \
        (tmp_path / "nextpnr.log").read_text()
