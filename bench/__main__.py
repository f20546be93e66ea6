"""Run every benchmark: ``python -m linkdyn.bench [--write-docs docs/performance.md]``.

Each also runs alone, with options of its own (``--help``): ``python -m linkdyn.bench.<name>``
for dynamics, node, chain, hostlink (these four run here), controller, controlled_chain,
local_loop, local_loop_gateware, plant, trees, tree_gateware, link, golden, prismatic,
pipelined_host.
"""

import argparse
import sys

from . import chain, dynamics, hostlink, node


def main(argv=None):
    """Run the dynamics, node, chain and host-link benchmarks in turn; return the worst status."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench",
                                     description=__doc__.splitlines()[0],
                                     epilog=" ".join(__doc__.splitlines()[2:]))
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace each benchmark's section of this Markdown file")
    args = parser.parse_args(argv)
    docs = ["--write-docs", args.write_docs] if args.write_docs else []
    status = 0
    for module, extra in ((dynamics, []), (node, docs), (chain, docs), (hostlink, docs)):
        print(f"== python -m {module.__name__}", flush=True)
        status = max(status, module.main(extra) or 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
