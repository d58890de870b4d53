"""nsjax across hosts: JAX's distributed runtime, then one problem split by rows over the
devices of every host (`Problem.shard`). Run as it is on one host with one process:

    python examples/multihost.py

On N hosts, run it on each with num_processes=N, its own process_id and the first host's
address as coordinator_address (or call jax.distributed.initialize() with no arguments
where a cluster manager such as Slurm sets them).
"""

import os

import jax

# The coordinator: the first host's address and a free port (here this host).
address = os.environ.get("NSJAX_COORDINATOR", "localhost:12355")
jax.distributed.initialize(coordinator_address=address, num_processes=1, process_id=0)

# float64, as nsjax's command line uses: in float32 the default tol (1e-6) is near the
# rounding floor of the bundle phase's certificate, and runs can end `stalled` just above it.
jax.config.update("jax_enable_x64", True)

import nsjax  # noqa: E402

mesh = jax.make_mesh((jax.device_count(),), ("rows",))  # all devices of all hosts
# Every process builds the same problem (loads the whole data, or generates it from the
# same seed); shard places each device's block of rows.
X, y = nsjax.datasets.breast_cancer()
n = X.shape[0] - X.shape[0] % jax.device_count()  # a multiple of the number of devices
prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X[:n],
                     y[:n]).shard(mesh)
sol = nsjax.solve(prob)
print(f"processes {jax.process_count()}, devices {jax.device_count()}: "
      f"J = {float(sol.value):.10f}, certified gap {float(sol.gap):.1e}, "
      f"{nsjax.RESULTS(int(sol.result)).name}")
