"""Solvers: one algorithm per file, each with init / step / terminate (see `nsjax.loop`)."""

from nsjax.solvers.bmrm import BMRM
from nsjax.solvers.ls_bmrm import LineSearchBMRM
from nsjax.solvers.sublbfgs import SubBFGS, SubLBFGS

__all__ = ["BMRM", "LineSearchBMRM", "SubBFGS", "SubLBFGS"]
