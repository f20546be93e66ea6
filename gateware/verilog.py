"""Verilog export of a gateware component (Amaranth's Verilog back end, via its built-in Yosys)."""

from pathlib import Path

from amaranth.back import verilog

__all__ = ["export_verilog"]


def export_verilog(component, name, path):
    """Write a component as Verilog.

    Parameters
    ----------
    component : amaranth.lib.wiring.Component
        The design; its signature's ports become the module ports.
    name : str
        Verilog module name.
    path : path-like
        Output file; parent folders are created.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(verilog.convert(component, name=name, emit_src=False))
    return path
