#!/usr/bin/env python3
"""Asya actor runtime: serves the user's handler over a Unix socket."""
import sys

if __name__ == "__main__":
    sys.exit("asya_runtime: not implemented yet")
