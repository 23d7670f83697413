"""Security regression tests (issue 18): one module per area; each test fails before its fix."""
