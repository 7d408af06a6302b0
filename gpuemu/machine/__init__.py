"""The machine: device -> SMs -> resident blocks -> warps, and their schedulers."""
from .block_scheduler import RoundRobinBlockScheduler  # noqa: F401
from .executor import DEFAULT_BUDGET, MAX_BUDGET, LaunchRun, RunResult  # noqa: F401
from .launch_config import LaunchShape, check_launch, dim3  # noqa: F401
from .warp_scheduler import LooseRoundRobin, get_warp_scheduler  # noqa: F401
