"""The project's benchmark lab. Run a study with ``python -m bench.<name> --help``."""
