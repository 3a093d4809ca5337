"""Progress bars of a tuning: ``[Building] matmul_v5-4096-14336: 192/192`` then
``[Tuning] ...``. tqdm draws them; without tqdm, or with ``tilus.option.progress(False)``
/ ``TILUS_PROGRESS=0``, nothing is printed."""

from __future__ import annotations

from tilus import option


class Progress:
    def __init__(self, description: str, total: int):
        self._bar = None
        self._done = 0
        if not option.get_progress():
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self._bar = tqdm(total=total, desc=description, leave=True, dynamic_ncols=True)

    def advance_to(self, done: int):
        if self._bar is not None and done > self._done:
            self._bar.update(done - self._done)
        self._done = max(self._done, done)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
