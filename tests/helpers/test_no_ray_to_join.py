"""The isolation tests/conftest.py gives every test process: the cluster address Ray would join is read from a
private folder, so a cluster another pytest-xdist worker, another session or a killed test left running on this
machine is never joined by mistake."""

from __future__ import annotations

import os
from pathlib import Path

from boosttune.execution.ray import running_cluster


def test_the_cluster_address_ray_would_join_is_read_from_this_processs_private_folder():
    private = Path(os.environ["RAY_TMPDIR"])
    assert private.is_dir() and private != Path("/tmp") and os.environ["BOOSTTUNE_TEST_PROCESS"] == str(os.getpid())
    assert running_cluster() is None  # nothing to join, whatever runs beside this test
    address_file = private / "ray" / "ray_current_cluster"  # where `ray start` would write it under RAY_TMPDIR
    address_file.parent.mkdir(exist_ok=True)
    address_file.write_text("127.0.0.1:1")
    try:
        assert running_cluster() == "127.0.0.1:1"  # Ray reads its address there: the folder is what it consults
    finally:
        address_file.unlink()
