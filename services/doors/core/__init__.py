"""What every door shares: the mesh client, one ownership rule, why a run waits."""
