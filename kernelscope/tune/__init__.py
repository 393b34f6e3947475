"""``kscope tune``: search spaces, workers and executors, the store, the writers."""
