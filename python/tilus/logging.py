"""The ``tilus`` logger (Tilus 0.2's ``tilus.logging``): what tilus reports as it works, such
as each autotuning decision (INFO: the configuration chosen for a key, how, and its time)
and, on ``tilus.launch``, why a kernel first takes an unaligned build (INFO: the
misaligned pointer or the runtime extent that is not a multiple of 16, by parameter
name; the views that use it move global memory element by element). Silent unless enabled::

    tilus.logging.init_logging("INFO")   # a stream handler on the "tilus" logger
    tilus.logging.set_logging_level("DEBUG")
"""

from __future__ import annotations

import logging

LOGGER_NAME = "tilus"
_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING,
           "ERROR": logging.ERROR, "CRITICAL": logging.CRITICAL}


def init_logging(level: str = "INFO") -> None:
    """Print the tilus logger's records (to stderr) at `level` and above; only tilus's, not
    propagated to the root logger. Calling it again changes the level."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.propagate = False
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
        logger.addHandler(handler)
    set_logging_level(level)


def set_logging_level(level: str) -> None:
    """The tilus logger's level by name (DEBUG, INFO, WARNING, ERROR, CRITICAL)."""
    if level.upper() not in _LEVELS:
        raise ValueError(f"set_logging_level: unknown level {level!r}; one of {sorted(_LEVELS)}")
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(_LEVELS[level.upper()])
    for handler in logger.handlers:
        handler.setLevel(_LEVELS[level.upper()])


def get_logger(name: str = LOGGER_NAME):
    """The tilus logger or one of its children (``"tilus.autotune"``)."""
    if name != "__main__" and name != LOGGER_NAME and not name.startswith(LOGGER_NAME + "."):
        raise ValueError(f"get_logger: the name {name!r} must be 'tilus' or start with 'tilus.'")
    return logging.getLogger(name)
