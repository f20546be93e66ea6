"""A partial floorplan of an ECP5 build: each node's hard blocks pinned to one region.

A LinkDyn chain with joint controllers on the ULX3S uses twelve units of multipliers
(MULT18X18D) and block RAMs (DP16KD), a node and its controller per joint; left to itself,
nextpnr spreads them over the chip's multiplier and block-RAM rows and pulls their fabric
apart (docs/performance.md, "ULX3S, 6 nodes + controllers"). This module pins them instead:
it reads the Yosys JSON netlist, groups the hard cells by the node index in their hierarchical
names (``core.chain.chain.node3.mac...``, ``core.chain.controller3...``; the mailboxes
``forward3`` / ``backward3`` between nodes 3 and 4 go with node 3), cuts the device into one
region per node, the regions in a serpentine order so that the chain's neighbours are
neighbouring regions, and gives every cell of a node the free site of its type nearest its
region's centre, written as the ``BEL`` attribute nextpnr honours (nextpnr's
``docs/constraints.md``: "setting the Bel attribute on the cell to the name of the Bel").
Cells of no node (the host link's FIFOs) and all fabric are left to the placer.

``python -m linkdyn.boards.build --board ulx3s ... --floorplan`` applies it between Yosys and
nextpnr; ``python -m linkdyn.boards.floorplan top.json [--plot floorplan.png]`` does it to a
netlist by hand (and draws it).

The sites are the LFE5U-85F's, as nextpnr-ecp5 0.11 names its bels (``X<x>/Y<y>/<bel>``),
read from a placement of a netlist that used every multiplier and block RAM of the device.
"""

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Site", "FloorplanError", "FLOORPLAN_CELL_TYPES", "device_sites", "node_of",
           "hard_cells", "regions", "plan_floorplan", "apply_floorplan", "plot_floorplan",
           "main"]

#: Cell types the floorplan pins (the device's column blocks); everything else is fabric.
FLOORPLAN_CELL_TYPES = ("MULT18X18D", "DP16KD")

#: A node's index in a hierarchical cell name: a path element ``node<i>``, ``controller<i>``
#: (its joint controller), ``forward<i>``/``backward<i>`` (the mailboxes from node i to i+1)
#: or ``result<i>`` (the chain's result memory of node i).
_NODE_ELEMENT = re.compile(r"(?:^|\.)(?:node|controller|forward|backward|result)(\d+)(?=\.|$)")


class FloorplanError(ValueError):
    """The floorplan cannot be made: the netlist has more hard cells of a type than the
    device has sites, or names a node the floorplan has no region for."""


@dataclass(frozen=True)
class Site:
    """One site (bel) of the device.

    Attributes
    ----------
    name : str
        nextpnr's bel name, ``"X<x>/Y<y>/<bel>"`` (the ``BEL`` attribute's value).
    cell_type : str
        The cell type it takes (``"MULT18X18D"``, ``"DP16KD"``).
    x, y : int
        Its tile's column and row (nextpnr's grid; ``y`` grows downwards).
    """

    name: str
    cell_type: str
    x: int
    y: int


#: LFE5U-85F (nextpnr-ecp5 0.11's chip database): the device has 13 column groups of nine
#: tiles (a gap of two more in the middle), each with four MULT18X18D sites in each of the three
#: multiplier rows and four DP16KD sites in each of the four block-RAM rows; per cell type:
#: the groups' first columns, the rows, and per site of a group its column offset and bel.
_LFE5U_85F = {
    "groups": (4, 13, 22, 31, 40, 49, 58, 69, 78, 87, 96, 105, 114),
    "MULT18X18D": {"rows": (10, 34, 58),
                   "bels": ((0, "MULT18_0"), (1, "MULT18_1"), (4, "MULT18_4"),
                            (5, "MULT18_5"))},
    "DP16KD": {"rows": (22, 46, 70, 82),
               "bels": ((0, "EBR0"), (2, "EBR1"), (4, "EBR2"), (6, "EBR3"))},
}


