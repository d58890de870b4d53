"""Tests and the `>>>` examples in nsjax/ (``--doctest-modules nsjax``) run in float64;
float32 is smoke-tested explicitly."""

import jax

jax.config.update("jax_enable_x64", True)
