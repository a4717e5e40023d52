"""``python -m aircore.cli``."""

import sys

from aircore.cli import main

sys.exit(main())
