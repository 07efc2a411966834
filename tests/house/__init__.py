"""The repository itself: house rules of the source and the tests, deployment manifests, the bundled data."""
