"""mmconvert's version, which run.json and every export record."""

__version__ = "0.1.0"
