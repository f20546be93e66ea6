"""``python -m linkdyn ...``: the ``linkdyn`` command line (:func:`linkdyn.host.cli.main`)."""

import sys

from linkdyn.host.cli import main

if __name__ == "__main__":
    sys.exit(main())
