"""The autotuning engine behind ``@tilus.autotune`` (see tuner.py for the flow):
key.py (which calls share a winner), identity.py (what stored results depend on),
store.py (the disk store and its lock), build.py (parallel builds), bench.py (timing on
scratch copies), progress.py (progress bars)."""