def _table_sites(table):
    sites = []
    for cell_type in FLOORPLAN_CELL_TYPES:
        for y in table[cell_type]["rows"]:
            for start in table["groups"]:
                for offset, bel in table[cell_type]["bels"]:
                    x = start + offset
                    sites.append(Site(f"X{x}/Y{y}/{bel}", cell_type, x, y))
    return tuple(sorted(sites, key=lambda s: (s.y, s.x, s.name)))


#: Device -> its sites (156 MULT18X18D and 208 DP16KD on the LFE5U-85F, as
#: :data:`~linkdyn.boards.toolchain.DEVICE_CAPACITY` says).
_SITES = {"LFE5U-85F": _table_sites(_LFE5U_85F)}


def device_sites(device="LFE5U-85F"):
    """Return the sites of the floorplanned cell types on a device.

    Parameters
    ----------
    device : str
        The device (only ``"LFE5U-85F"``, the ULX3S 85F's, is tabulated).

    Returns
    -------
    list of Site
        Every MULT18X18D and DP16KD site, sorted by row, column and name.

    Raises
    ------
    FloorplanError
        If the device has no site table.
    """
    if device not in _SITES:
        raise FloorplanError(f"No site table for device {device!r}; the floorplan knows "
                             f"{', '.join(_SITES)}")
    return list(_SITES[device])


def node_of(cell_name):
    """Return the node index a hierarchical cell name belongs to, or None.

    The innermost ``node<i>`` / ``controller<i>`` / ``forward<i>`` / ``backward<i>`` /
    ``result<i>`` path element decides (``core.chain.chain.node2.mac.pp_hh`` -> 2,
    ``core.chain.controller5.ram`` -> 5, ``core.hostlink.rx_fifo.storage`` -> None).

    Parameters
    ----------
    cell_name : str
        A cell name from the Yosys JSON netlist (dot-separated hierarchy after flattening).
    """
    if not isinstance(cell_name, str):
        raise TypeError(f"Cell name must be a string, not {cell_name!r}")
    matches = _NODE_ELEMENT.findall(cell_name)
    return int(matches[-1]) if matches else None


def hard_cells(netlist, top="top"):
    """Return the floorplanned cells of a Yosys JSON netlist.

    Parameters
    ----------
    netlist : dict
        The netlist (``json.load`` of Yosys's ``write_json``).
    top : str
        The top module's name.

    Returns
    -------
    dict
        Cell name -> cell type, for the cells of :data:`FLOORPLAN_CELL_TYPES`.

    Raises
    ------
    FloorplanError
        If the netlist has no module ``top``.
    """
    try:
        cells = netlist["modules"][top]["cells"]
    except (KeyError, TypeError):
        raise FloorplanError(f"The netlist has no module {top!r} with cells (modules: "
                             f"{', '.join(netlist.get('modules', {})) or 'none'})") from None
    return {name: cell["type"] for name, cell in cells.items()
            if cell["type"] in FLOORPLAN_CELL_TYPES}


