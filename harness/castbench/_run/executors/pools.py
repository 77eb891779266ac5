"""How one process runs several trials at once (`ExecutionPlan.pool`): greenlets on the model loop
(`castbench._agents.models.loop.LoopCalls`) or a thread per trial (`Threads`), both with `submit` and
`shutdown(cancel=...)`."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from castbench._agents.models.loop import LoopCalls
from castbench._records.execution import PoolMode

__all__ = ["Threads", "trial_pool"]


class Threads(ThreadPoolExecutor):
    """A thread per trial in flight, shut down as `LoopCalls` is."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(max_workers=concurrency, thread_name_prefix="trial")

    def shutdown(self, cancel: bool = False) -> None:  # type: ignore[override]
        super().shutdown(wait=True, cancel_futures=cancel)


def trial_pool(mode: PoolMode, concurrency: int) -> LoopCalls | Threads:
    """`concurrency` trials at once, as `mode` says."""
    return LoopCalls(concurrency) if mode == "loop" else Threads(concurrency)
