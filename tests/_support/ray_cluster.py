"""A real Ray cluster of two simulated nodes for the engine tests, on the loopback only.

Every node and the driver bind 127.0.0.1 (no test traffic leaves 127.0.0.0/8); ``RAY_TMPDIR`` is a short
temporary path (Ray's socket paths must stay under the kernel's 107-byte limit); token authentication,
the dashboard and usage stats are off; each node has one CPU and a small object store, so the cluster
fits a shared 2-core machine.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LOOPBACK = "127.0.0.1"
#: Each node's object store: the engine moves only shard records through it.
OBJECT_STORE_BYTES = 80 * 1024 * 1024
_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
    # Ray turns a loopback address into the machine's own IP ("reachable from other nodes") unless cluster
    # mode is off: with it off every address stays 127.0.0.1 (two_node_cluster still starts two raylets).
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # numba's cache stays where the driver's is; workers must not each JIT the kernels again
    "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", ""),
}


def _node_args(**extra: Any) -> dict[str, Any]:
    return {
        "num_cpus": 1,
        "node_ip_address": LOOPBACK,
        "object_store_memory": OBJECT_STORE_BYTES,
        "include_dashboard": False,
        **extra,
    }


#: The fault the workers carry (``bridgepack._faults``): kill the first worker past a task's "shard" point (a
#: chunk spooled in phase 1, a row group written in phase 2), once, when a test deletes :func:`fault_file`
#: (it exists, disarmed, from the start).
WORKER_FAULT = "shard:1:kill"


def fault_file(tmp: str) -> str:
    return os.path.join(tmp, "worker-fault-fired")


def workdir(tmp: str) -> str:
    """The nodes' working directory, so their workers' (empty until a test writes there): a relative path a
    driver started here passes to a task means the same file on the workers, as for a reader who runs
    ``ray start`` and ``bridgepack pack`` in one directory (docs/scale.md runs its commands here)."""
    return os.path.join(tmp, "work")


@contextmanager
def two_node_cluster() -> Iterator[tuple[Any, str]]:
    """Start the head and one more node, connect this process as the driver; yields the cluster and its
    temporary directory. Always shuts everything down and restores the environment."""
    if (
        "ray" in sys.modules
    ):  # its environment is read once, at import: a cluster now would not be on loopback
        raise RuntimeError("ray was imported in this process before two_node_cluster set its environment")
    tmp = tempfile.mkdtemp(prefix="sp-ray-", dir="/tmp")
    saved = {k: os.environ.get(k) for k in [*_ENV, "RAY_TMPDIR", "BRIDGEPACK_FAULT", "BRIDGEPACK_FAULT_ONCE"]}
    os.environ.update({k: v for k, v in _ENV.items() if v})
    os.environ["RAY_TMPDIR"] = tmp
    # the raylets' workers inherit these; the driver never passes the "shard" point
    open(fault_file(tmp), "w").close()
    os.environ["BRIDGEPACK_FAULT"] = WORKER_FAULT
    os.environ["BRIDGEPACK_FAULT_ONCE"] = fault_file(tmp)
    os.makedirs(os.path.join(tmp, "ray"))
    os.makedirs(workdir(tmp))
    cwd = os.getcwd()
    cluster = None
    import ray  # after the environment: Ray reads it when it is imported
    from ray.cluster_utils import Cluster

    try:
        os.chdir(workdir(tmp))  # the nodes start, and later start their workers, there
        try:
            cluster = Cluster(initialize_head=True, head_node_args=_node_args())
            cluster.add_node(**_node_args())
        finally:
            os.chdir(cwd)
        ray.init(address=cluster.address, _node_ip_address=LOOPBACK, log_to_driver=False)
        for key in ("BRIDGEPACK_FAULT", "BRIDGEPACK_FAULT_ONCE"):  # the raylets have them; no other test may
            _restore(key, saved.pop(key))
        yield cluster, tmp
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        for key, value in saved.items():
            _restore(key, value)
        shutil.rmtree(tmp, ignore_errors=True)


def _restore(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value
