"""``python -m aircli``."""

import sys

from aircli import main

sys.exit(main())
