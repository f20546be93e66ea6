"""Stand-in tools for the board builds' tests. The stand-in Yosys answers linkdyn's Spartan-6
synthesis run (``synth_xilinx -family xc6s`` with ``tee -q -o FILE stat -json``) with the cell
counts of the ``FAKE_CELLS`` environment variable, so a ``--synth-only`` build runs end to end
in a second and its report, fit verdict and summary can be checked against the counts given;
:data:`ECPPACK` writes a placeholder bitstream; :func:`write_tool` installs any of them."""

import json
import os
import stat
import sys
import textwrap

#: The stand-in's Python source (run with this interpreter).
SOURCE = """\
import json, os, re, sys
args = sys.argv[1:]
if "-V" in args:
    print("Yosys 0.0 (stand-in)"); sys.exit(0)
script = args[args.index("-p") + 1]
assert "synth_xilinx -family xc6s" in script, script
out = re.search(r"tee -q -o (\\S+) stat -json", script).group(1)
cells = json.loads(os.environ["FAKE_CELLS"])
json.dump({"design": {"num_cells_by_type": cells}, "modules": {}}, open(out, "w"))
"""

#: A stand-in ecppack: writes a placeholder ``--bit`` file.
ECPPACK = """\
import sys
args = sys.argv[1:]
if "--version" in args:
    print("ecppack stand-in"); sys.exit(0)
open(args[args.index("--bit") + 1], "wb").write(b"bitstream")
"""


def write_tool(directory, name, source):
    """Write the stand-in tool ``name`` (Python ``source``, dedented) into ``directory`` as
    an executable run by this interpreter; return its path as a string."""
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(source))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def install(tmp_path, monkeypatch, cells=None):
    """Put the stand-in Yosys in ``tmp_path/tools``, name it in ``YOSYS``, put that folder
    first in a ``PATH`` of the system's folders only (no real Yosys or ISE is found), and
    set ``FAKE_CELLS`` to ``cells`` (a ``{cell type: count}`` dict) if given; return its
    path."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    yosys = tools / "yosys"
    yosys.write_text(f"#!{sys.executable}\n" + SOURCE)
    yosys.chmod(yosys.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("YOSYS", str(yosys))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    if cells is not None:
        monkeypatch.setenv("FAKE_CELLS", json.dumps(cells))
    return yosys
