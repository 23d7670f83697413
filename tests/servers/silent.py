"""A stdio "server" that reads everything and never answers (the proxy's connect timeout)."""

import sys

for _line in sys.stdin:
    pass
