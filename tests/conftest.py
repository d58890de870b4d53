"""Tests run in float64 (and smoke-test float32 explicitly)."""

import jax

jax.config.update("jax_enable_x64", True)
