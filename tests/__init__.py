"""mcpkit's test suite. A package so that every test file, and every helper script, imports the
shared harness the same way: ``from tests.helpers.wire import StdioPeer``."""
