"""Handlers baked into the node tier's runtime image, as a user's image has
its own module on the path. Named by ASYA_HANDLER=handlers.process."""

import os
import time


def process(payload):
    """Echoes the payload with the pod's name and HANDLER_VERSION; sleeps
    payload["seconds"] first, and raises when payload["fail"] is set."""
    time.sleep(float(payload.get("seconds", 0)))
    if payload.get("fail"):
        raise ValueError("handler refused %r" % (payload,))
    return {
        "echo": payload,
        "pod": os.environ.get("HOSTNAME", ""),
        "version": os.environ.get("HANDLER_VERSION", ""),
    }


def fan(payload):
    """Yields payload["n"] results, one message each (the flat runtime
    streams a generator's results as they come)."""
    for i in range(int(payload.get("n", 3))):
        yield {"part": i, "of": payload}
