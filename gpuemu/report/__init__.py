"""Reports of a launch for people: counter tables, the annotated source view,
pictures and one self-contained HTML page (`launch.report()`, `gpuemu run --report`)."""
from .launch_report import Report

__all__ = ["Report"]
