"""A handler module that takes 6 s to load: its pod must not be Ready
before the runtime serves."""

import time

time.sleep(6)

from handlers import process  # noqa: E402,F401
