"""Solvers: one algorithm per file, each with init / step / terminate (see `nsjax.loop`)."""

from nsjax.solvers.sublbfgs import SubBFGS, SubLBFGS

__all__ = ["SubBFGS", "SubLBFGS"]
