"""Losses as functions of the scores S = X w (see `nsjax.losses.base`)."""

from nsjax.losses.hinge import Hinge
from nsjax.losses.logistic import Logistic
from nsjax.losses.max_affine import MaxAffine

__all__ = ["Hinge", "Logistic", "MaxAffine"]
