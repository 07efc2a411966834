"""Real inputs: readers that turn published cluster traces into snapshots."""
