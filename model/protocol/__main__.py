"""``python -m linkdyn.model.protocol --markdown``: print ``docs/protocol.md``."""

import sys

from .document import main

sys.exit(main())
