"""Tabulate board builds: the Markdown table of ``docs/performance.md`` from ``report.json``.

Run as ``python -m linkdyn.boards.summary build/ulx3s build/atlys ... [--write-docs
docs/performance.md]``: prints a Markdown table of the builds (board, nodes, chain with its
policy and, when pipelined, its register banks, clock, Fmax, LUTs, FFs, DSPs, block RAMs with
their share of the device, update latency and interval, build time) and, with ``--write-docs``, puts it between the markers
``<!-- boards-table:begin -->`` and ``<!-- boards-table:end -->`` of the file (the text around
the markers is left alone). ``--table NAME`` uses the markers ``<!-- boards-table-NAME:begin
-->`` / ``<!-- boards-table-NAME:end -->`` instead (another table of builds in the same file,
e.g. ``controllers``).
"""

import argparse
import json
import sys
from pathlib import Path

__all__ = ["load_reports", "table", "markers", "write_table", "BEGIN", "END", "main"]

BEGIN = "<!-- boards-table:begin -->"
END = "<!-- boards-table:end -->"


def load_reports(paths):
    """Return the reports of build directories (or ``report.json`` paths), in order.

    Raises
    ------
    FileNotFoundError
        If a directory holds no ``report.json``.
    """
    reports = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            path = path / "report.json"
        reports.append(json.loads(path.read_text()))
    return reports


def _cell(report, key):
    value = report[key]
    return f"{value:,g} ({report['utilisation_percent'][key]:.0f} %)"


def table(reports):
    """Return the Markdown table of a list of reports."""
    lines = [
        "| board | device | nodes | chain | clock [MHz] | Fmax [MHz] | LUTs | FFs | DSPs "
        "| BRAM 18 Kb | fits | latency / interval [cycles] | status | build [s] |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|---:|",
    ]
    for r in reports:
        fmax = "-" if r["fmax_mhz"] is None else f"{r['fmax_mhz']:.1f}"
        cycles = (f"{r['update_latency_cycles']} / {r['update_interval_cycles']}"
                  if r["update_latency_cycles"] is not None else "-")
        if r["cycles_source"].startswith("model schedule"):
            cycles += " (schedule)"
        # A pipelined build says its register banks (reports before the banks were chosen
        # have no "banks": they had the default 4).
        banks = (f", {r['banks']} banks" if r.get("policy") == "pipelined" and r.get("banks")
                 else "")
        chain = {"fake": "FakeChain (stand-in)",
                 "linkdyn": f"LinkDynChain ({r.get('policy') or 'sequential'}{banks})"}.get(
                     r["chain"], r["chain"])
        if r.get("controllers"):
            chain = f"LinkDynChain + controllers ({r.get('policy') or 'sequential'})"
        if r.get("distributed"):
            d = r["distributed"]
            chain = (f"actuator board, {d['role']}"
                     + (f" of {d['boards']}" if d["boards"] else "")
                     + (" + controller" if r.get("controllers") else "")
                     + (f", pipelined{banks}" if r.get("policy") == "pipelined" else ""))
        lines.append(
            f"| {r['title']} | {r['part']} | {r['nodes']} | {chain} | {r['clock_mhz']:g} | "
            f"{fmax} | {_cell(r, 'luts')} | {_cell(r, 'ffs')} | {_cell(r, 'dsps')} | "
            f"{_cell(r, 'brams')} | {'yes' if r['fits'] else 'NO'} | {cycles} | "
            f"{r['status']} | {r['build_seconds']:g} |")
    return "\n".join(lines)


def markers(name=None):
    """Return the ``(begin, end)`` markers of the table ``name`` (None: :data:`BEGIN`,
    :data:`END`)."""
    if name is None:
        return BEGIN, END
    return f"<!-- boards-table-{name}:begin -->", f"<!-- boards-table-{name}:end -->"


def write_table(path, text, name=None):
    """Replace the text between the markers of table ``name`` (:func:`markers`) in a file.

    Raises
    ------
    ValueError
        If the file lacks the markers.
    """
    begin, finish = markers(name)
    path = Path(path)
    content = path.read_text()
    start, end = content.find(begin), content.find(finish)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no '{begin}' ... '{finish}' markers")
    path.write_text(content[:start + len(begin)] + "\n" + text + "\n" + content[end:])


def main(argv=None):
    """Command line: print (and optionally write) the table."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.boards.summary",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="build directories or report.json files")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="put the table between the boards-table markers of this file")
    parser.add_argument("--table", metavar="NAME",
                        help="use the markers of the table NAME (boards-table-NAME:begin/end)")
    args = parser.parse_args(argv)
    text = table(load_reports(args.builds))
    print(text)
    if args.write_docs:
        write_table(args.write_docs, text, args.table)
        print(f"\nwrote the table into {args.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