def regions(count, sites):
    """Return the centres of ``count`` regions of the device, in the chain's order.

    The region grid has ``rows`` bands of sites from top to bottom and ``columns`` across,
    the smallest grid of at least ``count`` regions whose regions are about as wide as tall;
    the regions are numbered in a serpentine (left to right in the first band, right to left
    in the next ...), so regions ``i`` and ``i + 1`` always share an edge.

    Parameters
    ----------
    count : int
        Number of regions (nodes), at least 1.
    sites : list of Site
        The device's sites (their extent is the floorplan's).

    Returns
    -------
    list of (float, float)
        The ``(x, y)`` centre of region ``i``, in tile coordinates.
    """
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"Region count must be a positive integer, not {count!r}")
    x0, x1 = min(s.x for s in sites), max(s.x for s in sites)
    y0, y1 = min(s.y for s in sites), max(s.y for s in sites)
    width, height = x1 - x0 + 1, y1 - y0 + 1
    best = None
    for rows in range(1, count + 1):
        columns = -(-count // rows)
        # Squareness of a region, then fewest empty regions.
        aspect = abs((width / columns) / (height / rows) - 1)
        key = (rows * columns - count > columns - 1, round(aspect, 6), rows * columns)
        if best is None or key < best[0]:
            best = (key, rows, columns)
    _, rows, columns = best
    centres = []
    for i in range(count):
        row, column = divmod(i, columns)
        if row % 2:
            column = columns - 1 - column
        centres.append((x0 + (column + 0.5) * width / columns,
                        y0 + (row + 0.5) * height / rows))
    return centres


def plan_floorplan(cells, sites, nodes=None):
    """Assign every node's hard cells to distinct sites near its region's centre.

    Nodes are taken in order; each cell of a node (in name order, multipliers and block RAMs
    separately) gets the free site of its type nearest (Manhattan distance, ties by the
    site's name) its region's centre, so a node's blocks sit together and fill outwards when
    its region has too few. Cells of no node are not assigned.

    Parameters
    ----------
    cells : dict
        Cell name -> cell type (:func:`hard_cells`).
    sites : list of Site
        The device's sites (:func:`device_sites`).
    nodes : int, optional
        Number of regions (default: one more than the highest node index in the names).

    Returns
    -------
    dict
        Cell name -> :class:`Site`, for every cell with a node index.

    Raises
    ------
    FloorplanError
        If the cells of a type (of all nodes, or the whole netlist) outnumber the device's
        sites of that type, or a cell names a node at or beyond ``nodes``.
    """
    by_type = {}
    for site in sites:
        by_type.setdefault(site.cell_type, []).append(site)
    wanted = {}
    for cell_type in cells.values():
        wanted[cell_type] = wanted.get(cell_type, 0) + 1
    for cell_type, count in sorted(wanted.items()):
        have = len(by_type.get(cell_type, ()))
        if count > have:
            raise FloorplanError(f"The netlist has {count} {cell_type} cells, the device "
                                 f"{have} {cell_type} sites")
    grouped = {}
    for name in sorted(cells):
        node = node_of(name)
        if node is not None:
            grouped.setdefault(node, []).append(name)
    if not grouped:
        return {}
    highest = max(grouped)
    if nodes is None:
        nodes = highest + 1
    elif highest >= nodes:
        raise FloorplanError(f"Cell {grouped[highest][0]!r} belongs to node {highest}, but "
                             f"the floorplan has {nodes} regions (nodes 0 .. {nodes - 1})")
    centres = regions(nodes, sites)
    free = {cell_type: sorted(members, key=lambda s: s.name)
            for cell_type, members in by_type.items()}
    placement = {}
    for node in sorted(grouped):
        cx, cy = centres[node]
        for name in grouped[node]:
            candidates = free[cells[name]]
            site = min(candidates, key=lambda s: (abs(s.x - cx) + abs(s.y - cy), s.name))
            candidates.remove(site)
            placement[name] = site
    return placement


def apply_floorplan(netlist_path, *, output_path=None, device="LFE5U-85F", nodes=None,
                    top="top", report_path=None):
    """Pin the nodes' hard cells of a Yosys JSON netlist (the ``BEL`` attribute).

    Parameters
    ----------
    netlist_path : path-like
        The netlist (``top.json``).
    output_path : path-like, optional
        Where the pinned netlist goes (default: ``netlist_path``, rewritten).
    device : str
        The device (:func:`device_sites`).
    nodes : int, optional
        Number of regions (default: from the cell names).
    top : str
        The top module.
    report_path : path-like, optional
        If given, a JSON file of the assignment: per node its cells and sites, and the cells
        left to the placer.

    Returns
    -------
    dict
        ``{"device", "nodes", "centres", "pinned": {cell: site name}, "unpinned": [cell]}``.

    Raises
    ------
    FloorplanError
        As :func:`plan_floorplan`, :func:`device_sites` and :func:`hard_cells`.
    """
    path = Path(netlist_path)
    netlist = json.loads(path.read_text())
    cells = hard_cells(netlist, top)
    sites = device_sites(device)
    placement = plan_floorplan(cells, sites, nodes)
    module_cells = netlist["modules"][top]["cells"]
    for name, site in placement.items():
        module_cells[name].setdefault("attributes", {})["BEL"] = site.name
    Path(output_path if output_path is not None else path).write_text(json.dumps(netlist))
    count = (max(node_of(name) for name in placement) + 1 if nodes is None and placement
             else nodes or 0)
    result = {
        "device": device, "nodes": count,
        "centres": [[round(x, 2), round(y, 2)] for x, y in regions(count, sites)]
        if count else [],
        "pinned": {name: site.name for name, site in sorted(placement.items())},
        "unpinned": sorted(set(cells) - set(placement)),
    }
    if report_path is not None:
        Path(report_path).write_text(json.dumps(result, indent=2) + "\n")
    return result


def plot_floorplan(result, path):
    """Draw a floorplan (:func:`apply_floorplan`'s result) as a PNG: the device's multiplier
    and block-RAM sites, each pinned one in its node's colour, the regions' centres numbered.

    Parameters
    ----------
    result : dict
        The result of :func:`apply_floorplan` (or its ``floorplan.json``).
    path : path-like
        The PNG to write.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sites = device_sites(result["device"])
    by_name = {s.name: s for s in sites}
    fig, ax = plt.subplots(figsize=(9, 6))
    markers = {"MULT18X18D": "s", "DP16KD": "o"}
    for cell_type, marker in markers.items():
        free = [s for s in sites if s.cell_type == cell_type]
        ax.scatter([s.x for s in free], [s.y for s in free], marker=marker, s=22,
                   facecolors="none", edgecolors="0.75", linewidths=0.6)
    colours = plt.get_cmap("tab10")
    for node in range(result["nodes"]):
        for cell_type, marker in markers.items():
            placed = [by_name[site] for cell, site in result["pinned"].items()
                      if node_of(cell) == node and by_name[site].cell_type == cell_type]
            ax.scatter([s.x for s in placed], [s.y for s in placed], marker=marker, s=26,
                       color=colours(node % 10),
                       label=f"node {node}" if cell_type == "MULT18X18D" else None)
    for node, (x, y) in enumerate(result["centres"]):
        ax.annotate(str(node), (x, y), ha="center", va="center", fontsize=14,
                    fontweight="bold", color=colours(node % 10))
    ax.plot([x for x, _ in result["centres"]], [y for _, y in result["centres"]], "k--",
            linewidth=0.8, label="chain order")
    ax.invert_yaxis()
    ax.set_xlabel("tile column X")
    ax.set_ylabel("tile row Y")
    ax.set_title(f"Floorplan on the {result['device']}: squares MULT18X18D, circles DP16KD "
                 f"(grey: free)", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=8, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    """``python -m linkdyn.boards.floorplan NETLIST [--nodes N]``: pin a netlist in place."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m linkdyn.boards.floorplan",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("netlist", help="Yosys JSON netlist (rewritten in place unless -o)")
    parser.add_argument("-o", "--output", help="write the pinned netlist here instead")
    parser.add_argument("--nodes", type=int, help="number of regions (default: from the "
                        "cell names)")
    parser.add_argument("--device", default="LFE5U-85F")
    parser.add_argument("--report", help="write the assignment to this JSON file")
    parser.add_argument("--plot", help="draw the floorplan into this PNG")
    args = parser.parse_args(argv)
    try:
        result = apply_floorplan(args.netlist, output_path=args.output, device=args.device,
                                 nodes=args.nodes, report_path=args.report)
    except (FloorplanError, OSError, json.JSONDecodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{len(result['pinned'])} cells pinned in {result['nodes']} regions, "
          f"{len(result['unpinned'])} left to the placer")
    if args.plot:
        plot_floorplan(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
