"""The package version, importable without importing the package's public names."""

__version__ = "0.1.0"
