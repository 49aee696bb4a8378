"""The isolation tests/conftest.py gives every test that starts no Ray: the cluster address Ray would join is read
from a private folder, so a cluster the other pytest-xdist worker's Ray tests start is never joined by mistake."""

from __future__ import annotations

import os
from pathlib import Path

from boosttune.execution.ray import running_cluster


def test_a_test_without_ray_reads_cluster_addresses_from_a_private_folder_only():
    private = Path(os.environ["RAY_TMPDIR"])
    assert private.is_dir() and private != Path("/tmp")
    assert running_cluster() is None  # nothing to join, whatever runs beside this test
    address_file = private / "ray" / "ray_current_cluster"  # where `ray start` would write it under RAY_TMPDIR
    address_file.parent.mkdir(exist_ok=True)
    address_file.write_text("127.0.0.1:1")
    try:
        assert running_cluster() == "127.0.0.1:1"  # Ray reads its address there: the folder is what it consults
    finally:
        address_file.unlink()
