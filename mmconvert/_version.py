"""mmconvert's version, which run.json and every export record, and the installed versions of
the libraries it records."""

from functools import lru_cache

__version__ = "0.1.0"


@lru_cache(maxsize=32)
def installed_version(package: str) -> str | None:
    """The installed version of ``package`` (None when it is not installed); read once a
    process."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None
